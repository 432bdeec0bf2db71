"""Credentials in the connection string never reach a log line, an error or `status`."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater.connectors.mongodb.config import load_mongodb_config
from headwater.testing.capture_thread import Capture
from headwater.testing.localmongo import LocalMongo

from .conftest import wait

pytestmark = pytest.mark.integration

PASSWORD = "s3cr3t-Pa55"


@pytest.fixture(scope="module")
def auth_mongo() -> Iterator[LocalMongo]:
    server = LocalMongo(auth=True, password=PASSWORD).start()
    try:
        yield server
    finally:
        server.cleanup()


def _config(tmp: Path, connection: str) -> Path:
    path = tmp / "c.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in {
        "connector.class": "mongodb", "topic.prefix": "sec",
        "mongodb.connection.string": connection, "database.include.list": "secure",
        "offset.storage.file.filename": str(tmp / "off.json"),
        "headwater.topics.dir": str(tmp / "topics"), "poll.interval.ms": "100",
        "cursor.max.await.time.ms": "100", "mongodb.server.selection.timeout.ms": "3000",
    }.items()))
    return path


def test_credentials_are_masked_in_logs_and_status(auth_mongo: LocalMongo, tmp_path: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    client = auth_mongo.client()
    client.secure.c.insert_one({"_id": 1})
    path = _config(tmp_path, auth_mongo.connection_string)
    cap = Capture(path).start()
    try:
        wait(lambda: cap.runtime.metrics.snapshot_completed, "the snapshot", capture=cap)
        client.secure.c.insert_one({"_id": 2})
        wait(lambda: cap.runtime.metrics.total_events_seen >= 2, "the insert", capture=cap)
    finally:
        cap.stop()
        client.close()
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "connecting to mongodb://headwater:********@127.0.0.1" in text
    assert PASSWORD not in text
    cfg, _ = load_mongodb_config(path)
    shown = repr(cfg.redacted()) + repr(cfg)
    assert PASSWORD not in shown and "headwater:********@" in shown
    status_cfg, _ = load_mongodb_config(path, secrets=False)
    assert PASSWORD not in repr(status_cfg.redacted())


def test_a_wrong_password_fails_without_showing_it(auth_mongo: LocalMongo,
                                                   tmp_path: Path) -> None:
    wrong = auth_mongo.connection_string.replace(PASSWORD, "Wr0ng-Secret")
    cap = Capture(_config(tmp_path, wrong)).start()
    cap.thread.join(60)
    assert cap.error is not None
    assert "Wr0ng-Secret" not in str(cap.error) and "Authentication failed" in str(cap.error)
