"""The conformance suite's fixtures: one server per connector per session (started only when a
test of that connector runs), a fresh database per test, and `driver` parametrized over every
connector, so each scenario runs once per connector."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater.testing.localmariadb import LocalMariaDB
from headwater.testing.localpg import LocalPostgres

from .driver import SourceDriver
from .drivers.mariadb import MariaDBDriver
from .drivers.postgres import PostgresDriver
from .harness import Harness

DRIVERS = ["postgres", "mariadb"]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[LocalPostgres]:
    server = LocalPostgres().start()
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


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> Iterator[SourceDriver]:
    d: SourceDriver
    if request.param == "postgres":
        d = PostgresDriver(request.getfixturevalue("postgres_server"))
    else:
        d = MariaDBDriver(request.getfixturevalue("mariadb_server"))
    try:
        yield d
    finally:
        d.close()


@pytest.fixture()
def cdc(driver: SourceDriver, tmp_path: Path) -> Harness:
    return Harness(driver, tmp_path)
