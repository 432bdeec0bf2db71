"""JDBC target fixtures: a Spark session whose JVM has Debian's JDBC drivers, a throwaway
MariaDB, a fresh target database per test (PostgreSQL: on the source's own local server;
MariaDB: on the throwaway server), and PostgreSQL capture from the integration fixtures.

The Spark session: a JVM reads `spark.jars` only when it starts, and PySpark keeps one JVM per
process.  When the suite runs with the other Spark tests, their fixtures (tests/integration,
tests/pipeline) have already started that JVM without the drivers, so `jdbc_spark_session`:

- reuses the active session if its JVM can load both drivers;
- otherwise stops the active session and detaches PySpark from that JVM (without shutting it
  down: the other fixtures still hold their stopped sessions and stop them again at teardown,
  which calls into it), so the next session starts a JVM of its own, with `spark.jars`.

Pytest runs tests/pipeline before tests/pipeline_jdbc, so the sessions stopped here are no
longer in use.  A test module that runs later and asks for a session gets this one (it has the
drivers and is otherwise the same).  The detached JVM is idle until the process exits.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from headwater.pipeline.jdbc_target import jdbc_jars
from headwater.testing.localmariadb import LocalMariaDB
from headwater.testing.localpg import LocalPostgres
from tests.integration.postgres.conftest import env, pg  # noqa: F401  (fixtures)

DRIVERS = ("org.postgresql.Driver", "org.mariadb.jdbc.Driver")
_counter = itertools.count()


def _has_drivers(jvm: Any) -> bool:
    try:
        for name in DRIVERS:
            jvm.org.apache.spark.util.Utils.classForName(name, True, False)
    except Exception:
        return False
    return True


def _alive(session: Any) -> bool:
    return getattr(session.sparkContext, "_jsc", None) is not None


def jdbc_spark_session() -> Any:
    """A local Spark session able to load the JDBC drivers (see the module docstring)."""
    import logging

    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    jars = jdbc_jars()
    if len(jars) < 2:
        pytest.fail("the JDBC driver jars are missing: apt-get install libpostgresql-jdbc-java "
                    "libmariadb-java (scripts/setup.sh does)")
    active = SparkSession.getActiveSession()
    if active is not None and _alive(active) and _has_drivers(active._jvm):
        return active
    if SparkContext._gateway is not None and not _has_drivers(SparkContext._jvm):
        if active is not None:
            active.stop()
        elif SparkContext._active_spark_context is not None:
            SparkContext._active_spark_context.stop()
        SparkContext._gateway = None
        SparkContext._jvm = None
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    logging.getLogger("py4j").setLevel(logging.ERROR)
    return (
        SparkSession.builder.appName("headwater-jdbc-tests").master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.jars", ",".join(jars))
        .getOrCreate()
    )


@pytest.fixture(scope="session")
def _jdbc_sessions() -> Iterator[list[Any]]:
    made: list[Any] = []
    yield made
    if made and _alive(made[-1]):
        made[-1].stop()


@pytest.fixture()
def jdbc_spark(_jdbc_sessions: list[Any]) -> Any:
    session = jdbc_spark_session()
    if not _jdbc_sessions or _jdbc_sessions[-1] is not session:
        _jdbc_sessions.append(session)
    return session


@pytest.fixture(scope="session")
def mariadb() -> Iterator[LocalMariaDB]:
    server = LocalMariaDB().start()
    try:
        yield server
    finally:
        server.cleanup()


@dataclass
class TargetDb:
    """One test's target database."""

    kind: str  # "postgres" or "mariadb"
    database: str
    url: str
    user: str
    password: str | None
    server: Any

    def props(self, **extra: Any) -> dict[str, Any]:
        props = {
            "headwater.pipeline.target": "jdbc",
            "headwater.pipeline.jdbc.url": self.url,
            "headwater.pipeline.jdbc.user": self.user,
        }
        if self.password:
            props["headwater.pipeline.jdbc.password"] = self.password
        return {**props, **extra}

    @property
    def schema(self) -> str:
        return "public" if self.kind == "postgres" else self.database

    def connect(self) -> Any:
        return self.server.connect(self.database)

    def query(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        conn = self.connect()
        try:
            cur = conn.cursor()
            cur.execute(sql)
            names = [d[0] for d in cur.description]
            rows = [tuple(bytes(v) if isinstance(v, memoryview) else v for v in r)
                    for r in cur.fetchall()]
            cur.close()
            return names, rows
        finally:
            conn.close()

    def rows(self, table: str, bookkeeping: bool = False) -> list[dict[str, Any]]:
        q = '"' if self.kind == "postgres" else "`"
        names, rows = self.query(f"SELECT * FROM {q}{self.schema}{q}.{q}{table}{q}")
        return [{n: v for n, v in zip(names, r, strict=True)
                 if bookkeeping or not n.startswith("__hw_")} for r in rows]

    def tables(self) -> set[str]:
        _, rows = self.query(
            "SELECT table_name FROM information_schema.tables "
            f"WHERE table_schema = '{self.schema}'")
        return {r[0] for r in rows}


def make_target(kind: str, source: LocalPostgres, request: pytest.FixtureRequest) -> TargetDb:
    """A fresh target database: on the source's server (PostgreSQL) or on the MariaDB one."""
    name = f"hw_tgt_{next(_counter)}"
    if kind == "postgres":
        source.create_database(name)
        return TargetDb(kind, name, f"jdbc:postgresql://127.0.0.1:{source.port}/{name}",
                        source.user, None, source)
    server: LocalMariaDB = request.getfixturevalue("mariadb")
    server.create_database(name)
    return TargetDb(kind, name, server.jdbc_url(name), server.user, server.password, server)


@pytest.fixture(params=["postgres", "mariadb"])
def target(request: pytest.FixtureRequest, pg: LocalPostgres) -> TargetDb:  # noqa: F811
    return make_target(request.param, pg, request)
