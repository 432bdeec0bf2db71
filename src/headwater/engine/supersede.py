"""Superseding an interrupted initial snapshot: the deletes that make its restart exact.

An initial snapshot that stops part-way (kill -9, SIGTERM, a crash) has already written READ
events. Its next run cannot resume it: the PostgreSQL slot is created again with a new exported
snapshot, MariaDB opens a new consistent snapshot, and both read every row again. The new READs
supersede the old ones for every row that still exists. A row deleted between the two attempts
is read by neither again, so its old READ would stay in the topic for ever (a phantom row in
every replay and target). Debezium behaves that way.

Headwater closes the gap in the runtime, the same way for every connector:

1. Before the first READ of a data snapshot, the runtime stores `snapshot_started` in the
   offsets, durably (the writer's acknowledgement awaited): the end offset of every topic at
   that moment, per partition where the store has partitions (`TopicRanges.ends`). An
   attempt that finds it already stored (an earlier attempt did not complete) keeps the earlier
   one, so the range covers every aborted attempt.
2. `Supersede.open` reads the aborted attempts' keys back from the topic store, from those
   offsets up to where the new snapshot starts writing, as 64-bit hashes of the canonical key
   payload (`key_hash`), kept sorted in 256 buckets with one status byte each: the keys of
   their READs, and of the changes an attempt streamed after its last READ but before its
   completed snapshot's offset was stored (with the Kafka store that offset is stored once the
   brokers acknowledged everything before it, and streaming goes on meanwhile: a row such an
   attempt streamed as created and that was deleted before the new snapshot was a phantom,
   fault-harness seed 301057).  A key whose last aborted event is a delete needs none.

The topic store is behind `TopicRanges` (its ends, and the records of a range): the local log
(`LocalTopicRanges`, one position per topic, stored as `{topic: offset}`) or Kafka
(`headwater.kafka.ranges.KafkaTopicRanges`, one per partition, stored as
`{topic: {partition: offset}}`; the deletes go to their READ's partition, being keyed alike).
3. While the new snapshot is written, the writer marks every key it writes as seen
   (`Supersede.observe`).
4. Once the new snapshot's events are durable, and before its completing offset is stored,
   `Supersede.deletes` reads the aborted range again and emits, once per key the new snapshot did
   not write, a delete (`op=d`, `before` = the aborted READ's row, `source` = the new
   snapshot's source block of that topic with `snapshot=true`, or the last aborted READ's when
   the new snapshot wrote nothing there), plus a tombstone when `tombstones.on.delete` is set.

The deletes carry a snapshot position no earlier than any aborted READ and below every stream
event, so the pipeline's ordering (connectors/*/ordering.py) applies them after the aborted
reads and before any later change of the key; their `op` differs from the READs', so the
re-delivery key never merges them. A crash while they are written leaves `snapshot_started`
in the offsets: the next run snapshots again and computes them again.

Memory: 8 bytes per READ event in the aborted range (its key hash) plus 1 status byte, about
9-10 bytes each with the arrays' growth; sorting works one bucket (1/256) at a time. The new
snapshot's size does not count. Two different keys collide with probability about
n_aborted x n_new / 2^64; a collision only leaves that one phantom row in place. Keys that are
JSON null (tables without a primary key) cannot be superseded and are left alone.
"""

from __future__ import annotations

import bisect
import json
import logging
import threading
import time
from array import array
from collections.abc import Iterator, Mapping
from hashlib import blake2b
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import orjson

from headwater.model.topic import HeaderBytes, RenderedBatch, TopicBatch, TopicRecord
from headwater.topics import reader

log = logging.getLogger("headwater.engine.supersede")

STARTED_KEY = "snapshot_started"
# The ops of an event that leaves its row existing.
_ALIVE: frozenset[str] = frozenset({"r", "c", "u"})
_BUCKETS = 256
_SEEN = 1
_DELETED = 2


