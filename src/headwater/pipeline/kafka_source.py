"""Kafka as the pipeline reads it: its positions for the pipeline's Spark source
(`KafkaPositions`, the `kafka` store of `positions`) and the driver's reader of a batch's
ranges (`KafkaTopics`).

Spark's offsets are `{"<topic>#<partition>": next offset}` (a flat map, so that
`runner.checkpointed_ranges` reads them from the offset log, as for the local log), a
micro-batch is one row per partition `(topic#partition, start, end)`, and `foreachBatch` reads
those ranges: a big batch
with Spark's own Kafka source on the executors (`kafka_tasks`), a small one with a
confluent-kafka consumer in the driver (`fetch`), both into the same decoders as the local log:
column-wise (`kafka_batch.arrow_lines`, `columnar.Lines`) or event by event.  The offsets stay
this source's (not Spark's Kafka streaming source's) so that a checkpoint reads the same
whichever reader a batch takes.

This module is imported by each of Spark's Python data-source workers (the Reader's globals
are pickled by reference), so it imports nothing heavy: the decoders (numpy, numba, pandas:
seconds per worker start on a loaded machine) live in `kafka_batch`, which only the driver's
`foreachBatch` imports.

Exactly-once: a range is a fixed set of records (Kafka offsets are immutable), Spark replays
an unfinished batch with the same ranges after a crash, and the targets skip a batch id they
already committed.  A partition that ends before the checkpoint (a recreated topic, records
removed by retention before they were read) is an error, never a silent skip.

Offsets within a topic are unique per partition only; the decoders need one ascending,
unique offset per event of a topic (their sequences end with it), so events carry the
*virtual offset* `offset << 16 | partition`: per partition in offset order, as the keys of one
partition need, and unique across the topic.

Value formats: values are JSON documents (JsonConverter).  Another converter (Avro with a
schema registry) plugs in as a `ValueDecoder` turning a record's key/value bytes into that JSON
form before decoding; `JSON` is the identity.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Iterator, Mapping

import orjson

from headwater.pipeline.source import is_table_topic, plan

PARTITION_BITS = 16

# (topic, key bytes, value bytes) -> (key JSON, value JSON): the converter seam.
ValueDecoder = Callable[[str, bytes | None, bytes | None], tuple[bytes | None, bytes | None]]
# (virtual offsets, keys, values) of fetched records, one list each
Columns = tuple[list[int], list[bytes | None], list[bytes | None]]

# Records per chunk of `KafkaTopics.fetch_chunks`
CHUNK = 8192

# The driver reader's fetch settings, under the pipeline's own (which win): the batch's ranges
# are read whole and at once, so each fetch request brings up to 16 MB of a partition (1 MB by
# default: a round trip to each leader per ~800 records of the bench) and the prefetch queue
# holds up to 256 MB (64 MB by default).
FETCH: Mapping[str, str] = {"fetch.message.max.bytes": str(16 << 20),
                            "queued.max.messages.kbytes": str(256 << 10)}


def json_decoder(_topic: str, key: bytes | None, value: bytes | None
                 ) -> tuple[bytes | None, bytes | None]:
    """JsonConverter's records are already the decoders' JSON documents."""
    return key, value


def slot(topic: str, partition: int) -> str:
    return f"{topic}#{partition}"


def split_slot(name: str) -> tuple[str, int]:
    topic, _, partition = name.rpartition("#")
    return topic, int(partition)


def virtual_offset(offset: int, partition: int) -> int:
    return offset << PARTITION_BITS | partition


def join_chunks(chunks: Iterable[tuple[int, Columns]]) -> Columns:
    """`KafkaTopics.fetch_chunks`' chunks as one `Columns`: partition after partition, each
    partition's chunks in the order given (offset order)."""
    by_partition: dict[int, list[Columns]] = {}
    for partition, chunk in chunks:
        by_partition.setdefault(partition, []).append(chunk)
    out: Columns = ([], [], [])
    for p in sorted(by_partition):
        for offsets, keys, values in by_partition[p]:
            out[0].extend(offsets)
            out[1].extend(keys)
            out[2].extend(values)
    return out


def fetching(config: Mapping[str, str]) -> dict[str, str]:
    """A consumer's settings: the pipeline's, with FETCH's sizes where it sets none."""
    own = {k: v for k, v in FETCH.items() if k not in config
           and not (k == "fetch.message.max.bytes"
                    and "max.partition.fetch.bytes" in config)}  # (its alias)
    return {**own, **config}


