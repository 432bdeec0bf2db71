#!/usr/bin/env bash
# The test suite: static checks, unit tests, then integration tests against real servers the
# tests start themselves (PostgreSQL on free loopback ports).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests bench
.venv/bin/mypy
# Test files run in parallel processes (pytest-xdist), a file kept whole on one process so its
# module-scoped servers start once; most tests wait on servers and JVMs rather than the CPU, so
# two processes pay even on two cores.  HEADWATER_TEST_WORKERS=0 runs everything in one.
workers=${HEADWATER_TEST_WORKERS:-$(( $(nproc) > 4 ? 4 : ($(nproc) < 2 ? 2 : $(nproc)) ))}
parallel=()
if [ "$workers" -gt 0 ]; then parallel=(-n "$workers" --dist loadfile); fi
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 "${parallel[@]}" "$@"
