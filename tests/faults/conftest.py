"""Fault-harness fixtures: one PostgreSQL server for the module (some faults restart it), one
Spark session for the pipeline's catch-up runs, and the `--fault-trials N` option of the long
form (or HEADWATER_FAULT_TRIALS)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.testing.localpg import LocalPostgres

from .harness import Harness


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fault-trials", type=int, default=None,
                     help="run the long fault harness with N random trials (>= 50 for a real "
                          "run); also HEADWATER_FAULT_TRIALS")


def fault_trials(config: pytest.Config) -> int:
    try:
        value = config.getoption("--fault-trials")
    except ValueError:  # the option is registered only when tests/faults is on the command line
        value = None
    return int(value if value is not None else os.environ.get("HEADWATER_FAULT_TRIALS", "0"))


@pytest.fixture(scope="module")
def fault_pg() -> Iterator[LocalPostgres]:
    server = LocalPostgres().start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture(scope="module")
def fault_spark() -> Iterator[Any]:
    from headwater.pipeline.runner import spark_session

    session = spark_session("headwater-faults", master="local[2]")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture()
def harness(fault_pg: LocalPostgres, fault_spark: Any, tmp_path: Path) -> Harness:
    from headwater.pipeline.config import load_pipeline_config
    from headwater.pipeline.runner import start

    def pipeline_once(config: Path) -> None:
        query = start(fault_spark, load_pipeline_config(config), once=True)
        query.awaitTermination()
        if query.exception() is not None:
            raise AssertionError(f"pipeline --once failed: {query.exception()}")

    return Harness(fault_pg, tmp_path, pipeline_once=pipeline_once)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long form runs only when asked for (`--fault-trials N`): otherwise it is deselected,
    not skipped, since CI counts a skipped test as a failure."""
    if fault_trials(config) > 0:
        return
    long_form = [item for item in items if item.name == "test_random_fault_trials"]
    if long_form:
        config.hook.pytest_deselected(items=long_form)
        items[:] = [item for item in items if item not in long_form]
