"""Where the `headwater` Spark source reads change events: the local topic log or Kafka.

A store names its read positions by *slot*: a topic for the local log, `topic#partition` for
Kafka (`kafka_source.slot`), each with a range of offsets.  It cuts ranges into Spark
partitions, reads a few records to find the table's columns, and decodes a range into the
changelog rows (`columnar.CHANGELOG_META` + row columns + where the rows come from) by the
pipeline's decoders: column-wise where the range has that shape, else event by event.

Stores are pickled into the executors' Python workers: they hold only paths and settings.
"""

from __future__ import annotations

import fnmatch
import itertools
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc

from headwater.pipeline import columnar, kafka_batch, kafka_source, tasks
from headwater.pipeline.columnar import NotColumnar
from headwater.pipeline.decode import decode_topic
from headwater.pipeline.source import is_table_topic, read_range
from headwater.topics import reader

TOPIC = "__topic"
PARTITION = "__partition"
SOURCE_TABLE = "__source_table"

Record = tuple[int, bytes | None, bytes | None]


class SourceOptionError(ValueError):
    """An option of the `headwater` source is missing or wrong (the message names it)."""


class Store(Protocol):
    def ranges(self, spec: str) -> dict[str, tuple[int, int]]: ...
    def cut(self, ranges: Mapping[str, tuple[int, int]], per_part: int
            ) -> list[tuple[str, int, int]]: ...
    def records(self, slot: str, start: int, end: int) -> list[Record]: ...
    def decode(self, slot: str, start: int, end: int) -> pa.Table | None: ...


def _matching(names: list[str], spec: str, where: str) -> set[str]:
    """The table topics among `names` matching a name or glob of `spec`; a name or glob that
    matches none is an error (a typo would otherwise read nothing)."""
    out: set[str] = set()
    tables = [n for n in names if is_table_topic(n) and not n.startswith("__")]
    for glob in (g.strip() for g in spec.split(",") if g.strip()):
        hits = {n for n in tables if fnmatch.fnmatchcase(n, glob)}
        if not hits:
            raise SourceOptionError(f"headwater source: option topic: no topic in {where} "
                                    f"matches {glob!r}")
        out |= hits
    return out


def _changelog(topic: str, decoded: columnar.ColumnarChanges | None,
               records: Iterator[Record] | list[Record] | None) -> pa.Table | None:
    """The rows of a range decoded column-wise (`decoded`), or event by event from `records`
    when that is None, with the source table added."""
    if records is not None:
        changes = decode_topic(topic, records)
        if not changes.events:
            return None
        table = columnar.changelog_table(changes)
        schema_name, table_name = changes.schema_name, changes.table_name
    elif decoded is None:
        return None
    else:
        table, schema_name, table_name = decoded.rows, decoded.schema_name, decoded.table_name
    n = table.num_rows
    source_table = ".".join(p for p in (schema_name, table_name) if p) or None
    table = table.append_column(TOPIC, pa.array([topic] * n, pa.string()))
    return table.append_column(SOURCE_TABLE, pa.array([source_table] * n, pa.string()))


class LocalStore:
    """The local topic log under `root` (one partition per topic)."""

    def __init__(self, root: Path) -> None:
        self.root = str(root)

    def ranges(self, spec: str) -> dict[str, tuple[int, int]]:
        topics = reader.list_topics(Path(self.root))
        chosen = _matching([t.name for t in topics], spec, self.root)
        return {t.name: (t.start_offset, t.end_offset) for t in topics if t.name in chosen}

    def cut(self, ranges: Mapping[str, tuple[int, int]], per_part: int
            ) -> list[tuple[str, int, int]]:
        """At most `per_part` records a partition, cut at segment starts where one is near
        (the pipeline's executor-stage planner, `tasks.plan`)."""
        parts = tasks.plan(Path(self.root), dict(ranges), os.cpu_count() or 1,
                           min(per_part, tasks.MIN_TASK_RECORDS), per_part)
        return [(t.topic, t.start, t.end) for t in parts]

    def records(self, slot: str, start: int, end: int) -> list[Record]:
        return list(read_range(Path(self.root), slot, start, end))

    def decode(self, slot: str, start: int, end: int) -> pa.Table | None:
        root = Path(self.root)
        try:
            decoded = columnar.decode_changelog(
                slot, columnar.scan(root, slot, start, end, columnar.Positions()))
            table = _changelog(slot, decoded, None)
        except NotColumnar:
            table = _changelog(slot, None, read_range(root, slot, start, end))
        if table is None:
            return None
        return table.append_column(PARTITION, pa.array([0] * table.num_rows, pa.int32()))


