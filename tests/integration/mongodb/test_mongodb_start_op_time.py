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