def _loads(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:  # e.g. an integer beyond 64 bits
        return json.loads(raw)


def _dumps(doc: Any) -> bytes:
    try:
        return orjson.dumps(doc)
    except TypeError:
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


def _payload(doc: Any) -> Any:
    """The payload of a Connect JSON document with or without its schema envelope."""
    if isinstance(doc, dict) and "schema" in doc and "payload" in doc:
        return doc["payload"]
    return doc


def key_hash(raw: bytes) -> int:
    """64-bit hash of a key's payload in canonical form (sorted fields, orjson spelling), so the
    same key hashes the same with or without its schema envelope."""
    canon = orjson.dumps(_payload(_loads(raw)), option=orjson.OPT_SORT_KEYS)
    return int.from_bytes(blake2b(canon, digest_size=8).digest(), "little")


# topic -> partition -> offset (the local log: partition 0 only)
Positions = dict[str, dict[int, int]]


class StoredRecord(NamedTuple):
    """A record read back from the topic store."""

    key: bytes | None
    value: bytes | None
    headers: HeaderBytes


class TopicRanges(Protocol):
    """What superseding needs of a topic store: where its topics end, and a range's records.
    `partitioned`: positions are per partition (Kafka), else one per topic (the local log)."""

    @property
    def partitioned(self) -> bool: ...

    def ends(self, stopping: threading.Event) -> Positions:
        """The next offset of every partition of the topics the capture may write (a store
        that waits for its servers gives up once `stopping` is set)."""
        ...

    def read(self, topic: str, ranges: Mapping[int, tuple[int, int]]
             ) -> Iterator[tuple[bytes | None, bytes | None, HeaderBytes]]:
        """(key, value, headers) of the records of `topic` in each partition's [start, end)
        range, in offset order per partition."""
        ...


def topic_ends(root: Path) -> dict[str, int]:
    """The next offset of every topic in the log (what `snapshot_started` records)."""
    if not Path(root).exists():
        return {}
    return {t.name: t.end_offset for t in reader.list_topics(root)}


class LocalTopicRanges:
    """The local topic log's `TopicRanges`: one partition (0) per topic."""

    partitioned = False

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def ends(self, stopping: threading.Event) -> Positions:
        return {t: {0: end} for t, end in topic_ends(self.root).items()}

    def read(self, topic: str, ranges: Mapping[int, tuple[int, int]]
             ) -> Iterator[StoredRecord]:
        if 0 not in ranges:
            return
        start, end = ranges[0]
        for rec in reader.read(self.root, topic, from_offset=start):
            if rec.offset >= end:
                break
            yield StoredRecord(rec.key, rec.value, rec.headers)


def started_offsets(offset: Mapping[str, Any] | None, *, partitioned: bool = False
                    ) -> Positions | None:
    """The `snapshot_started` record of a stored offset (an earlier snapshot did not
    complete), or None.  A record of the other kind of store (per partition where the store
    has one position per topic, or the reverse: the topic store was changed between the
    attempts) is of no use here, since the aborted READs are not in this store: warned about,
    and None."""
    if not offset:
        return None
    started = offset.get(STARTED_KEY)
    if not isinstance(started, dict):
        return None
    out: Positions = {}
    for topic, where in started.items():
        if isinstance(where, dict) != partitioned:
            log.warning("snapshot restart: the interrupted snapshot's positions (%s: %s) are "
                        "of %s; its READ events are not in this topic store and are not "
                        "superseded", topic, where,
                        "a store with partitions (Kafka)" if isinstance(where, dict)
                        else "the local topic log")
            return None
        out[str(topic)] = ({int(p): int(o) for p, o in where.items()}
                           if isinstance(where, dict) else {0: int(where)})
    return out


def marked_offset(offset: Mapping[str, Any] | None, started: Positions, *,
                  partitioned: bool = False) -> dict[str, Any]:
    """The offset stored before a data snapshot's first READ: the previous one (a connector
    still finds its old position there), not completed, with `snapshot_started`."""
    marked = dict(offset or {})
    marked["snapshot_completed"] = False
    marked[STARTED_KEY] = {
        t: {str(p): o for p, o in sorted(parts.items())} if partitioned else parts.get(0, 0)
        for t, parts in started.items()}
    return marked


class _Keys:
    """One topic's aborted READ keys: sorted unique 64-bit hashes in buckets, a status each."""

    def __init__(self) -> None:
        self.buckets = [array("Q") for _ in range(_BUCKETS)]
        self.status: list[bytearray] = []
        self.count = 0

    def add(self, h: int) -> None:
        self.buckets[h >> 56].append(h)

    def seal(self) -> None:
        for i, bucket in enumerate(self.buckets):
            unique = array("Q", sorted(set(bucket)))  # one bucket (~1/256) at a time
            self.buckets[i] = unique
            self.status.append(bytearray(len(unique)))
            self.count += len(unique)

    def find(self, h: int) -> tuple[bytearray, int] | None:
        bucket = self.buckets[h >> 56]
        i = bisect.bisect_left(bucket, h)
        if i < len(bucket) and bucket[i] == h:
            return self.status[h >> 56], i
        return None


class Supersede:
    """The supersede step of one snapshot run (see the module docstring)."""

    def __init__(self, store: TopicRanges, started: Positions, ends: Positions, *,
                 tombstones_on_delete: bool, batch_size: int) -> None:
        self.store = store
        self.tombstones = tombstones_on_delete
        self.batch_size = max(1, batch_size)
        self.ranges: dict[str, dict[int, tuple[int, int]]] = {}
        for t, parts in ends.items():
            begun = started.get(t, {})
            spans = {p: (begun.get(p, 0), end) for p, end in parts.items()
                     if begun.get(p, 0) < end}
            if spans:
                self.ranges[t] = spans
        self.keys: dict[str, _Keys] = {}
        self.last_value: dict[str, bytes] = {}  # the new snapshot's last event per topic
        self.aborted_reads = 0
        # keys whose last aborted event is a delete: gone already, no delete of ours
        self.gone: dict[str, set[int]] = {}

    @property
    def empty(self) -> bool:
        return not self.ranges

    def _aborted(self, topic: str, ops: frozenset[str] = _ALIVE
                 ) -> Iterator[tuple[StoredRecord, Any]]:
        """(record, value document) of each aborted event of `ops` with a key in `topic`'s
        range: a row the aborted attempt wrote as existing (a READ, or a change it streamed
        after its snapshot's last READ, before the completed snapshot's offset was stored)."""
        for item in self.store.read(topic, self.ranges[topic]):
            rec = StoredRecord(*item)
            if rec.key is None or rec.value is None or rec.key == b"null":
                continue
            doc = _loads(rec.value)
            payload = _payload(doc)
            if isinstance(payload, dict) and payload.get("op") in ops:
                yield rec, doc

    def open(self) -> Supersede:
        """Reads the aborted attempts' READ keys (step 2)."""
        started = time.monotonic()
        for topic in sorted(self.ranges):
            keys = _Keys()
            gone: set[int] = set()
            for rec, doc in self._aborted(topic, _ALIVE | {"d"}):
                assert rec.key is not None
                h = key_hash(rec.key)
                if _payload(doc).get("op") == "d":
                    gone.add(h)
                    continue
                gone.discard(h)
                keys.add(h)
                self.aborted_reads += 1
            keys.seal()
            if gone:
                self.gone[topic] = gone
            if keys.count:
                self.keys[topic] = keys
        log.info("snapshot restart: %d READ events (%d keys) of an interrupted snapshot in %d "
                 "topics, read in %.1fs; the keys this snapshot does not read again get a delete",
                 self.aborted_reads, sum(k.count for k in self.keys.values()), len(self.keys),
                 time.monotonic() - started)
        return self

    def observe(self, out: RenderedBatch) -> None:
        """The writer's hook: marks the keys of the new snapshot's events as seen (step 3)."""
        for topic, records in out.items():
            keys = self.keys.get(topic)
            if keys is None:
                continue
            last = None
            for rec in records:
                if rec.key is None or rec.value is None:
                    continue
                last = rec.value
                found = keys.find(key_hash(rec.key))
                if found is not None:
                    found[0][found[1]] = _SEEN
            if last is not None:
                self.last_value[topic] = last

    def _reference_source(self, topic: str) -> dict[str, Any] | None:
        raw = self.last_value.get(topic)
        source: Any = None
        if raw is None:  # the new snapshot wrote nothing there: the last aborted READ's
            for _, doc in self._aborted(topic):
                source = _payload(doc).get("source")
        else:
            source = _payload(_loads(raw)).get("source")
        return dict(source) if isinstance(source, dict) else None

    def deletes(self) -> Iterator[TopicBatch]:
        """The deletes (and tombstones) for every aborted key not read again (step 4), in
        batches of about `batch_size` events."""
        emitted = 0
        for topic in sorted(self.keys):
            keys = self.keys[topic]
            reference = self._reference_source(topic)
            if reference is None:
                continue
            reference["snapshot"] = "true"
            batch: list[TopicRecord] = []
            gone = self.gone.get(topic, set())
            for rec, doc in self._aborted(topic):
                assert rec.key is not None
                h = key_hash(rec.key)
                found = keys.find(h)
                if found is None or found[0][found[1]] != 0 or h in gone:
                    continue
                found[0][found[1]] = _DELETED
                now = int(time.time() * 1000)
                value = _dumps(_delete_of(doc, reference, now))
                batch.append(TopicRecord(rec.key, value, now, rec.headers))
                if self.tombstones:
                    batch.append(TopicRecord(rec.key, None, now, rec.headers))
                emitted += 1
                if len(batch) >= self.batch_size:
                    yield {topic: batch}
                    batch = []
            if batch:
                yield {topic: batch}
        log.info("snapshot restart: %d deletes for rows the interrupted snapshot read and this "
                 "one did not find", emitted)


def _delete_of(doc: Any, source: dict[str, Any], now_ms: int) -> Any:
    """The delete event of an aborted READ: its row as `before`, the given source block."""
    payload = _payload(doc)
    out: dict[str, Any] = {}
    for name, value in payload.items():
        if name == "before":
            out[name] = payload.get("after")
        elif name in {"after", "transaction"}:
            out[name] = None
        elif name == "source":
            out[name] = source
        elif name == "op":
            out[name] = "d"
        elif name == "ts_ms":
            out[name] = now_ms
        elif name == "ts_us":
            out[name] = now_ms * 1000
        elif name == "ts_ns":
            out[name] = now_ms * 1_000_000
        else:
            out[name] = value
    if payload is doc:
        return out
    return {**doc, "payload": out}


class SnapshotRestarts:
    """What the runtime needs to supersede interrupted snapshots: the topic store's ranges and
    the format's delete settings (built by `headwater.capture.build_runtime`)."""

    def __init__(self, store: TopicRanges, *, tombstones_on_delete: bool,
                 batch_size: int) -> None:
        self.store = store
        self.tombstones_on_delete = tombstones_on_delete
        self.batch_size = batch_size

    def ends(self, stopping: threading.Event) -> Positions:
        return self.store.ends(stopping)

    def started(self, offset: Mapping[str, Any] | None) -> Positions | None:
        """The interrupted attempts' start in a stored offset (None: there was none)."""
        return started_offsets(offset, partitioned=self.store.partitioned)

    def marked(self, offset: Mapping[str, Any] | None, started: Positions) -> dict[str, Any]:
        return marked_offset(offset, started, partitioned=self.store.partitioned)

    def supersede(self, started: Positions, ends: Positions) -> Supersede:
        return Supersede(self.store, started, ends,
                         tombstones_on_delete=self.tombstones_on_delete,
                         batch_size=self.batch_size)