class KafkaStore:
    """Kafka topics (JsonConverter records), read with confluent-kafka as the pipeline's Kafka
    source reads them (`kafka_source.KafkaTopics`)."""

    GROUP = "headwater-spark-source"

    def __init__(self, config: Mapping[str, str]) -> None:
        if not config.get("bootstrap.servers"):
            raise SourceOptionError("headwater source: store kafka needs option "
                                    "kafka.bootstrap.servers")
        self.config = {"group.id": self.GROUP, **config, "enable.auto.commit": "false",
                       "enable.partition.eof": "true", "auto.offset.reset": "earliest"}

    def _topics(self, spec: str = "*") -> kafka_source.KafkaTopics:
        return kafka_source.KafkaTopics(self.config, spec)

    def ranges(self, spec: str) -> dict[str, tuple[int, int]]:
        from confluent_kafka import TopicPartition

        topics = self._topics()
        try:
            found = topics.partitions()
            chosen = _matching(sorted({t for t, _p in found}), spec,
                               self.config["bootstrap.servers"])
            out: dict[str, tuple[int, int]] = {}
            for t, p in found:
                if t in chosen:
                    low, high = topics.consumer.get_watermark_offsets(TopicPartition(t, p),
                                                                      timeout=30)
                    out[kafka_source.slot(t, p)] = (low, high)
            return out
        finally:
            topics.close()

    def cut(self, ranges: Mapping[str, tuple[int, int]], per_part: int
            ) -> list[tuple[str, int, int]]:
        out = []
        for slot, (start, end) in sorted(ranges.items()):
            n = max(1, -(-(end - start) // per_part))
            cuts = [start + (end - start) * i // n for i in range(n + 1)]
            out += [(slot, a, b) for a, b in itertools.pairwise(cuts) if b > a]
        return out

    def _fetch(self, slot: str, start: int, end: int) -> list[Record]:
        """The records with the decoders' virtual offsets (`kafka_source.virtual_offset`)."""
        topic, partition = kafka_source.split_slot(slot)
        topics = self._topics(topic)
        try:
            return topics.fetch(topic, {partition: (start, end)})
        finally:
            topics.close()

    def records(self, slot: str, start: int, end: int) -> list[Record]:
        return [(o >> kafka_source.PARTITION_BITS, k, v)
                for o, k, v in self._fetch(slot, start, end)]

    def decode(self, slot: str, start: int, end: int) -> pa.Table | None:
        topic, partition = kafka_source.split_slot(slot)
        records = self._fetch(slot, start, end)
        try:
            table = _changelog(topic, columnar.decode_changelog(
                topic, kafka_batch.lines(records)), None)
        except NotColumnar:
            table = _changelog(topic, None, records)
        if table is None:
            return None
        # the decoders' offsets are virtual (`kafka_source.virtual_offset`): the partition's
        at = table.column_names.index("__offset")
        offsets = pc.shift_right(table.column(at), kafka_source.PARTITION_BITS)
        table = table.set_column(at, "__offset", offsets)
        return table.append_column(PARTITION, pa.array([partition] * table.num_rows,
                                                       pa.int32()))
