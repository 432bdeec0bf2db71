"""The pipeline's status file: what it has applied, how far behind the topics it is.

Why a file next to the checkpoint (as the capture's status file sits next to its offsets,
`ops/progress.py`): `headwater status` and `headwater serve` read it from other processes
without talking to Spark, and it survives the pipeline (the last numbers stay readable).
It is rewritten after every micro-batch and once a second between batches, so the lag
(records of each topic not yet read) and the freshness (now minus the newest source `ts_ms`
applied) stay current while the pipeline waits for data, and `updated_ms` is a heartbeat
(`ops/status.liveness` tells a live pipeline from a dead one, as for a capture).

The counters continue across restarts from the previous file.  A batch Spark replays after a
crash has a batch id the file may already have counted (written after the batch, before
Spark's commit): it is not counted twice, so the counters are exactly once like the tables.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import orjson

from headwater.ops.progress import read_status, write_status

STATUS_FILE: Final = "status.json"
INTERVAL_S: Final = 1.0


def pipeline_status_path(checkpoint_dir: Path) -> Path:
    return checkpoint_dir / STATUS_FILE


def newest_ts_ms(value: bytes | None) -> int | None:
    """The source `ts_ms` of a change event's value (Debezium's envelope, with or without
    the schema wrapper), else the event's own `ts_ms`."""
    if not value:
        return None
    try:
        doc = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None
    if isinstance(doc, dict) and isinstance(doc.get("payload"), dict):
        doc = doc["payload"]
    if not isinstance(doc, dict):
        return None
    source = doc.get("source")
    ts = source.get("ts_ms") if isinstance(source, dict) else None
    if not isinstance(ts, int):
        ts = doc.get("ts_ms")
    return ts if isinstance(ts, int) else None


def last_checkpointed_offsets(checkpoint_dir: Path) -> dict[str, int]:
    """The end offsets of the newest batch in the checkpoint's offset log (what the pipeline
    has read, or is reading), {} when none is there or the layout is another."""
    from headwater.pipeline.runner import _checkpointed_offsets

    offsets = checkpoint_dir / "offsets"
    try:
        ids = [int(p.name) for p in offsets.iterdir() if p.name.isdigit()]
    except FileNotFoundError:
        return {}
    if not ids:
        return {}
    return _checkpointed_offsets(offsets / str(max(ids))) or {}


class PipelineMonitor:
    """Counts the batches the query applies and writes the status file (thread-safe)."""

    def __init__(self, path: Path, pipeline_id: str, topics_dir: Path | None = None,
                 topics_glob: str = "", table_prefix: str = "") -> None:
        self.path = path
        self.topics_dir = topics_dir  # None: a source without a topic log (no lag)
        self.topics_glob = topics_glob
        self.table_prefix = table_prefix
        self._lock = threading.Lock()
        old = read_status(path) or {}
        self.doc: dict[str, Any] = {
            "pipeline": pipeline_id, "state": "STARTING", "pid": os.getpid(),
            "host": socket.gethostname(), "started_ms": _now(), "updated_ms": _now(),
            "heartbeat_interval_ms": int(INTERVAL_S * 1000),
            "batches": int(old.get("batches", 0)),
            "changes_applied": int(old.get("changes_applied", 0)),
            "rows_by_table": dict(old.get("rows_by_table") or {}),
            "last_batch_id": old.get("last_batch_id"),
            "last_batch_duration_s": old.get("last_batch_duration_s"),
            "newest_source_ts_ms": old.get("newest_source_ts_ms"),
            "lag": {}, "error": None,
        }
        self.read_to: dict[str, int] = (last_checkpointed_offsets(path.parent)
                                        if topics_dir is not None else {})
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def table_of(self, topic: str) -> str:
        prefix = self.table_prefix + "." if self.table_prefix else ""
        return topic[len(prefix):] if prefix and topic.startswith(prefix) else topic

    def batch(self, batch_id: int, counts: Mapping[str, int], newest_ts: int | None,
              duration_s: float, read_to: Mapping[str, int] | None = None) -> None:
        """After a batch was applied: `counts` are events per topic."""
        with self._lock:
            d = self.doc
            if read_to:
                self.read_to.update(read_to)
            last = d["last_batch_id"]
            if last is not None and batch_id <= int(last):
                return  # a replay of a batch already counted
            d["batches"] += 1
            d["changes_applied"] += sum(counts.values())
            for topic, n in counts.items():
                table = self.table_of(topic)
                d["rows_by_table"][table] = d["rows_by_table"].get(table, 0) + n
            d["last_batch_id"] = batch_id
            d["last_batch_duration_s"] = round(duration_s, 3)
            if newest_ts is not None and (d["newest_source_ts_ms"] is None
                                          or newest_ts > d["newest_source_ts_ms"]):
                d["newest_source_ts_ms"] = newest_ts
        self.write()

    def set_state(self, state: str, error: str | None = None) -> None:
        with self._lock:
            self.doc["state"] = state
            self.doc["error"] = error
        self.write()

    def write(self) -> None:
        lag = self._lag()
        with self._lock:
            if lag is not None:
                self.doc["lag"] = lag
            self.doc["updated_ms"] = _now()
            write_status(self.path, self.doc)

    def _lag(self) -> dict[str, int] | None:
        if self.topics_dir is None or not self.topics_dir.is_dir():
            return None
        from headwater.pipeline.source import end_offsets

        try:
            ends = end_offsets(self.topics_dir, self.topics_glob)
        except OSError:
            return None
        return {t: max(0, end - self.read_to.get(t, 0)) for t, end in sorted(ends.items())}

    def start(self) -> PipelineMonitor:
        """The heartbeat: the file rewritten every second (lag, `updated_ms`)."""
        self.write()
        self._thread = threading.Thread(target=self._beat, name="pipeline-status",
                                        daemon=True)
        self._thread.start()
        return self

    def _beat(self) -> None:
        while not self._stop.wait(INTERVAL_S):
            with contextlib.suppress(OSError):  # the next beat tries again
                self.write()

    def close(self, state: str, error: str | None = None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.set_state(state, error)


def freshness_s(doc: Mapping[str, Any], now_ms: int | None = None) -> float | None:
    """Seconds between now and the newest source change applied (None: nothing applied)."""
    ts = doc.get("newest_source_ts_ms")
    if not isinstance(ts, int):
        return None
    return max(0, (_now() if now_ms is None else now_ms) - ts) / 1000


def _now() -> int:
    return int(time.time() * 1000)
