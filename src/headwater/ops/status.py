"""Is the capture that wrote a status file still alive?

The status file (`ops/progress.py`) holds the last state `headwater run` wrote, so after a
kill -9 it says RUNNING for ever.  `liveness` tells a live capture from a dead one by two
checks, both needed: the writing process still exists (its pid, when the file was written on
this host) and its heartbeat (`updated_ms`, rewritten every `heartbeat_interval_ms`) is
recent.  A pid alone can be reused by another process; a heartbeat alone cannot tell a
stopped process from one stalled for a moment.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from typing import Any, Final

# The capture is taken for dead when its heartbeat is older than this many intervals (and at
# least STALE_MIN_S): a loaded machine may delay a few writes, never this many.
STALE_INTERVALS: Final = 10
STALE_MIN_S: Final = 10.0
DEFAULT_INTERVAL_MS: Final = 1000
_STOPPED_STATES: Final = frozenset({"PAUSED", "NOT_STARTED", "FAILED", "STOPPED"})


@dataclass(frozen=True, slots=True)
class Liveness:
    alive: bool
    state: str  # what to show: the written state when alive, else STOPPED/FAILED/DEAD
    age_s: float  # seconds since the last heartbeat
    reason: str  # why it is taken for dead (empty when alive)


def pid_alive(pid: int) -> bool:
    """True if a process `pid` exists on this host (signal 0 checks without sending)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def stale_after_s(doc: dict[str, Any]) -> float:
    interval = int(doc.get("heartbeat_interval_ms", DEFAULT_INTERVAL_MS)) / 1000
    return max(STALE_MIN_S, STALE_INTERVALS * interval)


def liveness(doc: dict[str, Any], now_ms: int | None = None) -> Liveness:
    """Whether the capture that wrote `doc` (a status document) is alive, and why not."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    age = max(0, now - int(doc["updated_ms"])) / 1000
    state = str(doc["state"])
    pid = int(doc["pid"])
    same_host = doc.get("host") in (None, socket.gethostname())
    if state in _STOPPED_STATES:
        # Written on the way out: the process ended (or is ending) by itself.
        shown = "FAILED" if state == "FAILED" else "STOPPED"
        return Liveness(False, shown, age, f"it stopped (last state {state})")
    if same_host and not pid_alive(pid):
        return Liveness(False, "DEAD", age,
                        f"process {pid} is gone (last state {state}: killed or crashed)")
    limit = stale_after_s(doc)
    if age > limit:
        where = "" if same_host else f" on {doc.get('host')}"
        return Liveness(False, "DEAD", age,
                        f"no heartbeat for {age:.0f}s (more than {limit:.0f}s) from process "
                        f"{pid}{where}, last state {state}")
    return Liveness(True, state, age, "")
