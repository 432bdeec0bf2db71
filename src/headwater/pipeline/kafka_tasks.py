"""A Kafka micro-batch read, decoded and netted as Spark tasks: the Kafka reader of `tasks`.

The batch's `{topic#partition: (start, end)}` ranges (the checkpoint's, as for the driver's
reader, so exactly once is unchanged) are cut into slices (`slices`: a partition's range in
even parts, as many tasks as `task_count` wants), and each Spark task reads its slice with the
driver reader's consumer settings (TLS and SASL included) straight into Arrow columns
(`read_slice`: the compiled range reader over confluent-kafka's librdkafka,
`headwater.kafka.columns`, with no Python object per record, the next slice's read opened
before the current slice is staged; without it, confluent-kafka's `consume` a call's records
at a time).  It then runs the same stage as the local log's tasks
(`tasks.run_part`: decode, net within the part, stage Parquet; the event-by-event decoder for a
part outside the column-wise shape).  The driver nets across parts in Arrow
(`tasks.net_across_parts`).  A refused part (a MongoDB document topic, a decode error) leaves
its topic to the driver's reader (`kafka_batch`), which meets the same error and raises it as
it always has.

Why not Spark's Kafka source: measured against it (`bench/kafka_task_reader.py`, 200k records
of 1.6 KB, `local[2]`), it cost the JVM 20-26 s of CPU for its first read in a JVM and 4-5 s
warm (Kafka's Java consumer, each record an UnsafeRow, then the Arrow batches `mapInArrow`
hands over), against 3.3-4.7 s for the slice reader, first read included; and it takes the
Java client's settings, so a pipeline with TLS or SASL settings could not read on the
executors at all.  Each executor needs what those settings name (certificate files) at the
same paths as the driver.
"""

from __future__ import annotations

import gc
import itertools
import logging
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from headwater.kafka.columns import RangeRead
from headwater.pipeline import columnar
from headwater.pipeline.kafka_source import (
    CHUNK,
    PARTITION_BITS,
    ValueDecoder,
    fetching,
    group_ranges,
    json_decoder,
)
from headwater.pipeline.tasks import (
    MAX_TASK_RECORDS,
    MIN_TASK_RECORDS,
    PartResult,
    Record,
    Refused,
    clear_staging,
    run_job,
    run_part,
    staging_dir,
)

log = logging.getLogger("headwater.pipeline.kafka_tasks")

def task_count(sizes: list[int], parallelism: int) -> int:
    """The number of slices (Spark tasks) to cut ranges of these sizes into (one per Kafka
    partition).  As `tasks.plan`: at least a task per core for a big batch, none above
    MAX_TASK_RECORDS; and as many tasks as a multiple of the partitions and of that count
    together, so that the tasks come out of even size and fill every core's turn.  `slices`
    cuts each range into `round(size / total * count)` parts: three partitions on two cores
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


@dataclass(eq=False)
class KafkaPart:
    """One slice of one Kafka partition (records in offset order), as `tasks.Part`: offsets
    are the decoders' virtual offsets (`kafka_source.virtual_offset`)."""

    part: int
    topic: str
    offsets: np.ndarray
    # the columns as the reads brought them: `arrow_lines` cuts each chunk in place
    keys: pa.ChunkedArray
    values: pa.ChunkedArray
    decode: ValueDecoder = json_decoder

    def _check_events(self) -> None:
        """Debezium rows only: a topic of another model (learnt by the driver at its first
        batch, for a configuration that declares none) goes to the driver's appliers."""
        from headwater.pipeline import capabilities
        from headwater.pipeline.kafka_batch import value_model

        first = _first_valid(self.values)  # (drop_null copied every value to read one)
        model = capabilities.ROWS if first is None else value_model(first)
        if model != capabilities.ROWS:
            raise Refused(f"topic {self.topic}: {capabilities.MODEL_NAMES[model]}")

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


