#!/usr/bin/env bash
# The test suite: static checks, unit tests, then integration tests against real servers the
# tests start themselves (PostgreSQL on free loopback ports).
set -euo pipefail
cd "$(dirname "$0")/.."
# Test files run in parallel processes (pytest-xdist), a file kept whole on one process so its
# module-scoped servers start once; most tests wait on servers and JVMs rather than the CPU, so
# two processes pay even on two cores.  HEADWATER_TEST_WORKERS=0 runs everything in one.
workers=${HEADWATER_TEST_WORKERS:-$(( $(nproc) > 4 ? 4 : ($(nproc) < 2 ? 2 : $(nproc)) ))}
parallel=()
if [ "$workers" -gt 0 ]; then parallel=(-n "$workers" --dist loadfile); fi
bash scripts/setup.sh --venv-only
.venv/bin/ruff check src tests bench
if [ "${1:-}" = "--unit" ]; then
  # The fast tier: the static checks and the tests that start no server, JVM or Spark session
  # (tests/unit, tests/cli), on the virtual environment alone; a few minutes.
  shift
  .venv/bin/mypy
  exec .venv/bin/python -m pytest -q -p no:cacheprovider "${parallel[@]}" tests/unit tests/cli "$@"
fi
# The type check of src/headwater and tests (cold on a fresh clone: 1-5 min of one core) runs
# beside the set-up's later steps (downloads, compilers), once the virtual environment has its
# packages.
mypy_log=$(mktemp)
.venv/bin/mypy > "$mypy_log" 2>&1 &
mypy_pid=$!
trap 'kill "$mypy_pid" 2>/dev/null || true; rm -f "$mypy_log"' EXIT
bash scripts/setup.sh
if wait "$mypy_pid"; then mypy_ok=1; else mypy_ok=0; fi
trap 'rm -f "$mypy_log"' EXIT
cat "$mypy_log"
[ "$mypy_ok" -eq 1 ]
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 "${parallel[@]}" "$@"
