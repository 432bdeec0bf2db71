"""The conformance suite's fixtures: one server per connector per session (started only when a
test of that connector runs), a fresh database per test, and `driver` parametrized over every
connector, so each scenario runs once per connector."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater.testing.localmariadb import LocalMariaDB
from headwater.testing.localmongo import LocalMongo
from headwater.testing.localpg import LocalPostgres

from .driver import SourceDriver
from .drivers.db2 import Db2Driver
from .drivers.mariadb import MariaDBDriver
from .drivers.mongodb import MongoDriver
from .drivers.postgres import PostgresDriver
from .drivers.sqlserver import SqlServerDriver
from .harness import Harness

DRIVERS = ["postgres", "postgres18", "mariadb", "mongodb", "sqlserver", "db2"]
# The PostgreSQL connector again on the newest server (18, from headwater.testing.pg_binaries;
# `postgres` runs on $HEADWATER_PG_VERSION, Debian's 15 by default).  A long variant: it
# repeats the whole PostgreSQL suite: 21 scenarios, over 10 minutes on the loaded 2-core
# machine, too much for every CI run (docs/postgres.md#server-versions).
LONG_DRIVERS = {"postgres18"}

_RELATIONAL = "a relational source only"
_SQLSERVER_TRUNCATE = ("SQL Server refuses TRUNCATE TABLE on a table enabled for CDC (error "
                       "4711), so its CDC has no truncate event; the emulation refuses it too")
_DB2_TRUNCATE = ("Db2 allows TRUNCATE on a table in capture, but SQL Replication's Capture "
                 "program writes no CD-table row for it, and Debezium's Db2 connector reads "
                 "only CD tables (Db2ChangeRecordEmitter knows operations 1-5): there is no "
                 "truncate event; the emulation captures nothing for TRUNCATE either "
                 "(test_truncate_is_skipped_by_default runs and shows the insert only)")
# Scenarios that do not apply to a driver, with the reason; they are not generated for it (a
# skip would fail in CI, and these are not missing installs).  A key is a module, or
# `module::test` for one test of it.
NOT_APPLICABLE: dict[str, dict[str, str]] = {
    "mongodb": {
        "test_changes.py": f"{_RELATIONAL}: full before images of every change, source.table, "
                           "primary-key changes (_id is immutable), TRUNCATE (no such MongoDB "
                           "change event); the MongoDB envelope is tested in "
                           "tests/integration/mongodb",
        "test_identifiers.py": f"{_RELATIONAL}: quoted SQL identifiers",
        "test_types.py": f"{_RELATIONAL}: column types (documents are JSON text)",
        "test_snapshot_restart.py": "superseding an interrupted snapshot's reads is not "
                                    "verified for the document envelope yet (docs/mongodb.md)",
    },
    "sqlserver": {
        "test_changes.py::test_truncate_is_op_t_when_not_skipped": _SQLSERVER_TRUNCATE,
        "test_changes.py::test_truncate_is_skipped_by_default": _SQLSERVER_TRUNCATE,
    },
    "db2": {
        "test_changes.py::test_truncate_is_op_t_when_not_skipped": _DB2_TRUNCATE,
    },
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "driver" not in metafunc.fixturenames:
        return
    module = Path(str(metafunc.definition.fspath)).name
    test = f"{module}::{metafunc.definition.originalname}"
    drivers = [d for d in DRIVERS
               if module not in NOT_APPLICABLE.get(d, {}) and test not in NOT_APPLICABLE.get(d, {})]
    metafunc.parametrize("driver", [
        pytest.param(d, marks=pytest.mark.long) if d in LONG_DRIVERS else d for d in drivers
    ], indirect=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[LocalPostgres]:
    server = LocalPostgres().start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture(scope="session")
def postgres18_server() -> Iterator[LocalPostgres]:
    server = LocalPostgres(version="18").start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[LocalMariaDB]:
    server = LocalMariaDB().start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture(scope="session")
def mongodb_server() -> Iterator[LocalMongo]:
    server = LocalMongo().start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture(scope="session")
def sqlserver_server() -> Iterator[LocalPostgres]:
    """The PostgreSQL behind the SQL Server EMULATION (its own: the suite restarts it)."""
    server = LocalPostgres().start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture(scope="session")
def db2_server() -> Iterator[LocalPostgres]:
    """The PostgreSQL behind the Db2 EMULATION (its own: the suite restarts it)."""
    server = LocalPostgres().start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture()
def driver(request: pytest.FixtureRequest) -> Iterator[SourceDriver]:
    d: SourceDriver
    if request.param == "postgres":
        d = PostgresDriver(request.getfixturevalue("postgres_server"))
    elif request.param == "postgres18":
        d = PostgresDriver(request.getfixturevalue("postgres18_server"))
    elif request.param == "mongodb":
        d = MongoDriver(request.getfixturevalue("mongodb_server"))
    elif request.param == "sqlserver":
        d = SqlServerDriver(request.getfixturevalue("sqlserver_server"))
    elif request.param == "db2":
        d = Db2Driver(request.getfixturevalue("db2_server"))
    else:
        d = MariaDBDriver(request.getfixturevalue("mariadb_server"))
    try:
        yield d
    finally:
        d.close()


@pytest.fixture()
def cdc(driver: SourceDriver, tmp_path: Path) -> Harness:
    return Harness(driver, tmp_path)
