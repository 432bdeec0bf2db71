"""capture.start.op.time on a real MongoDB: with snapshot.mode=no_data and no stored position,
streaming starts at that operation time (Debezium's startAtOperationTime, its
shouldConsumeEventsFromTimestamp scenario); a restart resumes from the stored token; a value
below -1 (Debezium's "unset") is refused."""

from __future__ import annotations

import json

import pytest

from headwater.capture import load_connector_config

from .conftest import MongoEnv, wait

pytestmark = pytest.mark.integration


def _ids(env: MongoEnv) -> list[int]:
    return [json.loads(v["after"])["_id"] for v in env.values("c") if v["op"] == "c"]


def test_streaming_starts_at_the_operation_time(env: MongoEnv) -> None:
    coll = env.db.c
    coll.insert_one({"_id": 0})
    with env.client.start_session() as session:
        coll.insert_one({"_id": 1}, session=session)
        at = session.operation_time  # the insert of document 1
    assert at is not None
    coll.insert_one({"_id": 2})
    extra = {"snapshot.mode": "no_data", "capture.start.op.time": (at.time << 32) + at.inc}
    capture = env.capture(extra)
    try:
        wait(lambda: len(_ids(env)) >= 2 and env.offset(), "documents 1 and 2",
             capture=capture)
    finally:
        capture.stop()
    assert _ids(env) == [1, 2]
    coll.insert_one({"_id": 3})  # while stopped: the stored token wins over the op time
    capture = env.capture(extra)
    try:
        wait(lambda: 3 in _ids(env), "document 3 after the restart", capture=capture)
    finally:
        capture.stop()
    assert _ids(env) == [1, 2, 3]


def test_a_negative_operation_time_other_than_unset_is_refused(env: MongoEnv) -> None:
    with pytest.raises(Exception, match=r"capture.start.op.time"):
        load_connector_config(env.config({"capture.start.op.time": -2}))


@pytest.mark.parametrize("mode", ["initial", "no_data", "when_needed"])
def test_a_stored_operation_time_without_a_token_starts_there(env: MongoEnv, mode: str
                                                             ) -> None:
    """Debezium's order: resume token, else the offset's sec/ord (startAtOperationTime), else
    capture.start.op.time.  A stream's start position is stored so (streams/positions.py): it
    starts there in every snapshot mode, with no snapshot, and ignores capture.start.op.time."""
    from headwater.engine.offsets import FileOffsetStore

    coll = env.db.c
    coll.insert_one({"_id": 0})
    with env.client.start_session() as session:
        coll.insert_one({"_id": 1}, session=session)
        at = session.operation_time
    assert at is not None
    coll.insert_one({"_id": 2})
    FileOffsetStore(env.offsets, {"server_id": env.prefix}).save(
        {"sec": at.time, "ord": at.inc, "snapshot_completed": True})
    capture = env.capture({"snapshot.mode": mode, "capture.start.op.time": 1})
    try:
        wait(lambda: len(_ids(env)) >= 2 and env.offset().get("resume_token"),
             "documents 1 and 2, then a token in the offset", capture=capture)
    finally:
        capture.stop()
    assert _ids(env) == [1, 2]
    assert not [v for v in env.values("c") if v["op"] == "r"], "a snapshot was taken"
