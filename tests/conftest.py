"""Suite-wide rules.  In CI (CI=true) a skipped test is a failure: every server and package a
test needs is installed by scripts/setup.sh, so a skip there means a missing install step,
not an optional feature."""

from __future__ import annotations

import logging
import os
import time
import warnings
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from headwater.testing.timeouts import timeout_scale
from tests.spark_cds import java_options

pytest_plugins = ["tests.disk_usage"]

# The Spark drivers the tests start (sessions in this process and `headwater pipeline` runs it
# spawns) compile with C1 only: a test's JVM lives seconds to minutes, where C2's compiler
# threads cost more CPU than they save (a session's start and four small MERGEs: 60 s and
# 184 s with C2, 35 s and 104 s with C1, on the loaded 2-core CI machine).  Spark's launcher
# reads SPARK_SUBMIT_OPTS silently; production runs keep the JVM's defaults.
# Beside it, the class-data archive scripts/setup.sh makes (tests/spark_cds.py): a driver JVM
# maps the classes a session start loads (its start's CPU 19-21 s -> 12 s under CI's load).
os.environ.setdefault("SPARK_SUBMIT_OPTS", java_options())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI (a missing install step?): {report.longrepr}"


@pytest.fixture(autouse=True)
def _logging_restored() -> Iterator[None]:
    """Each test starts with the logging set-up the one before it found.  A command run
    in-process (`headwater run --log-level DEBUG` in click's runner) or a logger changed over
    the service's REST API used to leave the root at DEBUG for every later test of the worker:
    pymongo then logged each command's reply, and decoding a date beyond year 9999 in that log
    message failed MongoDB tests in the full run only."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = {name: logger.level for name, logger in logging.root.manager.loggerDict.items()
              if isinstance(logger, logging.Logger)}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):
            logger.setLevel(levels.get(name, logging.NOTSET))


# When a fixture's teardown started (a finalizer registered after the fixture's own runs first).
_teardown_began: dict[int, float] = {}
SLOW_TEARDOWN_S = 10.0


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: Any) -> Generator[None]:
    yield
    fixturedef.addfinalizer(lambda: _teardown_began.__setitem__(id(fixturedef), time.monotonic()))


def pytest_fixture_post_finalizer(fixturedef: pytest.FixtureDef[Any], request: Any) -> None:
    """Names a fixture whose teardown was slow: a session fixture's teardown is reported as
    part of the teardown of whichever test a worker ran last (once 68 s on a unit test that
    uses no server), which says nothing about its cause."""
    began = _teardown_began.pop(id(fixturedef), None)
    if began is not None and (spent := time.monotonic() - began) > SLOW_TEARDOWN_S:
        # (a warning: pytest-xdist brings it to the summary; a worker's stderr is lost)
        warnings.warn(f"slow teardown of fixture {fixturedef.argname} ({fixturedef.scope}, "
                      f"{fixturedef.baseid or '<root>'}): {spent:.1f} s", stacklevel=1)


# Seconds per test file (set-up, call and teardown of its tests), for HEAVY_FILES below: the
# `--durations` list names single tests, while a worker is held by a whole file.
_file_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = report.nodeid.split("::", 1)[0]
    _file_seconds[path] = _file_seconds.get(path, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _file_seconds:
        return
    top = sorted(_file_seconds.items(), key=lambda kv: -kv[1])[:30]
    terminalreporter.write_sep("=", f"slowest {len(top)} files (sum of all files: "
                                    f"{sum(_file_seconds.values()):.0f} s)")
    for path, seconds in top:
        terminalreporter.write_line(f"{seconds:8.1f}s {path}")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--long", action="store_true", default=False,
                     help="also run the long variants (marked `long`; also HEADWATER_LONG=1)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Long variants (`@pytest.mark.long`: more rounds or a second mode of a scenario CI
    already runs in a short form) run only when asked for; otherwise they are deselected, not
    skipped, since CI counts a skipped test as a failure."""
    if not (config.getoption("--long") or os.environ.get("HEADWATER_LONG")):
        long_variants = [item for item in items if item.get_closest_marker("long") is not None]
        if long_variants:
            config.hook.pytest_deselected(items=long_variants)
            items[:] = [item for item in items if item.get_closest_marker("long") is None]
    heavy_first(items)
    scale_timeouts(config, items)


