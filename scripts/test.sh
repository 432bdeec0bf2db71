#!/usr/bin/env bash
# The test suite: static checks, unit tests, then integration tests against real servers the
# tests start themselves (PostgreSQL on free loopback ports).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests bench
.venv/bin/mypy
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 "$@"
