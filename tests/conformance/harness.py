"""One test's capture set-up on top of a driver: config files, captures (thread or process),
the topic log read back, and the replay oracle."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from headwater.testing.capture_thread import Capture
from headwater.testing.replay import events
from headwater.testing.timeouts import scaled
from headwater.topics import reader

from .driver import SourceDriver, properties_text

Event = tuple[reader.Record, Any, Any]


class Harness:
    def __init__(self, driver: SourceDriver, tmp: Path) -> None:
        self.driver = driver
        self.tmp = tmp
        self.topics = tmp / "topics"
        self.offsets = tmp / "offsets.json"

    # -- running a capture ----------------------------------------------------------------------
    def config(self, extra: Mapping[str, object] | None = None,
               tables: Sequence[str] | None = None) -> Path:
        path = self.tmp / "connector.properties"
        path.write_text(properties_text(
            self.driver.properties(self.topics, self.offsets, tables, extra)))
        return path

    def capture(self, extra: Mapping[str, object] | None = None,
                tables: Sequence[str] | None = None) -> Capture:
        return Capture(self.config(extra, tables)).start()

    @staticmethod
    def process(config: Path) -> subprocess.Popen[bytes]:
        """The capture as its own process (`headwater run`), to be killed."""
        return subprocess.Popen(
            [sys.executable, "-m", "headwater.cli", "run", str(config), "--log-level", "WARNING"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    # -- reading back ---------------------------------------------------------------------------
    def records(self, table: str) -> list[Event]:
        return self.records_of(self.driver.topic(table))

    def records_of(self, topic: str) -> list[Event]:
        """(record, key, value) in offset order; a driver whose events are not relational
        rows (MongoDB's JSON documents) makes them so with its `normalize`."""
        normalize = getattr(self.driver, "normalize", None)
        if normalize is None:
            return list(events(self.topics, topic))
        return [(r, *normalize(k, v)) for r, k, v in events(self.topics, topic)]

    def values(self, table: str) -> list[Any]:
        """Event values of a table's topic, tombstones left out."""
        return [v for _, _, v in self.records(table) if v is not None]

    def count(self, table: str) -> int:
        return self.count_of(self.driver.topic(table))

    def count_of(self, topic: str) -> int:
        return sum(t.record_count for t in reader.list_topics(self.topics) if t.name == topic)

    def topic_names(self) -> set[str]:
        return {t.name for t in reader.list_topics(self.topics)}

    def offset(self) -> dict[str, Any]:
        try:
            doc = json.loads(self.offsets.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}
        return dict(doc.get("offset") or {})

    def replayed(self, table: str, column: str = "ver") -> dict[Any, Any]:
        """key `id` -> `column`, as replaying the topic gives it."""
        rows: dict[Any, Any] = {}
        for _, key, value in self.records(table):
            if value is None:
                continue
            if value["op"] in ("c", "r", "u"):
                rows[key["id"]] = value["after"][column]
            elif value["op"] == "d":
                rows.pop(key["id"], None)
            elif value["op"] == "t":
                rows.clear()
        return rows

    def source(self, table: str, column: str = "ver") -> dict[Any, Any]:
        return {r["id"]: r[column] for r in self.driver.rows(table)}

    def converge(self, table: str, timeout: float = 120,
                 capture: Capture | None = None) -> None:
        """Waits for the replayed topic to equal the source table; says how they differ."""
        deadline = time.monotonic() + scaled(timeout)
        while True:
            if capture is not None and capture.error is not None:
                raise AssertionError(f"capture failed: {capture.error!r}")
            got, want = self.replayed(table), self.source(table)
            if got == want:
                return
            if time.monotonic() > deadline:
                bad = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
                raise AssertionError(
                    f"{len(bad)} keys differ (key, topic, source): "
                    f"{[(k, got.get(k), want.get(k)) for k in bad[:10]]}")
            time.sleep(0.5)


def wait(predicate: Callable[[], Any], what: str, timeout: float = 60,
         capture: Capture | None = None, interval: float = 0.1) -> Any:
    """Polls `predicate` until truthy; fails at once if the capture thread died."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        if capture is not None and capture.error is not None:
            raise AssertionError(f"capture failed while waiting for {what}: {capture.error!r}")
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
