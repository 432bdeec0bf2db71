"""HEADWATER_TEST_TIMEOUT_SCALE: one setting scales the tests' waits and pytest-timeout's limits."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from headwater.testing.localpg import wait_for
from headwater.testing.timeouts import ENV, scaled, timeout_scale


def test_unset_means_the_limits_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert timeout_scale() == 1.0 and scaled(30) == 30


def test_the_scale_multiplies_every_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "2.5")
    assert scaled(30) == 75.0
    monkeypatch.setenv(ENV, "0.5")
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"timed out after 0\.1s waiting for nothing"):
        wait_for(lambda: False, timeout=0.2, interval=0.01, what="nothing")
    assert time.monotonic() - started < 0.2


@pytest.mark.parametrize("bad", ["fast", "0", "-1", "nan", "inf"])
def test_a_bad_scale_names_the_variable(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv(ENV, bad)
    with pytest.raises(ValueError, match=f"{ENV}='{bad}': expected a positive number"):
        scaled(1)


def test_pytest_timeout_limits_are_scaled(tmp_path: Path) -> None:
    """The suite's conftest hook puts a scaled `timeout` mark before the test's own (and for
    tests without one, the ini's limit scaled)."""
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import scale_timeouts\n"
        "def pytest_collection_modifyitems(config, items):\n"
        "    scale_timeouts(config, items)\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\ntimeout = 600\n")
    (tmp_path / "test_marks.py").write_text(
        "import pytest\n"
        "@pytest.mark.timeout(100)\n"
        "def test_own(request):\n"
        "    assert request.node.get_closest_marker('timeout').args[0] == 300.0\n"
        "def test_default(request):\n"
        "    assert request.node.get_closest_marker('timeout').args[0] == 1800.0\n")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, ENV: "3",
           "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", "test_marks.py"], check=False, cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout + done.stderr
