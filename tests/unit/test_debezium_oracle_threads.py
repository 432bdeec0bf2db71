"""The oracle's CPU per thread (`thread_cpu_seconds`), which benchmarks use to show that
Debezium's JVM threads, not the Python side of its child process, are what they measured.

Thread names come from /proc/<pid>/task/<tid>/stat, where the JVM's names hold spaces, "#"
and digits ("GC Thread#0", "pool-7-thread-1"): a name with ")" and spaces must not shift the
fields that follow it, and a pool's threads must add up under one name.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
import time

import pytest

from headwater.testing.debezium_oracle import cpu_by_thread_name, thread_cpu_seconds

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")

PR_SET_NAME = 15


def _busy_named(name: bytes, seconds: float, ready: threading.Event,
                release: threading.Event) -> None:
    """Names this thread (as the JVM names its threads) and spins for `seconds` of CPU."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    assert libc.prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0) == 0
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
    ready.set()
    release.wait(10)


def test_threads_named_and_timed_and_pools_summed() -> None:
    release = threading.Event()
    started = []
    names = (b"pool-7-thread-1", b"pool-7-thread-2", b"x) (GC Thread#0")
    for name in names:
        ready = threading.Event()
        threading.Thread(target=_busy_named, args=(name, 0.3, ready, release),
                         daemon=True).start()
        started.append(ready)
    try:
        for ready in started:
            assert ready.wait(20)
        threads = thread_cpu_seconds(os.getpid())
    finally:
        release.set()
    assert threads[os.getpid()][0] == "<main>"
    by_name = cpu_by_thread_name(threads)
    assert by_name["pool-*-thread-*"] == pytest.approx(0.6, abs=0.15)
    assert by_name["x) (GC Thread#*"] == pytest.approx(0.3, abs=0.1)
    assert sum(by_name.values()) == pytest.approx(
        sum(seconds for _, seconds in threads.values()))


def test_a_process_that_is_gone_has_no_threads() -> None:
    assert thread_cpu_seconds(2**22 + 1) == {}  # above Linux's pid_max limit
