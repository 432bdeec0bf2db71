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



def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _own_spark_jvm(cmdline: bytes) -> bool:
    """The gateway JVM of a Spark session in this very process: pyspark keeps it (and the
    Python workers under it) for the next test on purpose."""
    return b"org.apache.spark.deploy.SparkSubmit" in cmdline and b"pyspark-shell" in cmdline



def _direct_children(pid: int) -> list[int]:
    """`pid`'s live children, from each of its threads' /proc children list (Linux 3.5+)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                found.extend(int(c) for c in f.read().split())
        except OSError:
            continue
    return found


def _started(pid: int) -> str:
    """A process's start time (so a reused pid is not mistaken for an older process)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return ""
    return stat[stat.rindex(b")") + 2:].split()[19].decode()


def _children(pid: int) -> dict[int, str]:
    """The direct children of `pid` (pid -> start time) but for its own Spark session's JVM,
    which pyspark keeps (with the Python workers under it) for the next test on purpose."""
    return {c: _started(c) for c in _direct_children(pid) if not _own_spark_jvm(_cmdline(c))}


def _descendants(pid: int) -> list[int]:
    todo, found = [pid], []
    while todo:
        for child in _direct_children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found

@pytest.fixture(autouse=True)
def _no_leaked_processes() -> Generator[None, None, None]:
    """Kills what a test started and left running (a test that failed between starting a
    capture or pipeline subprocess and killing it), with a warning naming it.

    Why: a leaked pipeline keeps its JVM and a core busy for the rest of the session, which
    slows every later test on the same worker until their own timeouts fail them.  Servers
    of wider-scoped fixtures were started before this fixture looked, so they are kept, and so
    is this process's own Spark session (`_own_spark_jvm`)."""
    before = _children(os.getpid())
    yield
    import warnings
    for what in kill_leaked(before):
        warnings.warn(f"killed a process the test left running: {what}", stacklevel=1)


def kill_leaked(before: dict[int, str]) -> list[str]:
    """Kills the children of this process not in `before` (a `_children` answer) and all
    under them, innermost first; returns their pids and command lines."""
    leaked = [p for p, s in _children(os.getpid()).items() if before.get(p) != s]
    killed = []
    for pid in [d for p in leaked for d in _descendants(p)] + leaked:
        what = _cmdline(pid).replace(b"\0", b" ").decode(errors="replace")[:200]
        try:
            os.kill(pid, 9)
        except OSError:
            continue
        killed.append(f"{pid} {what}")
    return killed
