"""A record on its way to a topic: what every format produces and every topic writer takes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, overload

# Record headers: (name, value bytes as the `header.converter` wrote them, None for a null
# value), in order (headwater.converters.headers).
HeaderBytes = tuple[tuple[str, bytes | None], ...]


class TopicRecord(NamedTuple):
    """One record for a topic: key and value bytes (None = null key / tombstone), headers,
    and the partition a transform chose (Debezium's PartitionRouting; None: by key)."""

    key: bytes | None
    value: bytes | None
    timestamp: int  # ms since the epoch
    headers: HeaderBytes = ()
    partition: int | None = None


# Records grouped by topic, each list in emission order: the unit formats produce and topic
# writers append (grouping once in the format avoids a per-record regrouping pass).
TopicBatch = dict[str, list[TopicRecord]]

# What writers take and rendered batches travel as: a format's TopicBatch, or one whose topics
# hold PackedRecords (a column-wise snapshot's) or RecordChains of both.  Read-only: writers
# and metrics only iterate and count.
RenderedBatch = Mapping[str, Sequence[TopicRecord]]


def _offsets(raw: bytes) -> memoryview:
    return memoryview(raw).cast("q")


class PackedRecords(Sequence[TopicRecord]):
    """Records of one topic rendered into shared buffers: record i's key is `key_prefix` +
    keys[key_off[i]:key_off[i + 1]], its value `value_prefix` + the same slice of `values`
    (the offsets: native int64s, rows + 1 of them); one timestamp and headers for all.

    Why: the column-wise snapshot's kernels render a whole batch of records into one buffer;
    holding them as such spares a bytes object and a TopicRecord per record between the
    kernels and the topic log, which appends the whole batch with one compiled call
    (`topics._crcfill.pack_lines`), and a worker process hands its batches to the writer as
    a few buffers (the prefixes, the Connect schemas, ~90% of the bytes, once).  Any other
    consumer (Kafka, files, the metrics) reads it as a sequence of TopicRecords."""

    __slots__ = ("headers", "key_off", "key_prefix", "keys", "timestamp", "value_off",
                 "value_prefix", "values")

    def __init__(self, key_prefix: bytes, keys: bytes, key_off: bytes, value_prefix: bytes,
                 values: bytes, value_off: bytes, timestamp: int,
                 headers: HeaderBytes = ()) -> None:
        if len(key_off) != len(value_off) or len(key_off) < 8 or len(key_off) % 8:
            raise ValueError("PackedRecords: the offsets are not rows + 1 int64s each")
        self.key_prefix, self.keys, self.key_off = key_prefix, keys, key_off
        self.value_prefix, self.values, self.value_off = value_prefix, values, value_off
        self.timestamp, self.headers = timestamp, headers

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (PackedRecords, (self.key_prefix, self.keys, self.key_off, self.value_prefix,
                                self.values, self.value_off, self.timestamp, self.headers))

    def __len__(self) -> int:
        return len(self.key_off) // 8 - 1

    @overload
    def __getitem__(self, i: int) -> TopicRecord: ...

    @overload
    def __getitem__(self, i: slice) -> list[TopicRecord]: ...

    def __getitem__(self, i: int | slice) -> TopicRecord | list[TopicRecord]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("PackedRecords index out of range")
        ko, vo = _offsets(self.key_off), _offsets(self.value_off)
        return TopicRecord(self.key_prefix + self.keys[ko[i]:ko[i + 1]],
                           self.value_prefix + self.values[vo[i]:vo[i + 1]],
                           self.timestamp, self.headers)

    def __iter__(self) -> Iterator[TopicRecord]:
        ts, headers = self.timestamp, self.headers
        for key, value in self.pairs():
            yield TopicRecord(key, value, ts, headers)

    def pairs(self) -> Iterator[tuple[bytes, bytes]]:
        """Each record's key and value bytes, without a TopicRecord (Kafka's producer takes
        the timestamp and headers, the same for all, apart)."""
        ko, vo = _offsets(self.key_off).tolist(), _offsets(self.value_off).tolist()
        kp, keys, vp, values = self.key_prefix, self.keys, self.value_prefix, self.values
        for i in range(len(ko) - 1):
            yield kp + keys[ko[i]:ko[i + 1]], vp + values[vo[i]:vo[i + 1]]


class RecordChain(Sequence[TopicRecord]):
    """One topic's records of several rendered batches, in order, as they were (lists of
    TopicRecords and PackedRecords): what the runtime's writer merges its batches into when a
    PackedRecords is among them, so none is expanded into TopicRecords on the way."""

    __slots__ = ("_len", "parts")

    def __init__(self, parts: Iterable[Sequence[TopicRecord]] = ()) -> None:
        self.parts: list[Sequence[TopicRecord]] = []
        self._len = 0
        for part in parts:
            self.add(part)

    def add(self, records: Sequence[TopicRecord]) -> None:
        """Appends `records` (PackedRecords as they are, others copied into a list)."""
        if isinstance(records, RecordChain):
            for part in records.parts:
                self.add(part)
            return
        if not records:
            return
        last = self.parts[-1] if self.parts else None
        if isinstance(records, PackedRecords):
            self.parts.append(records)
        elif isinstance(last, list):
            last.extend(records)
        else:
            self.parts.append(list(records))
        self._len += len(records)

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, i: int) -> TopicRecord: ...

    @overload
    def __getitem__(self, i: slice) -> list[TopicRecord]: ...

    def __getitem__(self, i: int | slice) -> TopicRecord | list[TopicRecord]:
        if isinstance(i, slice):
            return list(self)[i]
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("RecordChain index out of range")
        for part in self.parts:
            if i < len(part):
                return part[i]
            i -= len(part)
        raise AssertionError("unreachable")

    def __iter__(self) -> Iterator[TopicRecord]:
        for part in self.parts:
            yield from part


def record_parts(records: Sequence[TopicRecord]) -> Sequence[Sequence[TopicRecord]]:
    """A topic's records as the parts they were rendered in: a RecordChain's parts, else the
    records as one part; a consumer with a faster way for PackedRecords takes it part by part."""
    return records.parts if isinstance(records, RecordChain) else (records,)
