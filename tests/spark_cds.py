"""A class-data archive of the Spark driver's JVM for the tests (`python -m tests.spark_cds`,
run by scripts/setup.sh): the JVM then maps the classes a session start loads instead of
reading, verifying and linking them from pyspark's jars again.  The suite starts a Spark driver
JVM dozens of times (every `headwater pipeline` it runs, every session); measured on the loaded
2-core CI machine, a session start and a first query took 11.6 s of the JVM's CPU with the
archive against 18.9-20.9 s without.  tests/conftest.py passes it to every driver when it
exists; a JVM or jar set it no longer matches just ignores it (silently: `-Xlog:cds=off`), so a
stale archive costs speed, never a result."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ARCHIVE = Path(sys.prefix) / "spark-driver.jsa"
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"  # (a mismatch warning would go to stdout)

_WORKLOAD = """
from pyspark import SparkContext
from headwater.pipeline.runner import spark_session
spark = spark_session("headwater-cds", master="local[1]")
spark.range(1000).selectExpr("id % 7 AS k", "id AS v").groupBy("k").count().collect()
proc = SparkContext._gateway.proc
spark.stop()
proc.stdin.close()  # the JVM exits on its stdin's end, writing the archive first
proc.wait(600)
"""


def java_options() -> str:
    """The options every test's Spark driver gets (SPARK_SUBMIT_OPTS)."""
    # C1 only: a test's JVM lives seconds to minutes (see tests/conftest.py).  C1 alone sizes
    # the code cache at 48 MB, not tiered compilation's 240 MB: a test module's shared session
    # compiling Spark's generated code for many queries filled it in a CI run ("Out of space in
    # CodeCache for adapters" in an Iceberg MERGE); the reservation is address space, only what
    # is compiled is used.
    base = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
    return f"{base} -XX:SharedArchiveFile={ARCHIVE} {QUIET}" if ARCHIVE.exists() else base


def make(archive: Path = ARCHIVE) -> None:
    """Writes the archive (whole, then renamed into place: JVMs may be reading the old one)."""
    part = archive.with_suffix(".part")
    part.unlink(missing_ok=True)
    env = {**os.environ, "SPARK_SUBMIT_OPTS":
           f"-XX:TieredStopAtLevel=1 -XX:ArchiveClassesAtExit={part} {QUIET}"}
    subprocess.run([sys.executable, "-c", _WORKLOAD], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
    if not part.exists():
        raise SystemExit(f"the JVM wrote no class-data archive at {part}")
    os.replace(part, archive)


if __name__ == "__main__":
    make()
