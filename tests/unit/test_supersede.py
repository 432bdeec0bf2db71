"""The supersede step of an interrupted snapshot (engine/supersede.py), on a real topic log."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import orjson

from headwater.engine.supersede import (
    STARTED_KEY,
    LocalTopicRanges,
    Supersede,
    key_hash,
    marked_offset,
    started_offsets,
    topic_ends,
)
from headwater.model.topic import TopicRecord
from headwater.testing.replay import replay
from headwater.topics.log import TopicLog

T = "srv.public.t"


def _read(k: int, lsn: int, *, schema: bool = False, op: str = "r") -> TopicRecord:
    payload = {"before": None, "after": {"id": k, "v": f"x{k}"},
               "source": {"lsn": lsn, "snapshot": "true"}, "transaction": None, "op": op,
               "ts_ms": 1, "ts_us": 1000, "ts_ns": 1000000}
    key: Any = {"id": k}
    value: Any = payload
    if schema:
        key = {"schema": {"type": "struct"}, "payload": key}
        value = {"schema": {"type": "struct", "name": "env"}, "payload": payload}
    return TopicRecord(orjson.dumps(key), orjson.dumps(value), 1,
                       (("__debezium.context.connectorName", b'"postgresql"'),))


def _append(root: Path, records: list[TopicRecord]) -> None:
    with TopicLog(root) as log:
        log.append({T: records})


def test_key_hash_ignores_schema_envelope_and_field_order() -> None:
    assert key_hash(b'{"a":1,"b":"x"}') == key_hash(
        b'{"schema":{"type":"struct"},"payload":{"b":"x","a":1}}')
    assert key_hash(b'{"a":1}') != key_hash(b'{"a":2}')


def test_offsets_mark_and_read_back() -> None:
    marked = marked_offset({"lsn": 5, "snapshot_completed": True}, {T: {0: 3}})
    assert marked == {"lsn": 5, "snapshot_completed": False, STARTED_KEY: {T: 3}}
    assert started_offsets(marked) == {T: {0: 3}}
    assert started_offsets({"lsn": 5}) is None
    assert started_offsets(None) is None
    # a store with partitions (Kafka): one position per partition, JSON keys being strings
    kafka = marked_offset({"lsn": 5}, {T: {1: 7, 0: 2}}, partitioned=True)
    assert kafka[STARTED_KEY] == {T: {"0": 2, "1": 7}}
    assert started_offsets(kafka, partitioned=True) == {T: {0: 2, 1: 7}}
    # the other store's positions (the store changed between the attempts): not used here
    assert started_offsets(kafka) is None
    assert started_offsets(marked, partitioned=True) is None


def test_unseen_keys_of_two_aborted_attempts_get_one_delete_each(tmp_path: Path) -> None:
    root = tmp_path / "topics"
    _append(root, [_read(0, 1, op="c")])  # before the snapshot: not in the range
    store = LocalTopicRanges(root)
    started = store.ends(threading.Event())
    assert started == {T: {0: 1}}
    _append(root, [_read(k, 10) for k in range(1, 6)])  # attempt 1 read 1..5, then stopped
    _append(root, [_read(k, 20) for k in range(1, 4)])  # attempt 2 read 1..3, then stopped
    ends = store.ends(threading.Event())
    sup = Supersede(store, started, ends, tombstones_on_delete=True, batch_size=2).open()
    assert sup.aborted_reads == 8
    new = [_read(k, 30) for k in (1, 3, 6)]  # keys 2, 4 and 5 were deleted meanwhile
    sup.observe({T: new})
    _append(root, new)
    batches = list(sup.deletes())
    assert all(len(b[T]) <= 3 for b in batches)
    out = [r for b in batches for r in b[T]]
    _append(root, out)
    deletes = [orjson.loads(r.value) for r in out if r.value is not None]
    assert [d["before"]["id"] for d in deletes] == [2, 4, 5]
    assert all(d["op"] == "d" and d["after"] is None for d in deletes)
    # the new snapshot's position, marked as a snapshot event, and a new processing time
    assert all(d["source"] == {"lsn": 30, "snapshot": "true"} for d in deletes)
    assert all(d["ts_ms"] > 1 for d in deletes)
    assert [r.value for r in out].count(None) == 3  # tombstones.on.delete
    assert out[0].headers == (("__debezium.context.connectorName", b'"postgresql"'),)
    assert sorted(dict(k)["id"] for k in replay(root, T)) == [0, 1, 3, 6]


def test_schema_envelope_without_tombstones_and_no_new_reads(tmp_path: Path) -> None:
    """A topic the new snapshot does not write (its table was dropped): every aborted key is
    deleted, with the last aborted READ's source block."""
    root = tmp_path / "topics"
    _append(root, [_read(k, 10 + k, schema=True) for k in range(1, 4)])
    store = LocalTopicRanges(root)
    sup = Supersede(store, {}, store.ends(threading.Event()), tombstones_on_delete=False,
                    batch_size=100)
    sup.open().observe({})
    out = [r for b in sup.deletes() for r in b[T]]
    docs = [orjson.loads(r.value) for r in out if r.value is not None]
    assert len(docs) == len(out) == 3
    assert all(d["schema"] == {"type": "struct", "name": "env"} for d in docs)
    assert [d["payload"]["source"]["lsn"] for d in docs] == [13, 13, 13]
    _append(root, out)
    assert replay(root, T) == {}


def test_nothing_to_do_without_an_aborted_range(tmp_path: Path) -> None:
    root = tmp_path / "topics"
    _append(root, [_read(1, 1)])
    store = LocalTopicRanges(root)
    ends = store.ends(threading.Event())
    assert Supersede(store, ends, ends, tombstones_on_delete=True, batch_size=1).empty
    assert topic_ends(tmp_path / "missing") == {}
    assert LocalTopicRanges(tmp_path / "missing").ends(threading.Event()) == {}


def test_changes_streamed_by_an_aborted_attempt_are_superseded_too(tmp_path: Path) -> None:
    """An attempt that finished its READs and streamed on before its completed snapshot's
    offset was stored (the Kafka store stores it once the brokers acknowledged everything
    before it) is aborted all the same: a row it streamed as created, or updated, that is
    gone by the new snapshot gets a delete (fault-harness seed 301057: three such rows were
    phantoms); a row whose last aborted event is a delete gets none."""
    root = tmp_path / "topics"
    store = LocalTopicRanges(root)
    started = store.ends(threading.Event())
    _append(root, [_read(k, 10) for k in (1, 2)])  # the aborted attempt's READs
    _append(root, [_read(7, 20, op="c"), _read(8, 21, op="c"), _read(2, 22, op="u"),
                   _read(9, 23, op="c"), _read(9, 24, op="d")])  # ... then streamed
    sup = Supersede(store, started, store.ends(threading.Event()), tombstones_on_delete=False,
                    batch_size=100).open()
    new = [_read(1, 30)]  # 2, 7 and 8 deleted meanwhile; 9 was deleted in the stream
    sup.observe({T: new})
    _append(root, new)
    out = [r for b in sup.deletes() for r in b[T]]
    deletes = [orjson.loads(r.value) for r in out if r.value is not None]
    assert sorted(d["before"]["id"] for d in deletes) == [2, 7, 8]
    assert all(d["source"] == {"lsn": 30, "snapshot": "true"} for d in deletes)
    _append(root, out)
    assert sorted(dict(k)["id"] for k in replay(root, T)) == [1]
