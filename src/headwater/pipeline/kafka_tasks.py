"""A Kafka micro-batch read, decoded and netted as Spark tasks: the Kafka reader of `tasks`.

The batch's `{topic#partition: (start, end)}` ranges (the checkpoint's, as for the driver's
reader, so exactly once is unchanged) are read by Spark's own Kafka source
(`spark.read.format("kafka")` with `assign`, `startingOffsets` and `endingOffsets`, on the JVM
executors), and each of its Spark partitions (one Kafka partition, or a slice of one) goes to
`mapInArrow`: the Python task takes the Arrow key and value columns as they come, builds the
column-wise decoder's `Lines` from their buffers without a Python step per record
(`kafka_batch.arrow_lines`) and runs the same stage as the local log's tasks
(`tasks.run_part`: decode, net within the part, stage Parquet; the event-by-event decoder for
a part outside the column-wise shape).  The driver then nets across parts in Arrow
(`tasks.net_across_parts`).  A refused part (a MongoDB document topic, a decode error) leaves
its topic to the driver's reader (`kafka_batch`), which meets the same error and raises it as
it always has.

Client settings: Spark's Kafka source is Kafka's Java client, which takes settings by Java
names, and the pipeline's Kafka settings are librdkafka's; only `bootstrap.servers` (with a
plaintext protocol) is passed on, and a pipeline with any other client setting (TLS, SASL)
keeps the driver's reader (`spark_options`).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from headwater.pipeline import columnar
from headwater.pipeline.kafka_source import (
    PARTITION_BITS,
    ValueDecoder,
    group_ranges,
    json_decoder,
)
from headwater.pipeline.tasks import (
    MAX_TASK_RECORDS,
    MIN_TASK_RECORDS,
    PartResult,
    Record,
    Refused,
    by_topic,
    clear_staging,
    run_part,
    staging_dir,
)

log = logging.getLogger("headwater.pipeline.kafka_tasks")

# The settings confluent-kafka and Kafka's Java client both name so, with the same meaning;
# the rest of `KafkaSettings.consumer_config` is the driver reader's own.
_OWN = frozenset({"group.id", "enable.auto.commit", "enable.partition.eof", "auto.offset.reset"})

RESULT = pa.schema([
    ("topic", pa.string()), ("part", pa.int32()), ("file", pa.string()),
    ("events", pa.int64()), ("refused", pa.string()), ("fields", pa.string()),
    ("key_columns", pa.list_(pa.string())), ("schema_name", pa.string()),
    ("table_name", pa.string()), ("toast", pa.list_(pa.string())),
])
RESULT_DDL = ("topic string, part int, file string, events long, refused string, "
              "fields string, key_columns array<string>, schema_name string, "
              "table_name string, toast array<string>")


# The executors' consumers fetch as much per request as the driver's reader
# (kafka_source.FETCH): the Java client's defaults (1 MiB a partition, 500 records a poll)
# cost its JVM and the brokers a request per MiB.
EXECUTOR_FETCH: Mapping[str, str] = {"kafka.max.partition.fetch.bytes": str(16 << 20),
                                     "kafka.fetch.max.bytes": str(64 << 20),
                                     "kafka.max.poll.records": "10000"}


def spark_options(consumer: Mapping[str, str]) -> dict[str, str] | None:
    """The `kafka.*` options of Spark's Kafka source for the pipeline's consumer settings;
    None when they hold a setting the Java client would need under another name."""
    protocol = consumer.get("security.protocol", "plaintext").lower()
    other = set(consumer) - _OWN - {"bootstrap.servers", "security.protocol"}
    if protocol != "plaintext" or other or not consumer.get("bootstrap.servers"):
        return None
    return {"kafka.bootstrap.servers": consumer["bootstrap.servers"], **EXECUTOR_FETCH}


def task_count(sizes: list[int], parallelism: int) -> int:
    """Spark's Kafka source's `minPartitions` for ranges of these sizes (one per Kafka
    partition).  As `tasks.plan`: at least a task per core for a big batch, none above
    MAX_TASK_RECORDS; and as many tasks as a multiple of the partitions and of that count
    together, so that the tasks come out of even size and fill every core's turn.  Spark splits
    each range into `round(size / total * minPartitions)` parts: three partitions on two cores
    were three tasks, two running and then one alone, a third of the stage's time with one
    core idle (the local log's plan cuts such a batch in two).  Not above one task per
    MIN_TASK_RECORDS // 4 records (then a task per partition, or the plain count if more)."""
    sizes = [n for n in sizes if n > 0]
    total, count = sum(sizes), len(sizes)
    if not count:
        return 1
    wanted = max(1, min(parallelism, total // MIN_TASK_RECORDS), -(-total // MAX_TASK_RECORDS))
    even = math.lcm(count, wanted)
    if even > count and total // even >= MIN_TASK_RECORDS // 4:
        return even
    return max(count, wanted)


class KafkaPart:
    """One Spark partition of Spark's Kafka source (records of one Kafka partition, in offset
    order), as `tasks.Part`: offsets are the decoders' virtual offsets
    (`kafka_source.virtual_offset`)."""

    def __init__(self, part: int, table: pa.Table, decode: ValueDecoder = json_decoder) -> None:
        self.topic: str = table.column("topic")[0].as_py()
        self.part = part
        offsets = table.column("offset").to_numpy().astype(np.int64)
        partitions = table.column("partition").to_numpy().astype(np.int64)
        self.offsets = offsets << PARTITION_BITS | partitions
        # the columns as Spark's Arrow batches brought them: `arrow_lines` cuts each chunk in
        # place (one array of them first was a copy of every key and value)
        self.keys: pa.ChunkedArray = table.column("key")
        self.values: pa.ChunkedArray = table.column("value")
        if len(self.offsets) > 1 and not (np.diff(self.offsets) > 0).all():
            order = np.argsort(self.offsets, kind="stable")  # (Spark keeps offset order)
            self.offsets = self.offsets[order]
            self.keys, self.values = self.keys.take(order), self.values.take(order)
        self.decode = decode

    def _check_events(self) -> None:
        from headwater.pipeline.kafka_batch import is_document_value

        first = _first_valid(self.values)  # (drop_null copied every value to read one)
        if first is not None and is_document_value(first):
            raise Refused(f"topic {self.topic}: MongoDB document events")

    def lines(self) -> columnar.Lines:
        from headwater.pipeline.kafka_batch import arrow_lines, lines

        self._check_events()
        if self.decode is not json_decoder:  # another converter: record by record into JSON
            return lines(self.records())
        return arrow_lines(self.offsets, self.keys, self.values)

    def records(self) -> list[Record]:
        self._check_events()
        decode = self.decode
        return [(int(o), *decode(self.topic, k, v)) for o, k, v in zip(
            self.offsets.tolist(), self.keys.to_pylist(), self.values.to_pylist(), strict=True)]

    def staged_name(self) -> str:
        # virtual offsets (offset << bits | partition) of its first and last record: the same
        # records whatever Spark's split of the range in a replay
        if not len(self.offsets):
            return f"part-empty-{self.part}.parquet"
        return f"part-{int(self.offsets[0])}-{int(self.offsets[-1])}.parquet"


def _first_valid(column: pa.ChunkedArray) -> bytes | None:
    for chunk in column.chunks:
        if chunk.null_count < len(chunk):
            at = 0 if not chunk.null_count else int(np.argmax(
                np.asarray(chunk.is_valid().to_numpy(zero_copy_only=False), bool)))
            value: bytes = chunk[at].as_py()
            return value
    return None


def _task(staging: str, mode: str, converter_props: dict[str, str]
          ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The `mapInArrow` function: one Spark partition in, one `PartResult` row out."""

    def work(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from headwater.pipeline.kafka_decoders import decoder_for

        chunks = [b for b in batches if b.num_rows]
        if not chunks:
            return
        context = TaskContext.get()
        part = context.partitionId() if context is not None else 0
        decode = decoder_for(converter_props) if converter_props else json_decoder
        result = run_part(KafkaPart(part, pa.Table.from_batches(chunks), decode),
                          Path(staging), mode)
        yield pa.RecordBatch.from_pylist([result._asdict()], schema=RESULT)

    return work


def run_stage(spark: Any, options: Mapping[str, str], checkpoint: Path, batch_id: int,
              mode: str, ranges: Mapping[str, tuple[int, int]],
              converter_props: Mapping[str, str] | None = None,
              ) -> dict[str, list[PartResult]]:
    """Runs the batch's Kafka tasks (one Spark job) and returns their results per topic; the
    batch's staging folder is emptied first (a replayed batch stages its parts again)."""
    clear_staging(checkpoint, upto=batch_id)
    topics = {t: {p: r for p, r in parts.items() if r[1] > r[0]}
              for t, parts in group_ranges(ranges).items()}
    topics = {t: parts for t, parts in topics.items() if parts}
    if not topics:
        return {}
    total = sum(e - s for parts in topics.values() for s, e in parts.values())
    slices = task_count([e - s for parts in topics.values() for s, e in parts.values()],
                        int(spark.sparkContext.defaultParallelism))
    reader = spark.read.format("kafka")
    for name, value in options.items():
        reader = reader.option(name, value)
    frame = (reader
             .option("assign", json.dumps({t: sorted(parts) for t, parts in topics.items()}))
             .option("startingOffsets", json.dumps(
                 {t: {str(p): s for p, (s, _e) in parts.items()} for t, parts in topics.items()}))
             .option("endingOffsets", json.dumps(
                 {t: {str(p): e for p, (_s, e) in parts.items()} for t, parts in topics.items()}))
             .option("minPartitions", str(slices))
             .option("failOnDataLoss", "true")
             .load()
             .select("topic", "partition", "offset", "key", "value"))
    work = _task(str(staging_dir(checkpoint, batch_id)), mode,
                 dict(converter_props or {}))
    sc = spark.sparkContext
    sc.setJobDescription(f"headwater batch {batch_id}: read Kafka, decode, net "
                         f"{total} records")
    try:
        rows = frame.mapInArrow(work, RESULT_DDL).collect()
    finally:
        sc.setJobDescription(None)
    return by_topic(PartResult(
        r.topic, r.part, r.file, r.events, r.refused, r.fields, tuple(r.key_columns or ()),
        r.schema_name, r.table_name, tuple(r.toast or ())) for r in rows)
