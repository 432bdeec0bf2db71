"""Where a MongoDB capture starts and resumes: the snapshot's hand-over to the change stream
under writes, restarts after the last durable event, a resume token the oplog no longer has,
and the snapshot modes."""

from __future__ import annotations

import base64
import json
import threading
import time

import bson
import pytest

from .conftest import MongoEnv, wait

pytestmark = pytest.mark.integration

DOCS = 3000


class Writer(threading.Thread):
    """Updates (a fresh global version each), inserts and deletes until stopped; records what
    it committed, per key."""

    def __init__(self, env: MongoEnv) -> None:
        super().__init__(daemon=True)
        self.coll = env.db.c
        self.stop = threading.Event()
        self.version = 0
        self.committed: dict[int, list[int | None]] = {}
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            key = DOCS
            while not self.stop.is_set():
                self.version += 1
                v = self.version
                target = (v * 7919) % DOCS
                if v % 10 == 0:
                    key += 1
                    self.coll.insert_one({"_id": key, "ver": v})
                    self.committed.setdefault(key, []).append(v)
                elif v % 37 == 0:
                    if self.coll.delete_one({"_id": target}).deleted_count:
                        self.committed.setdefault(target, []).append(None)
                elif self.coll.update_one({"_id": target}, {"$set": {"ver": v}}).matched_count:
                    self.committed.setdefault(target, []).append(v)
        except BaseException as exc:
            self.error = exc


def test_snapshot_hands_over_to_the_stream_without_a_gap(env: MongoEnv) -> None:
    env.db.c.insert_many([{"_id": i, "ver": 0} for i in range(DOCS)])
    writer = Writer(env)
    writer.start()
    wait(lambda: writer.version > 200, "the writer")
    cap = env.capture({"capture.mode": "change_streams", "max.batch.size": 100,
                       "snapshot.fetch.size": 100, "snapshot.max.threads": 2})
    try:
        wait(lambda: cap.runtime.metrics.snapshot_completed, "the snapshot", 120, cap)
        after = writer.version
        wait(lambda: writer.version > after + 300, "writes after the snapshot", capture=cap)
        writer.stop.set()
        writer.join(30)
        assert writer.error is None
        final = env.source("c")
        wait(lambda: {k: d.get("ver") for k, d in replay_changes(env).items()} == {
            k: d["ver"] for k, d in final.items()}, "the topic to converge", 120, cap)
    finally:
        writer.stop.set()
        cap.stop()
    reads: dict[int, int] = {}
    streamed: dict[int, list[int | None]] = {}
    for _, key, value in env.records("c"):
        if value is None:
            continue
        ident = json.loads(key["id"])
        if value["op"] == "r":
            reads[ident] = json.loads(value["after"])["ver"]
        elif value["op"] == "d":
            streamed.setdefault(ident, []).append(None)
        elif value["op"] == "c":
            streamed.setdefault(ident, []).append(json.loads(value["after"])["ver"])
        else:
            streamed.setdefault(ident, []).append(
                json.loads(value["updateDescription"]["updatedFields"])["ver"])
    assert len(reads) > DOCS // 2
    gaps = []
    for key, versions in writer.committed.items():
        have = streamed.get(key, [])
        # No gap: every change the snapshot read did not include is in the stream, in order;
        # changes it did include may repeat in the stream (Debezium's hand-over does too).
        read = reads.get(key)
        start = versions.index(read) + 1 if read in versions else 0
        missing = versions[start:]
        if have[len(have) - len(missing):] != missing or len(have) > len(versions):
            gaps.append((key, read, versions, have))
    assert not gaps, f"{len(gaps)} keys (key, read, committed, streamed): {gaps[:5]}"


def replay_changes(env: MongoEnv) -> dict[int, dict[str, int]]:
    """_id -> the document's `ver` from reads, creates and updatedFields."""
    docs: dict[int, dict[str, int]] = {}
    for _, key, value in env.records("c"):
        if value is None:
            continue
        ident = json.loads(key["id"])
        if value["op"] == "d":
            docs.pop(ident, None)
        elif value["op"] in ("r", "c"):
            docs[ident] = json.loads(value["after"])
        else:
            docs.setdefault(ident, {}).update(
                json.loads(value["updateDescription"]["updatedFields"]))
    return docs


def test_restart_resumes_right_after_the_last_event(env: MongoEnv) -> None:
    props = {"snapshot.mode": "no_data", "max.batch.size": 7, "max.queue.size": 20,
             "provide.transaction.metadata": "true"}
    cap = env.capture(props)
    try:
        wait(lambda: cap.runtime.metrics.connected, "streaming", capture=cap)
        for i in range(50):
            env.db.c.insert_one({"_id": i})
        with env.client.start_session() as s, s.start_transaction():
            for i in range(50, 60):
                env.db.c.insert_one({"_id": i}, session=s)
        wait(lambda: len(env.values("c")) >= 60, "the first inserts", capture=cap)
    finally:
        cap.stop()
    first_offset = env.offset()
    for i in range(60, 100):  # while stopped
        env.db.c.insert_one({"_id": i})
    cap = env.capture(props)
    try:
        wait(lambda: len(env.values("c")) >= 100, "the inserts made while stopped", capture=cap)
        env.db.c.insert_one({"_id": 100})
        wait(lambda: len(env.values("c")) >= 101, "a new insert", capture=cap)
        time.sleep(0.5)
    finally:
        cap.stop()
    ids = [json.loads(v["after"])["_id"] for v in env.values("c")]
    assert ids == list(range(101)), "lost or repeated events across the restart"
    assert first_offset["resume_token"] != env.offset()["resume_token"]
    tx = [v["transaction"] for v in env.values("c")[50:60]]
    assert [t["total_order"] for t in tx] == list(range(1, 11))


