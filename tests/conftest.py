"""Suite-wide rules.  In CI (CI=true) a skipped test is a failure: every server and package a
test needs is installed by scripts/setup.sh, so a skip there means a missing install step,
not an optional feature."""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

# The Spark drivers the tests start (sessions in this process and `headwater pipeline` runs it
# spawns) compile with C1 only: a test's JVM lives seconds to minutes, where C2's compiler
# threads cost more CPU than they save (a session's start and four small MERGEs: 60 s and
# 184 s with C2, 35 s and 104 s with C1, on the loaded 2-core CI machine).  Spark's launcher
# reads SPARK_SUBMIT_OPTS silently; production runs keep the JVM's defaults.
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI (a missing install step?): {report.longrepr}"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--long", action="store_true", default=False,
                     help="also run the long variants (marked `long`; also HEADWATER_LONG=1)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Long variants (`@pytest.mark.long`: more rounds or a second mode of a scenario CI
    already runs in a short form) run only when asked for; otherwise they are deselected, not
    skipped, since CI counts a skipped test as a failure."""
    if config.getoption("--long") or os.environ.get("HEADWATER_LONG"):
        return
    long_variants = [item for item in items if item.get_closest_marker("long") is not None]
    if long_variants:
        config.hook.pytest_deselected(items=long_variants)
        items[:] = [item for item in items if item.get_closest_marker("long") is None]
