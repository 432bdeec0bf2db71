"""Pipeline fixtures: a real local Spark session shared by the module, PostgreSQL from the
integration fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.postgres.conftest import env, pg  # noqa: F401  (fixtures)

# Classes the pipeline tests' session must load (its connector jars are on the class path).
CONNECTOR_CLASSES = ("io.delta.tables.DeltaTable", "org.apache.iceberg.spark.SparkCatalog")


def _loads(jvm: Any, names: tuple[str, ...]) -> bool:
    try:
        for name in names:
            jvm.org.apache.spark.util.Utils.classForName(name, True, False)
    except Exception:
        return False
    return True


@pytest.fixture(scope="session")
def _spark_sessions() -> Iterator[list[Any]]:
    made: list[Any] = []
    yield made
    if made and getattr(made[-1].sparkContext, "_jsc", None) is not None:
        made[-1].stop()


@pytest.fixture()
def spark(_spark_sessions: list[Any]) -> Any:
    """The worker's local Spark session, started again when something stopped it.

    Why per test: a pipeline run in this process (`run_pipeline` stops its session when it
    ends) or the JDBC tests' session swap stops the context the other tests share; a test
    file run after one of them (the order differs from run to run under pytest-xdist) must
    not get a stopped session ("jsc is null")."""
    from pyspark import SparkContext

    from headwater.pipeline.runner import spark_session

    if _spark_sessions and getattr(_spark_sessions[-1].sparkContext, "_jsc", None) is not None:
        return _spark_sessions[-1]
    if SparkContext._gateway is not None and not _loads(SparkContext._jvm, CONNECTOR_CLASSES):
        # Another session's JVM runs in this worker (the JDBC tests' own, with only their
        # drivers; a plain one): `getOrCreate` would hand it back without Delta's and
        # Iceberg's jars, and jars join the driver's class path only when a JVM starts.
        if SparkContext._active_spark_context is not None:
            SparkContext._active_spark_context.stop()
        SparkContext._gateway = None
        SparkContext._jvm = None
    session = spark_session("headwater-tests", master="local[2]")
    _spark_sessions.append(session)
    return session
