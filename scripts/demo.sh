#!/usr/bin/env bash
# The demo: a local PostgreSQL with an inventory database, captured into the local topic log.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m headwater.demo "$@"
