#!/usr/bin/env bash
# Installs what Headwater's demo and tests need, idempotently: PostgreSQL from Debian, a Java
# runtime for Spark, and a virtual environment with the package and its dev/spark extras.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_apt+=(postgresql postgresql-contrib)
command -v java >/dev/null 2>&1 || need_apt+=(default-jre-headless)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing: ${need_apt[*]}; run as root or: sudo apt-get install -y ${need_apt[*]}" >&2
    exit 1
  fi
  echo "installing ${need_apt[*]} from Debian ..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  # Debian starts a cluster on 5432; Headwater runs its own servers on free ports.
  command -v pg_ctlcluster >/dev/null 2>&1 && pg_lsclusters -h 2>/dev/null | while read -r v c _; do
    pg_ctlcluster "$v" "$c" stop 2>/dev/null || true; done
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.headwater-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "installing Python packages into .venv (log: .venv/pip.log) ..."
  if ! { .venv/bin/pip install --upgrade pip && .venv/bin/pip install -e ".[dev,spark]"; } \
      > .venv/pip.log 2>&1; then
    tail -n 40 .venv/pip.log >&2
    exit 1
  fi
  touch "$stamp"
fi
