"""The suite's net for processes a failed test leaves running (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import time

from tests.conftest import _children, kill_leaked


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().split(b") ")[1][:1] != b"Z"
    except OSError:
        return False


def test_a_leaked_process_tree_is_killed_and_earlier_children_are_kept() -> None:
    kept = subprocess.Popen(["sleep", "60"])
    try:
        before = _children(os.getpid())
        leaked = subprocess.Popen(["bash", "-c", "sleep 60 & wait"])
        deadline = time.monotonic() + 5
        grandchild = None
        while grandchild is None and time.monotonic() < deadline:
            with open(f"/proc/{leaked.pid}/task/{leaked.pid}/children") as f:
                kids = f.read().split()
            grandchild = int(kids[0]) if kids else None
            time.sleep(0.02)
        assert grandchild is not None
        killed = kill_leaked(before)
        leaked.wait(timeout=5)
        assert [int(k.split()[0]) for k in killed] == [grandchild, leaked.pid]
        assert "sleep 60" in killed[0]
        deadline = time.monotonic() + 5
        while _alive(grandchild) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _alive(grandchild)
        assert kept.poll() is None  # started before the test looked: not the test's leak
        assert kill_leaked(_children(os.getpid())) == []
    finally:
        kept.kill()
        kept.wait()