def scale_timeouts(config: pytest.Config, items: list[pytest.Item]) -> None:
    """pytest-timeout's limits (a test's own `timeout` mark, else the ini's) times
    HEADWATER_TEST_TIMEOUT_SCALE, as the tests' waits (headwater.testing.timeouts)."""
    scale = timeout_scale()
    if scale == 1.0:
        return
    default = float(config.getini("timeout") or 0)
    for item in items:
        mark = item.get_closest_marker("timeout")
        seconds = float(mark.args[0]) if mark is not None and mark.args else default
        if seconds > 0:
            item.add_marker(pytest.mark.timeout(seconds * scale), append=False)


# Seconds per file (the sum of its tests' set-up, call and teardown, as the summary above
# prints it) of the files CI spent longest in.  Why a table: under `--dist loadfile` a file runs
# whole on one worker, and pytest-xdist's own order (files with the most tests first) queued
# these one- to three-test files last, so the run ended with one worker idle while the other
# still ran a 2-5 minute file.  Heaviest first, the many small unit files last fill in the gaps
# instead.  A stale entry costs balance only, never a result.
# Refreshed 2026-11-30 (session 23) from the last fresh-clone run of `.ci/run` on this loaded
# 2-core machine (its thirty heaviest files; sum of all files 6097 s, 51.5 min of pytest), the
# files made cheaper since at their estimated new weight (tests/conformance/test_reconnect.py, 117
# s, left out: ~30 s since MariaDB's reconnect waits 1 s, not its 60 s keep-alive).
HEAVY_FILES: dict[str, float] = {
    "tests/faults/test_faults.py": 373,
    "tests/pipeline/test_spark_cluster.py": 330,
    "tests/pipeline_jdbc/test_jdbc_variants.py": 214,
    "tests/faults/test_faults_mariadb.py": 208,
    "tests/faults/test_faults_mongodb.py": 188,
    "tests/pipeline/test_iceberg_target.py": 131,
    "tests/kafka/test_cluster_failures.py": 125,
    "tests/pipeline/test_datastream_pipeline.py": 123,
    "tests/pipeline/test_public_source.py": 120,
    "tests/faults/test_faults_db2.py": 118,
    "tests/conformance/test_handover.py": 117,
    "tests/kafka/test_pipeline_kills.py": 114,
    "tests/integration/postgres/test_incremental_snapshot.py": 114,
    "tests/integration/postgres/test_parallel_snapshot.py": 110,  # (session 23: paced; 183)
    "tests/conformance/test_incremental_snapshot.py": 106,
    "tests/conformance/test_snapshot_restart.py": 100,  # (session 23: 5k rows; 200)
    "tests/integration/mysql/test_parallel_snapshot.py": 100,  # (session 23: paced; 148)
    "tests/faults/test_faults_sqlserver.py": 98,
    "tests/kafka/test_fresh_cluster.py": 96,
    "tests/integration/postgres/test_streaming_v2.py": 92,
    "tests/pipeline/test_delta_variants.py": 91,
    "tests/integration/postgres/test_restart_cases.py": 88,
    "tests/pipeline/test_full_disk_pipeline.py": 86,
    "tests/kafka/test_capture_postgres.py": 70,
    "tests/integration/mongodb/test_mongodb_kill9_e2e.py": 66,
    "tests/differential/test_mongodb_vs_debezium.py": 66,
    "tests/integration/mysql/test_mysql_crash.py": 65,
    "tests/integration/mongodb/test_mongodb_datastream.py": 62,
    "tests/integration/mysql/test_incremental_snapshot.py": 61,
}


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False  # the order below is the schedule's


def heavy_first(items: list[pytest.Item]) -> None:
    """Files in the order xdist hands them out: the known heavy files first (heaviest first),
    then the other integration files, then the unit tests, each group by number of tests
    (xdist's own rule).  Stable, so tests keep their order inside a file; the same on every
    worker, since each sorts the same collection."""
    counts: dict[str, int] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        counts[path] = counts.get(path, 0) + 1

    def key(item: pytest.Item) -> tuple[int, float]:
        path = item.nodeid.split("::", 1)[0]
        if path in HEAVY_FILES:
            return 0, -HEAVY_FILES[path]
        return (2 if path.startswith("tests/unit/") else 1), -counts[path]

    items.sort(key=key)