class KafkaTopics:
    """The Kafka side of the source: which partitions exist and where they end; fetching."""

    def __init__(self, consumer_config: Mapping[str, str], patterns: str) -> None:
        from confluent_kafka import Consumer

        self.config = dict(consumer_config)
        self.consumer = Consumer(fetching(self.config))
        self.globs = [p.strip() for p in patterns.split(",") if p.strip()]

    def partitions(self) -> list[tuple[str, int]]:
        metadata = self.consumer.list_topics(timeout=30)
        out: list[tuple[str, int]] = []
        for name, topic in metadata.topics.items():
            if topic.error is not None or name.startswith("__") or not is_table_topic(name):
                continue
            if any(fnmatch.fnmatchcase(name, g) for g in self.globs):
                out.extend((name, p) for p in topic.partitions)
        return sorted(out)

    def end_offsets(self) -> dict[str, int]:
        from headwater.kafka.consume import end_offsets

        return {slot(t, p): o for (t, p), o in end_offsets(self.consumer,
                                                          self.partitions()).items()}

    def fetch(self, topic: str, ranges: Mapping[int, tuple[int, int]],
              decode: ValueDecoder = json_decoder
              ) -> list[tuple[int, bytes | None, bytes | None]]:
        """(virtual offset, key, value) of the records of `ranges` ({partition: (start, end)}),
        partition after partition, in offset order."""
        return list(zip(*self.fetch_columns(topic, ranges, decode), strict=True))

    def fetch_columns(self, topic: str, ranges: Mapping[int, tuple[int, int]],
                      decode: ValueDecoder = json_decoder) -> Columns:
        """The records of `ranges` as three lists (virtual offsets, keys, values), partition
        after partition, in offset order: what `fetch` gives, without a tuple per record."""
        return join_chunks(self.fetch_chunks(topic, ranges, decode))

    def fetch_chunks(self, topic: str, ranges: Mapping[int, tuple[int, int]],
                     decode: ValueDecoder = json_decoder, size: int = CHUNK
                     ) -> Iterator[tuple[int, Columns]]:
        """The records of `ranges` in chunks of up to `size` records of one partition, as they
        arrive: `(partition, (virtual offsets, keys, values))`, each partition's chunks in
        offset order, partitions interleaved.  A chunk is given while the client fetches the
        next records in its own threads, so what the caller does with it overlaps the wait
        for the brokers."""
        from headwater.kafka.consume import read_until_end

        starts = {(topic, p): s for p, (s, e) in ranges.items() if e > s}
        stops = {(topic, p): e for p, (s, e) in ranges.items() if e > s}
        expect = {p: s for (_t, p), s in starts.items()}
        got: dict[int, Columns] = {p: ([], [], []) for p in expect}
        identity = decode is json_decoder  # no call per record for JsonConverter's records
        for msg in read_until_end(self.consumer, starts, stops):
            partition, offset = msg.partition(), msg.offset()
            if offset != expect[partition] and not _compacted_gap(offset, expect[partition]):
                raise RuntimeError(f"{topic}[{partition}]: offset {offset} where "
                                   f"{expect[partition]} was expected")
            expect[partition] = offset + 1
            offsets, keys, values = chunk = got[partition]
            offsets.append(offset << PARTITION_BITS | partition)
            if identity:
                keys.append(msg.key())
                values.append(msg.value())
            else:
                key, value = decode(topic, msg.key(), msg.value())
                keys.append(key)
                values.append(value)
            if len(offsets) >= size:
                yield partition, chunk
                got[partition] = ([], [], [])
        short = {(topic, p): (expect[p], e) for (_t, p), e in stops.items() if expect[p] < e}
        if short:
            raise RuntimeError(f"records missing from Kafka in the checkpointed ranges: {short}")
        for p in sorted(got):
            if got[p][0]:
                yield p, got[p]

    def close(self) -> None:
        self.consumer.close()


def _compacted_gap(got: int, expected: int) -> bool:
    # A compacted topic (or a transaction marker) leaves offsets unused: later is fine.
    return got > expected


def group_ranges(ranges: Mapping[str, tuple[int, int]]) -> dict[str, dict[int, tuple[int, int]]]:
    """`{topic#partition: range}` as `{topic: {partition: range}}`."""
    out: dict[str, dict[int, tuple[int, int]]] = {}
    for name, rng in ranges.items():
        topic, partition = split_slot(name)
        out.setdefault(topic, {})[partition] = rng
    return out


class KafkaPositions:
    """Kafka's positions for the pipeline's Spark source (`positions`): `{"<topic>#<partition>":
    next offset}` of the table topics matching the option `topics`, read with the consumer
    settings of the option `consumer` (JSON)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.config = orjson.loads(options["consumer"])
        self.pattern = options.get("topics", "*")
        self._topics: KafkaTopics | None = None

    def topics(self) -> KafkaTopics:
        if self._topics is None:
            self._topics = KafkaTopics(self.config, self.pattern)
        return self._topics

    def initial(self) -> dict[str, int]:
        return {}

    def latest(self) -> dict[str, int]:
        return self.topics().end_offsets()

    def plan(self, start: dict[str, int], latest: dict[str, int], rows: int | None
             ) -> dict[str, int]:
        for name, read in sorted(start.items()):
            if latest.get(name, read) < read:
                raise RuntimeError(
                    f"Kafka partition {name} ends at offset {latest[name]} but this "
                    f"pipeline's checkpoint has read up to {read}: the topic was recreated "
                    "or truncated; start with a new checkpoint and target")
        return plan(start, latest, rows)

    def committed(self, end: dict[str, int]) -> None:
        pass  # (the pipeline keeps its offsets in Spark's checkpoint, not in a group)

    def close(self) -> None:
        if self._topics is not None:
            self._topics.close()
