"""Pipeline fixtures: a real local Spark session shared by the module, PostgreSQL from the
integration fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.postgres.conftest import env, pg  # noqa: F401  (fixtures)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from headwater.pipeline.runner import spark_session

    session = spark_session("headwater-tests", master="local[2]")
    try:
        yield session
    finally:
        session.stop()
