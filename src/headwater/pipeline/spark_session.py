"""The pipeline's Spark session: Delta Lake, Iceberg and Kafka on the class path, Delta's SQL
extension and catalog, and the user's own `spark.*` settings.

Jars.  The `spark` artifact set (`headwater.jvm.artifacts`: delta-spark, the Iceberg runtime,
Spark's Kafka source and Avro) is passed as files (`spark.jars`), minus every jar whose
artifact the pyspark wheel already ships in `pyspark/jars` (jackson, scala-library, the Hadoop
client, log4j, parquet, slf4j, snappy, zstd...): two versions of one library on a class path
is a clash that shows up as a NoSuchMethodError in the middle of a batch.  A user who installed
Headwater with pip alone has no cache of jars: then the session asks Spark's own resolver for
the same Maven coordinates (`spark.jars.packages`), which is how Spark users add Delta Lake;
`python -m headwater.jvm.artifacts spark` fills the cache instead (with Maven).

Settings.  Every `spark.*` property of the pipeline's configuration goes to the session
builder as is (`spark.master` included); the environment variables `HEADWATER_SPARK_MASTER`
and `HEADWATER_SPARK_DRIVER_MEMORY` remain as fallbacks, below the properties.  The driver is
bound to 127.0.0.1 only when its executors are on this machine's loopback (`loopback_master`).
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from headwater.jvm import artifacts

log = logging.getLogger("headwater.pipeline.spark")

DELTA_EXTENSION: Final = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG: Final = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
JAR_SET: Final = "spark"
# Spark 4.1's name (the class moved into `checkpointing` in 4.1)
CHECKPOINT_FILE_MANAGER: Final = ("org.apache.spark.sql.execution.streaming.checkpointing."
                                  "FileSystemBasedCheckpointFileManager")

# `name-1.2.3.jar` -> `name` (the version starts at the last `-<digits>.<digits>`; a name may
# carry a Scala suffix or a Spark line, `delta-spark_4.1_2.13-4.4.0.jar`).
_JAR_NAME: Final = re.compile(r"^(?P<name>.+)-\d+\.\d+[^_]*\.jar$")


def artifact_name(jar: str) -> str:
    """The artifact of a jar file name, without its version."""
    found = _JAR_NAME.match(jar)
    return found.group("name") if found else jar.removesuffix(".jar")


def pyspark_jars() -> set[str]:
    """The artifacts the pyspark wheel ships (`pyspark/jars`)."""
    import pyspark

    folder = Path(pyspark.__file__).parent / "jars"
    return {artifact_name(p.name) for p in folder.glob("*.jar")}


def connector_jars() -> list[Path] | None:
    """The cached jars of the `spark` set that pyspark does not ship itself; None when the
    cache does not hold the set (then `spark.jars.packages` resolves it)."""
    if not artifacts.is_fetched(JAR_SET):
        return None
    shipped = pyspark_jars()
    return [j for j in artifacts.fetch(JAR_SET) if artifact_name(j.name) not in shipped]


def connector_conf(jars: list[Path] | None) -> dict[str, str]:
    """The settings that put Delta, Iceberg and Kafka into a session: the jar files, or their
    Maven coordinates for Spark's resolver, and Delta's extension and catalog."""
    conf = {"spark.sql.extensions": DELTA_EXTENSION,
            "spark.sql.catalog.spark_catalog": DELTA_CATALOG}
    if jars is None:
        conf["spark.jars.packages"] = ",".join(artifacts.SETS[JAR_SET].coordinates)
    else:
        conf["spark.jars"] = ",".join(str(j) for j in jars)
    return conf


# Settings that hold lists: a configuration's value is added to Headwater's, with the separator
# Spark splits them by (a user's JVM flags must not drop the options that quiet Spark's logs).
_LISTS: Final = {"spark.jars": ",", "spark.jars.packages": ",", "spark.sql.extensions": ",",
                 "spark.driver.extraJavaOptions": " "}


def session_conf(spark_props: Mapping[str, str], logs: Path | None = None,
                 master: str | None = None) -> dict[str, str]:
    """Every setting the session is built with: Headwater's defaults, the connector jars, the
    JDBC drivers, then the configuration's `spark.*` properties (they win, except that jar
    lists (`_LISTS`) are joined, not replaced)."""
    from headwater.pipeline.jdbc_target import jdbc_jars

    conf = {
        "spark.master": master or os.environ.get("HEADWATER_SPARK_MASTER", "local[*]"),
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.session.timeZone": "UTC",
        # Batches the executors cannot take (see runner) are still read and decoded in the
        # driver, and the delta-rs writes run there: room for them.
        "spark.driver.memory": os.environ.get("HEADWATER_SPARK_DRIVER_MEMORY", "4g"),
        "spark.driver.maxResultSize": "4g",
        # Delta rebuilds a table's state from its log in this many tasks before each MERGE
        # (50 by default, sized for huge logs): a micro-batch's commit paid for 50 tasks.
        "spark.databricks.delta.snapshotPartitions": "4",
        # A delta-spark MERGE first copies its source (a job and a local checkpoint) unless
        # told not to, against sources that could change between its two passes; the
        # pipeline's sources (a batch's Arrow rows, or Parquet the batch staged) cannot.
        "spark.databricks.delta.merge.materializeSource": "none",
        # Python workers that import the installed pyspark rather than its zip, whose
        # directory every task would re-read (`spark_daemon`)
        "spark.python.daemon.module": "headwater.pipeline.spark_daemon",
        # The streaming query's offset and commit logs written through Hadoop's FileSystem,
        # not its FileContext: on a local path (the only kind the pipeline takes: the
        # configuration refuses object-store URIs) FileContext's rename runs `readlink` as a
        # process twice for each of the four files it looks at, and `chmod` twice (Hadoop's
        # native library is not loaded): 46-61 ms of the driver's CPU a log entry measured
        # here, two entries a batch; FileSystem renames with one rename(2), atomic on a local
        # file system (13-16 ms: its two `chmod`s).
        "spark.sql.streaming.checkpointFileManagerClass": CHECKPOINT_FILE_MANAGER,
    }
    if os.environ.get("PYTHONPATH"):
        # The executors' Python workers run `pipeline.tasks`: Headwater must import there.
        conf["spark.executorEnv.PYTHONPATH"] = os.environ["PYTHONPATH"]
    jars = connector_jars()
    if jars is None:
        log.warning("the Delta/Iceberg/Kafka jars are not in %s: Spark resolves them from Maven "
                    "(spark.jars.packages); `python -m headwater.jvm.artifacts spark` fetches "
                    "them once instead", artifacts.folder(JAR_SET))
    conf.update(connector_conf(jars))
    jdbc = jdbc_jars()
    if jdbc:
        conf["spark.jars"] = ",".join(filter(None, (conf.get("spark.jars"), *jdbc)))
    if logs is not None:
        from headwater.pipeline.quiet import log4j_options

        conf["spark.driver.extraJavaOptions"] = log4j_options(logs)
    for key, value in spark_props.items():
        if key in _LISTS and conf.get(key):
            conf[key] = f"{conf[key]}{_LISTS[key]}{value}"
        else:
            conf[key] = value
    return conf


def spark_session(app: str = "headwater-pipeline", master: str | None = None,
                  logs: Path | None = None, spark_props: Mapping[str, str] | None = None) -> Any:
    """A Spark session set up for the pipeline (see the module docstring); with `logs`,
    Spark's own logs go to `logs`/spark.log instead of the terminal."""
    from pyspark.sql import SparkSession

    conf = session_conf(spark_props or {}, logs, master)
    if loopback_master(conf["spark.master"]):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # CRITICAL: a failed foreachBatch is reported once, by the query's exception (py4j would
    # log its traceback at ERROR first).
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    builder = SparkSession.builder.appName(app)
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


@contextmanager
def session_for(app: str, logs: Path | None = None,
                spark_props: Mapping[str, str] | None = None) -> Iterator[Any]:
    """The Spark session already active in this process (left running: its owner stops it),
    else a new one (`spark_session`), stopped at the end: for a command that reads through
    Spark once (`headwater validate` of Iceberg targets)."""
    from pyspark.sql import SparkSession

    running = SparkSession.getActiveSession()
    spark = running or spark_session(app, logs=logs, spark_props=spark_props)
    try:
        yield spark
    finally:
        if running is None:
            spark.stop()


def loopback_master(master: str) -> bool:
    """Whether every executor runs on this machine's loopback (`local[...]`, or a standalone
    master on 127.0.0.1): only then is the driver bound to 127.0.0.1 (`SPARK_LOCAL_IP`, unless
    set), which spares a local run the host name lookups of a machine whose name does not
    resolve; a cluster's workers must reach the driver at an address of its network."""
    if master.startswith("local"):
        return True
    return urlsplit(master).hostname in ("127.0.0.1", "localhost", "::1")