def test_restart_inside_a_transaction_continues_its_counts(env: MongoEnv) -> None:
    props = {"snapshot.mode": "no_data", "provide.transaction.metadata": "true"}
    cap = env.capture(props)
    try:
        wait(lambda: cap.runtime.metrics.connected, "streaming", capture=cap)
        with env.client.start_session() as s, s.start_transaction():
            for i in range(20):
                env.db.c.insert_one({"_id": i}, session=s)
        wait(lambda: len(env.values("c")) >= 20, "the transaction", capture=cap)
    finally:
        cap.stop()
    values = env.values("c")
    offset = env.offset()
    # Rewind the offset into the transaction: as if the connector stopped after event 8.
    token = values[7]["source"]
    assert token["txnNumber"] is not None
    tokens = _tokens(env, 20)
    offset.update({"resume_token": tokens[7], "transaction_id": f"{token['lsid']}:"
                   f"{token['txnNumber']}",
                   f"transaction_data_collection_order_{env.db_name}.c": 8})
    doc = json.loads(env.offsets.read_text())
    doc["offset"] = offset
    env.offsets.write_text(json.dumps(doc))
    env.topics.rename(env.tmp / "first-topics")
    cap = env.capture(props)
    try:
        wait(lambda: len(env.values("c")) >= 12, "the rest of the transaction", capture=cap)
        env.db.d.insert_one({"_id": 0})  # the next event ends the transaction (as in Debezium)
        wait(lambda: len(env.records_of(f"{env.prefix}.transaction")) >= 1, "END", capture=cap)
    finally:
        cap.stop()
    rest = env.values("c")
    assert [json.loads(v["after"])["_id"] for v in rest] == list(range(8, 20))
    assert [v["transaction"]["total_order"] for v in rest] == list(range(9, 21))
    (end,) = [v for _, _, v in env.records_of(f"{env.prefix}.transaction")]
    assert (end["status"], end["event_count"]) == ("END", 20)


def _tokens(env: MongoEnv, n: int) -> list[str]:
    """The resume tokens (offset form) of the first `n` events of collection c."""
    out: list[str] = []
    with env.db.c.watch(start_at_operation_time=bson.Timestamp(1, 1)) as stream:
        while len(out) < n:
            event = stream.next()
            out.append(base64.b64encode(bson.encode(event["_id"])).decode())
    return out


def _ancient_offset(env: MongoEnv) -> str:
    """An offset whose resume token is older than anything in the oplog."""
    with env.db.watch() as stream:
        env.db.c.insert_one({"_id": "probe"})
        token = stream.next()["_id"]
    data = token["_data"]
    old = data[:2] + "0000000100000001" + data[18:]
    text = base64.b64encode(bson.encode({"_data": old})).decode()
    env.offsets.write_text(json.dumps({"version": 1, "partition": {"server_id": env.prefix},
                                       "offset": {"sec": 1, "ord": 1, "resume_token": text,
                                                  "snapshot_completed": True}}))
    return text


def test_lost_resume_token_is_a_clear_error(env: MongoEnv) -> None:
    env.db.c.insert_one({"_id": 1})
    token = _ancient_offset(env)
    cap = env.capture({"errors.max.retries": 0})
    cap.thread.join(60)
    assert cap.error is not None, "the capture started from a token the oplog lost"
    message = str(cap.error)
    assert token in message and "no longer in the oplog" in message
    assert "when_needed" in message
    assert env.values("c") == []


def test_lost_resume_token_with_when_needed_takes_a_new_snapshot(env: MongoEnv) -> None:
    env.db.c.insert_one({"_id": 1})
    _ancient_offset(env)
    cap = env.capture({"snapshot.mode": "when_needed"})
    try:
        wait(lambda: cap.runtime.metrics.snapshot_completed, "a new snapshot", capture=cap)
        env.db.c.insert_one({"_id": 2})
        wait(lambda: len(env.values("c")) >= 3, "streaming after it", capture=cap)
    finally:
        cap.stop()
    assert [(v["op"], json.loads(v["after"])["_id"]) for v in env.values("c")] == [
        ("r", 1), ("r", "probe"), ("c", 2)]


@pytest.mark.parametrize(("mode", "ops"), [("initial", ["r", "c"]), ("no_data", ["c"]),
                                           ("never", ["c"]), ("initial_only", ["r"])])
def test_snapshot_modes(env: MongoEnv, mode: str, ops: list[str]) -> None:
    env.db.c.insert_one({"_id": 1})
    cap = env.capture({"snapshot.mode": mode})
    try:
        if mode == "initial_only":
            cap.thread.join(60)
            assert cap.error is None and not cap.thread.is_alive()
        else:
            wait(lambda: cap.runtime.metrics.connected, "streaming", capture=cap)
            env.db.c.insert_one({"_id": 2})
            wait(lambda: env.values("c") and env.values("c")[-1]["op"] == "c", "the insert",
                 capture=cap)
    finally:
        cap.stop()
    assert [v["op"] for v in env.values("c")] == ops
