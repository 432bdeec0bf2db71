"""Fixtures: one MongoDB replica set per test session, a fresh database per test.

Every test's connector captures only its own database (database.include.list), so tests share
the server's oplog without seeing each other's changes.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.testing.capture_thread import Capture
from headwater.testing.localmongo import LocalMongo
from headwater.testing.replay import events
from headwater.testing.timeouts import scaled

_counter = itertools.count()


@pytest.fixture(scope="session")
def mongo() -> Iterator[LocalMongo]:
    server = LocalMongo().start()
    try:
        yield server
    finally:
        server.cleanup()


class MongoEnv:
    """One test's database, config file and data directories."""

    def __init__(self, server: LocalMongo, tmp: Path) -> None:
        self.server = server
        self.db_name = f"hw_{next(_counter)}"
        self.prefix = "mg"
        self.tmp = tmp
        self.topics = tmp / "topics"
        self.offsets = tmp / "offsets.json"
        self.client = server.client()
        self.db = self.client[self.db_name]

    def topic(self, collection: str) -> str:
        return f"{self.prefix}.{self.db_name}.{collection}"

    def properties(self, extra: dict[str, Any] | None = None) -> dict[str, str]:
        props = {
            "connector.class": "io.debezium.connector.mongodb.MongoDbConnector",
            "mongodb.connection.string": self.server.connection_string,
            "database.include.list": self.db_name,
            "topic.prefix": self.prefix,
            "offset.storage.file.filename": str(self.offsets),
            "headwater.topics.dir": str(self.topics),
            "headwater.topics.segment.ms": "200",
            "poll.interval.ms": "100",
            "cursor.max.await.time.ms": "100",
            "retriable.restart.connector.wait.ms": "200",
        }
        props.update({k: str(v) for k, v in (extra or {}).items()})
        return props

    def config(self, extra: dict[str, Any] | None = None) -> Path:
        path = self.tmp / "connector.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self.properties(extra).items()))
        return path

    def capture(self, extra: dict[str, Any] | None = None) -> Capture:
        return Capture(self.config(extra)).start()

    def records(self, collection: str) -> list[tuple[Any, Any, Any]]:
        topic = self.topic(collection)
        if not (self.topics / topic).exists():
            return []
        return list(events(self.topics, topic))

    def records_of(self, topic: str) -> list[tuple[Any, Any, Any]]:
        if not (self.topics / topic).exists():
            return []
        return list(events(self.topics, topic))

    def values(self, collection: str) -> list[Any]:
        return [v for _, _, v in self.records(collection) if v is not None]

    def replayed(self, collection: str) -> dict[Any, Any]:
        """_id -> document, as replaying the topic gives it (after JSON parsed)."""
        docs: dict[Any, Any] = {}
        for _, key, value in self.records(collection):
            if value is None:
                continue
            ident = json.loads(key["id"])
            if value["op"] == "d":
                docs.pop(ident, None)
            elif value["after"] is not None:
                docs[ident] = json.loads(value["after"])
        return docs

    def source(self, collection: str) -> dict[Any, Any]:
        return {d["_id"]: d for d in self.db[collection].find()}

    def offset(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self.offsets.read_text()).get("offset") or {})
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def close(self) -> None:
        try:
            self.client.drop_database(self.db_name)
        finally:
            self.client.close()


@pytest.fixture()
def env(mongo: LocalMongo, tmp_path: Path) -> Iterator[MongoEnv]:
    e = MongoEnv(mongo, tmp_path)
    try:
        yield e
    finally:
        e.close()


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