def slices(ranges: Mapping[str, Mapping[int, tuple[int, int]]], count: int
           ) -> list[tuple[str, int, int, int]]:
    """`(topic, partition, start, end)` of each task: every range cut into
    `round(size / total * count)` even slices (at least one), as Spark's Kafka source cuts
    ranges for `minPartitions`."""
    sizes = {(t, p): e - s for t, parts in ranges.items() for p, (s, e) in parts.items()}
    total = sum(sizes.values()) or 1
    out: list[tuple[str, int, int, int]] = []
    for (topic, partition), size in sorted(sizes.items()):
        start = ranges[topic][partition][0]
        k = max(1, min(size, round(size / total * count)))
        cuts = [start + size * i // k for i in range(k + 1)]
        out.extend((topic, partition, a, b) for a, b in itertools.pairwise(cuts) if b > a)
    return out


def read_slice(consumer: Mapping[str, str], part: int, topic: str, partition: int,
               start: int, end: int, decode: ValueDecoder = json_decoder,
               opened: RangeRead | None = None) -> KafkaPart:
    """A slice read straight into Arrow columns by the compiled range reader
    (`headwater.kafka.columns`, no Python object per record; `opened`: the slice's read
    already opened by `open_slice`); where it is not available (not built, librdkafka not
    found: a WARNING said so), with confluent-kafka (`consume.read_range`): each call's keys
    and values joined into Arrow buffers (`binary_array`).  The same records either way."""
    if opened is None:
        opened = open_slice(consumer, topic, partition, start, end)
    if opened is None:
        return _read_slice_messages(_settings(consumer, start, end), part, topic, partition,
                                    start, end, decode)
    offsets: list[np.ndarray] = []
    keys: list[pa.Array] = []
    values: list[pa.Array] = []
    for got, chunk_keys, chunk_values in opened.chunks(CHUNK):
        offsets.append(got << PARTITION_BITS | partition)
        keys.append(chunk_keys)
        values.append(chunk_values)
    return KafkaPart(part, topic,
                     np.concatenate(offsets) if offsets else np.zeros(0, np.int64),
                     pa.chunked_array(keys, pa.large_binary()),
                     pa.chunked_array(values, pa.large_binary()), decode)


def open_slice(consumer: Mapping[str, str], topic: str, partition: int, start: int, end: int
               ) -> RangeRead | None:
    """The slice's read by the compiled range reader, opened: librdkafka fetches it from now
    on, while the task works on the slice before it; None when that reader is not available
    (`read_slice` reads with confluent-kafka then)."""
    from headwater.kafka import columns

    if not columns.available():
        return None
    return columns.RangeRead(_settings(consumer, start, end), topic, partition, start, end)


def _settings(consumer: Mapping[str, str], start: int, end: int) -> dict[str, str]:
    # librdkafka prefetches until `queued.min.messages` (100,000 by default) wait in its
    # queue: a slice's consumer would read on into the next slice's records, for nothing.
    # (Fetches of 2 MB a request instead of the driver reader's 16 MB cost less for slices
    # of one partition read one after the other, but measured no better in the bench's
    # layout, 0.61 and 0.68 against 0.74 and 0.69: docs/kafka.md, session 28.)
    settings = fetching(consumer)
    settings.setdefault("queued.min.messages", str(max(1000, end - start)))
    return settings


def _read_slice_messages(settings: dict[str, str], part: int, topic: str, partition: int,
                         start: int, end: int, decode: ValueDecoder) -> KafkaPart:
    from confluent_kafka import Consumer

    from headwater.kafka.consume import read_range
    from headwater.pipeline.kafka_batch import binary_array

    offsets: list[np.ndarray] = []
    keys: list[pa.Array] = []
    values: list[pa.Array] = []
    pending: list[Any] = []  # messages not yet in a chunk
    client = Consumer(settings)

    def chunk() -> None:
        # a chunk of at least CHUNK records: a `consume` call can return a few hundred, and
        # each chunk costs the column-wise cut (`arrow_lines`) a step of its own
        keys.append(binary_array([m.key() for m in pending]))
        values.append(binary_array([m.value() for m in pending]))
        pending.clear()

    # confluent-kafka's messages are tracked by Python's cycle collector, and a chunk holds up
    # to CHUNK of them: the collections they set off were 18 % of a slice's read (perf); they
    # hold no cycles (reference counting frees each chunk), so the collector waits for the end
    collecting = gc.isenabled()
    gc.disable()
    try:
        for got, msgs in read_range(client, topic, partition, start, end):
            offsets.append(got << PARTITION_BITS | partition)
            pending.extend(msgs)
            if len(pending) >= CHUNK:
                chunk()
        if pending:
            chunk()
    finally:
        if collecting:
            gc.enable()
        client.close()
    return KafkaPart(part, topic,
                     np.concatenate(offsets) if offsets else np.zeros(0, np.int64),
                     pa.chunked_array(keys, pa.large_binary()),
                     pa.chunked_array(values, pa.large_binary()), decode)


def _task(slices: list[tuple[str, int, int, int]], consumer: dict[str, str], staging: str,
          mode: str, converter_props: dict[str, str]
          ) -> Callable[[Iterator[int]], Iterator[PartResult]]:
    """A Spark task's function (`tasks.run_job`): slice numbers in, the `PartResult`s of
    each slice's part out."""

    def work(rows: Iterator[int]) -> Iterator[PartResult]:
        from headwater.pipeline.kafka_decoders import decoder_for

        decode = decoder_for(converter_props) if converter_props else json_decoder
        numbers = list(rows)
        ahead: RangeRead | None = None
        try:
            for i, number in enumerate(numbers):
                topic, partition, start, end = slices[number]
                part = read_slice(consumer, number, topic, partition, start, end, decode, ahead)
                # the next slice's fetch overlaps this one's decode, net and stage
                ahead = open_slice(consumer, *slices[numbers[i + 1]]) \
                    if i + 1 < len(numbers) else None
                if not len(part.offsets):
                    continue
                yield from run_part(part, Path(staging), mode)
        finally:
            if ahead is not None:
                ahead.close()

    return work


def run_stage(spark: Any, consumer: Mapping[str, str], checkpoint: Path, batch_id: int,
              mode: str, ranges: Mapping[str, tuple[int, int]],
              converter_props: Mapping[str, str] | None = None,
              ) -> dict[str, list[PartResult]]:
    """Runs the batch's Kafka tasks (one Spark job, at most a task a core) and returns their results
    per topic; the batch's staging folder is emptied first (a replayed batch stages its parts
    again)."""
    clear_staging(checkpoint, upto=batch_id)
    topics = {t: {p: r for p, r in parts.items() if r[1] > r[0]}
              for t, parts in group_ranges(ranges).items()}
    topics = {t: parts for t, parts in topics.items() if parts}
    if not topics:
        return {}
    total = sum(e - s for parts in topics.values() for s, e in parts.values())
    cut = slices(topics, task_count([e - s for parts in topics.values()
                                     for s, e in parts.values()],
                                    int(spark.sparkContext.defaultParallelism)))
    work = _task(cut, dict(consumer), str(staging_dir(checkpoint, batch_id)), mode,
                 dict(converter_props or {}))
    # at most one Spark task per core, each reading its share of the slices in turn: every
    # task pays pyspark's set-up in its worker, and a batch cut in six slices on two cores ran
    # three rounds of two tasks
    tasks = max(1, min(len(cut), int(spark.sparkContext.defaultParallelism)))
    return run_job(spark, f"headwater batch {batch_id}: read Kafka, decode, net {total} "
                   f"records in {len(cut)} slices", list(range(len(cut))), tasks, work)
