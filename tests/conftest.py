"""Suite-wide rules.  In CI (CI=true) a skipped test is a failure: every server and package a
test needs is installed by scripts/setup.sh, so a skip there means a missing install step,
not an optional feature."""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI (a missing install step?): {report.longrepr}"
