"""What the suite does to the disk it runs on.  A CI run once ended in 1,072 errors and an
INTERNALERROR from `No space left on device` 12 minutes in, with nothing naming what had
filled the disk.  Each test's report now carries the free space of the temporary directory's
file system after its teardown and how much it fell during the test (the other worker writes
too, so a fall is an upper bound); the run's summary names the lowest free space and the tests
that took the most, and a line is printed as soon as free space drops below a floor, so that a
run that dies of a full disk says which tests were running first.

Passed tests' `tmp_path` directories are removed at their teardown (pyproject's
`tmp_path_retention_policy = "failed"`); before that the run kept every one (6.5 GB for a full
run here)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Generator
from typing import Any

import pytest

_MIB = 1 << 20
# Free space below which every report says so at once (and again for every further 256 MiB).
LOW_FREE_MIB = 2048
_free_before: dict[str, int] = {}
_lowest: list[tuple[int, str]] = []
_falls: list[tuple[int, str]] = []
_warned_at: list[int] = []
_config: list[pytest.Config] = []


def pytest_configure(config: pytest.Config) -> None:
    _config.append(config)


def free_bytes() -> int:
    st = os.statvfs(tempfile.gettempdir())
    return st.f_bavail * st.f_frsize


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _free_before[item.nodeid] = free_bytes()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Generator[None, Any, None]:
    if call.when == "teardown":
        before = _free_before.pop(item.nodeid, None)
        after = free_bytes()
        # (in MiB: pytest-xdist's serializer refuses an int below -2**31, a fall of -2 GiB)
        item.user_properties.append(("disk_free_after_mib", after // _MIB))
        if before is not None:
            item.user_properties.append(("disk_fall_mib", (before - after) // _MIB))
    yield


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Runs on the controller under xdist, with the worker's properties."""
    if report.when != "teardown":
        return
    props = dict(report.user_properties)
    after = props.get("disk_free_after_mib")
    fall = props.get("disk_fall_mib")
    if isinstance(fall, int) and fall > 64:
        _falls.append((fall, report.nodeid))
    if not isinstance(after, int):
        return
    if not _lowest or after < _lowest[0][0]:
        _lowest[:] = [(after, report.nodeid)]
    if after < LOW_FREE_MIB and (not _warned_at or after < _warned_at[-1] - 256):
        _warned_at.append(after)
        reporter = _config[0].pluginmanager.get_plugin("terminalreporter") if _config else None
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(f"LOW DISK: {after} MiB free in {tempfile.gettempdir()} "
                                f"after {report.nodeid}")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _lowest:
        return
    free, nodeid = _lowest[0]
    terminalreporter.write_sep("=", f"disk: lowest free {free} MiB (after {nodeid}); "
                                    f"{free_bytes() // _MIB} MiB free now")
    for fall, test in sorted(_falls, reverse=True)[:15]:
        terminalreporter.write_line(f"{fall:8d} MiB fell during {test}")
