"""The harness reads a capture's stderr as it comes (`harness._Drain`): a pipe nobody reads
fills and blocks the process at its next write, which froze captures whose librdkafka logged
connection errors while the broker was down (even SIGTERM's handler, which logs, waited)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .harness import _Drain

# 200 KB to stderr, more than a pipe holds (64 KiB on Linux), then exit 0
WRITER = [sys.executable, "-c", "import sys; sys.stderr.write('x' * 200_000 + 'end')"]


def test_an_unread_stderr_pipe_blocks_the_writer() -> None:
    proc = subprocess.Popen(WRITER, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(3)
    finally:
        proc.kill()
        proc.communicate()


def test_a_drained_stderr_lets_the_writer_exit_and_keeps_its_tail() -> None:
    proc = subprocess.Popen(WRITER, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    drain = _Drain(proc, keep=1000)
    assert proc.wait(30) == 0
    text = drain.text()
    assert len(text) == 1000 and text.endswith("xend")
