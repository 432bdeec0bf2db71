"""Reading, decoding and netting of a micro-batch as Spark tasks on the executors.

The driver only plans: it splits each topic's offset range of the batch into parts (`plan`)
and runs one Spark job whose tasks each read their part from the segment files, decode it
column-wise (`columnar.scan` + `decode_net(carry=True)` / `decode_changelog`; the event-by-event
decoder when the part is outside that shape), net it within the part, and stage the result as
a Parquet file under the checkpoint directory
(`<checkpoint>/staging/<batch>/<topic>/part-<start>-<end>.parquet`; on a cluster the checkpoint
is on shared storage).  Only a small metadata row per part comes back to the driver
(`PartResult`).

Netting is exact across parts (`net_across_parts`: the driver, in Arrow, `part_net`): a part's
rows are fragments of the batch's events per key, either the part's net row with what the
cross-part rules need (`columnar.CARRY_SEQ`, `columnar.DELETED`) or, from the event-by-event
decoder, each re-delivery-free event.  Per key the newest fragment by `__hw_sequence` wins; a
re-delivery found in an earlier part keeps its first (lowest offset) sequence, as `net.dedup`
does; an unchanged-TOAST column takes the newest value sent after the key's newest delete in
the batch, in any part, else stays flagged.  The result has `ColumnarChanges.rows`' layout, so
the targets' column-wise writes take it as is.

Batches this path does not take go to the driver's event path with a log line, never
silently: a truncate or a null key in a part (the event path clears the target and names a
keyless table), two schemas in one batch, column types Spark cannot hold, and a changelog part
outside the column-wise shape.
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from headwater.pipeline import columnar
from headwater.pipeline.columnar import (
    CARRY_SEQ,
    DELETED,
    OP,
    SEQ,
    TOAST_FLAG,
    ColumnarChanges,
    NotColumnar,
)
from headwater.pipeline.connect_types import field_type
from headwater.pipeline.decode import Column, decode_topic
from headwater.pipeline.net import dedup
from headwater.pipeline.part_net import net_fragments
from headwater.pipeline.source import read_range
from headwater.topics.segment import live_segments

log = logging.getLogger("headwater.pipeline.tasks")

# A part is worth a task from this many records on: below, the task's start-up (a Python
# worker, the segment's mapping) costs more than the decode it spares the others.
MIN_TASK_RECORDS = 10_000
# ... and at most this many: a task's payload buffers stay a few hundred MB, and a big batch
# makes more tasks than cores, which Spark hands out as cores free up.
MAX_TASK_RECORDS = 250_000


class Task(NamedTuple):
    """One part of one topic's range: records start <= offset < end."""

    topic: str
    start: int
    end: int
    part: int


def plan(root: Path, ranges: dict[str, tuple[int, int]], parallelism: int,
         min_records: int = MIN_TASK_RECORDS, max_records: int = MAX_TASK_RECORDS,
         ) -> list[Task]:
    """Each topic's range cut into `parallelism` parts of at least `min_records` offsets (fewer
    for a small range), or more parts when a part would exceed `max_records`.  A cut moves to
    a segment's first offset when one lies within a quarter part of it, so that most tasks map
    whole segments (a task starting inside a segment skims the lines before its first
    offset)."""
    tasks: list[Task] = []
    for topic, (start, end) in sorted(ranges.items()):
        size = end - start
        if size <= 0:
            continue
        n = max(1, min(parallelism, size // max(1, min_records)), -(-size // max_records))
        bases = [s.base for s in live_segments(root / topic) if start < s.base < end]
        cuts = [start]
        for i in range(1, n):
            ideal = start + size * i // n
            near = min(bases, key=lambda b: abs(b - ideal), default=None)
            cut = near if near is not None and abs(near - ideal) <= size / n / 4 else ideal
            if cut > cuts[-1]:
                cuts.append(cut)
        cuts.append(end)
        tasks += [Task(topic, a, b, i) for i, (a, b) in enumerate(itertools.pairwise(cuts))]
    return tasks


class PartResult(NamedTuple):
    """What a task hands back to the driver: a line of metadata, never the rows."""

    topic: str
    part: int
    file: str | None  # the staged Parquet file (None: no events, or refused)
    events: int
    refused: str | None  # why the part is left to the driver's event path
    fields: str  # the row's Connect fields (JSON), which the driver turns into `Column`s
    key_columns: tuple[str, ...]
    schema_name: str | None
    table_name: str | None
    toast: tuple[str, ...]  # columns with unchanged-TOAST flags in this part

    @property
    def shape(self) -> tuple[str, tuple[str, ...]]:
        return self.fields, self.key_columns


def staging_dir(checkpoint: Path, batch_id: int) -> Path:
    return checkpoint / "staging" / str(batch_id)


class Refused(Exception):
    """A part this path leaves to the driver's event path (the message says why)."""


Record = tuple[int, bytes | None, bytes | None]


class Part(Protocol):
    """One part of one topic's batch as a task reads it: the local log's (`LogPart`) or
    Kafka's (`kafka_tasks.KafkaPart`).  The stage is the same behind either."""

    @property
    def topic(self) -> str: ...

    @property
    def part(self) -> int: ...

    def lines(self) -> columnar.Lines:
        """The part's records for the column-wise decoder (NotColumnar: another shape)."""
        ...

    def records(self) -> list[Record]:
        """The part's records one by one, in offset order (the event-by-event decoder's)."""
        ...

    def staged_name(self) -> str:
        """The staged Parquet file's name: the part's offsets, not its index.  A task of a
        driver killed mid-batch may still finish on an executor while the next driver replays
        the batch, whose plan may cut the range elsewhere (another parallelism, segments rolled
        meanwhile): named by index, its late write would replace the replay's part of that
        index with other records.  Named by offsets, a late write replaces a part with the
        same records."""
        ...


@dataclass(frozen=True)
class LogPart:
    """A part of the local topic log (`Task`), read from its segment files."""

    root: Path
    task: Task

    @property
    def topic(self) -> str:
        return self.task.topic

    @property
    def part(self) -> int:
        return self.task.part

    def lines(self) -> columnar.Lines:
        t = self.task
        return columnar.scan(self.root, t.topic, t.start, t.end, columnar.Positions())

    def records(self) -> list[Record]:
        t = self.task
        return list(read_range(self.root, t.topic, t.start, t.end))

    def staged_name(self) -> str:
        return f"part-{self.task.start}-{self.task.end}.parquet"


def run_task(root: Path, staging: Path, mode: str, task: Task) -> PartResult:
    """A part of the local log through `run_part`."""
    return run_part(LogPart(root, task), staging, mode)


def run_part(part: Part, staging: Path, mode: str) -> PartResult:
    """Reads, decodes and nets one part (on an executor) and stages it as Parquet.

    A part the task cannot read or decode (a damaged log, an undecodable value) is refused
    with the error's text: the driver's event path then meets the same error and reports it
    as it always has (`TopicLogDamaged` stops the pipeline with its own message)."""
    try:
        decoded, fields = _decode(part, mode)
    except Refused as exc:
        return _refused(part, str(exc))
    except Exception as exc:  # (the driver's path meets it again and raises it)
        return _refused(part, f"{type(exc).__name__}: {exc}")
    if decoded is None:
        return PartResult(part.topic, part.part, None, 0, None, "[]", (), None, None, ())
    return _stage(staging, part, decoded, fields)


def _decode(part: Part, mode: str) -> tuple[ColumnarChanges | None, str]:
    try:
        lines = part.lines()
        if mode == "scd1":
            decoded = columnar.decode_net(part.topic, lines, carry=True)
        else:  # changelog, or scd2's events (with their unchanged-TOAST flags)
            decoded = columnar.decode_changelog(part.topic, lines, flags=mode == "scd2")
    except NotColumnar as exc:
        if mode != "scd1":
            raise Refused(f"{mode} outside the column-wise shape ({exc})") from exc
        log.info("%s part %d: event by event (%s)", part.topic, part.part, exc)
        return _by_events(part)
    if decoded is None:
        return None, "[]"
    return decoded, orjson.dumps(_after_fields(lines.value_head)).decode()


def _after_fields(value_head: bytes) -> list[dict[str, Any]]:
    return _row_fields(orjson.loads(value_head[len(b'},"value":{"schema":'):-len(_PAYLOAD)]))


def _refused(task: Part, why: str) -> PartResult:
    return PartResult(task.topic, task.part, None, 0, why, "[]", (), None, None, ())


def _stage(staging: Path, task: Part, decoded: ColumnarChanges, fields: str) -> PartResult:
    """Writes the part's rows (through a temporary name: a retried task rewrites it whole)."""
    folder = staging / task.topic
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / task.staged_name()
    tmp = folder / f".{path.name}.{uuid.uuid4().hex}.tmp"
    pq.write_table(decoded.rows, tmp)
    os.replace(tmp, path)
    return PartResult(task.topic, task.part, str(path), decoded.events, None, fields,
                      decoded.key_columns, decoded.schema_name, decoded.table_name,
                      tuple(decoded.toast))


def _by_events(task: Part) -> tuple[ColumnarChanges | None, str]:
    """A part outside the column-wise shape, by the event-by-event decoder: each event left
    after `net.dedup` is a fragment (its own values and flags; the cross-part net treats it as
    a part's net row of one event)."""
    records = task.records()
    if len({_value_head(v) for _o, _k, v in records if v is not None}) > 1:
        raise Refused("two value schemas in one part")
    changes = decode_topic(task.topic, records)
    events = dedup(changes.events)
    if not events:
        return None, "[]"
    if any(e.op == "t" for e in events):
        raise Refused("a truncate")
    if any(e.key is None for e in events):
        raise Refused("an event without a key")
    value = next(v for _o, _k, v in records if v is not None)
    fields = orjson.dumps(_row_fields(orjson.loads(value)["schema"])).decode()
    columns = changes.column_list
    keys = changes.key_columns
    toast = [c.name for c in columns if any(c.name in e.unavailable for e in events)]
    data: dict[str, list[Any]] = {c.name: [] for c in columns}
    flags: dict[str, list[bool]] = {c: [] for c in toast}
    for e in events:
        delete = e.op == "d"
        row = {} if delete else (e.row or {})
        for c in columns:
            data[c.name].append(row.get(c.name))
        if delete:
            assert e.key is not None
            for k, v in zip(keys, e.key, strict=True):
                data[k][-1] = v
        for name in toast:
            flags[name].append(not delete and name in e.unavailable)
    seqs = [e.sequence for e in events]
    ops = ["d" if e.op == "d" else "u" for e in events]
    arrays = [pa.array(data[c.name], c.type.arrow) for c in columns]
    arrays += [pa.array(seqs, pa.string()), pa.array(ops, pa.string())]
    arrays += [pa.array(flags[n], pa.bool_()) for n in toast]
    arrays += [pa.array([None if f or o == "d" else s
                         for f, s, o in zip(flags[n], seqs, ops, strict=True)], pa.string())
               for n in toast]
    arrays.append(pa.nulls(len(events), pa.string()))
    rows = pa.Table.from_arrays(arrays, names=[
        *(c.name for c in columns), SEQ, OP, *(TOAST_FLAG + n for n in toast),
        *(CARRY_SEQ + n for n in toast), DELETED])
    return ColumnarChanges(task.topic, changes.schema_name, changes.table_name, keys, columns,
                           len(changes.events), rows, toast=toast), fields


_PAYLOAD = b',"payload":'


def _value_head(value: bytes) -> bytes:
    """The text before a document's payload (its schema), or the whole document."""
    at = value.find(_PAYLOAD)
    return value[:at] if at > 0 else value


def _row_fields(schema: dict[str, Any]) -> list[dict[str, Any]]:
    after = next((f for f in schema.get("fields", []) if f.get("field") == "after"), None)
    if after is None:
        raise NotColumnar("no row schema")
    fields: list[dict[str, Any]] = after.get("fields", [])
    return fields


# -- the driver: one Spark job per batch, then the net across parts in Arrow -------------------

def run_stage(spark: Any, root: Path, checkpoint: Path, batch_id: int, mode: str,
              ranges: dict[str, tuple[int, int]], min_records: int = MIN_TASK_RECORDS,
              ) -> dict[str, list[PartResult]]:
    """Runs the batch's tasks (one Spark job) and returns their results per topic.  The
    batch's staging folder is emptied first: a replayed batch stages its parts again."""
    staging = staging_dir(checkpoint, batch_id)
    clear_staging(checkpoint, upto=batch_id)
    tasks = plan(root, ranges, int(spark.sparkContext.defaultParallelism), min_records)
    if not tasks:
        return {}
    root_text, staging_text = str(root), str(staging)

    def work(rows: Iterable[tuple[str, int, int, int]]) -> Iterator[PartResult]:
        for row in rows:
            yield run_task(Path(root_text), Path(staging_text), mode, Task(*row))

    sc = spark.sparkContext
    sc.setJobDescription(f"headwater batch {batch_id}: read, decode, net {len(tasks)} parts")
    try:
        results: list[PartResult] = sc.parallelize(
            [tuple(t) for t in tasks], len(tasks)).mapPartitions(work).collect()
    finally:
        sc.setJobDescription(None)
    return by_topic(results)


def by_topic(results: Iterable[PartResult]) -> dict[str, list[PartResult]]:
    """A stage's results per topic, in part order."""
    out: dict[str, list[PartResult]] = {}
    for r in sorted(results, key=lambda r: (r.topic, r.part)):
        out.setdefault(r.topic, []).append(r)
    return out


def clear_staging(checkpoint: Path, upto: int | None = None) -> None:
    """Removes the staged parts of batch `upto` and of every earlier batch (all: None)."""
    folder = checkpoint / "staging"
    if not folder.is_dir():
        return
    for sub in folder.iterdir():
        if upto is None or (sub.name.isdigit() and int(sub.name) <= upto):
            shutil.rmtree(sub, ignore_errors=True)


@dataclass
class StagedChanges:
    """One topic's batch after the executor stage: the metadata of `ColumnarChanges` (its
    `rows` left empty) and the rows netted across parts, in `rows`' layout."""

    changes: ColumnarChanges
    rows: pa.Table
    mode: str  # scd1 (net rows), changelog or scd2 (every event)

    def to_columnar(self) -> ColumnarChanges:
        """The rows typed as the column-wise decoders type them (a Parquet round trip may
        widen a type, and a column missing from every part comes back null)."""
        schema = rows_schema(self.changes, self.mode)
        columns = [self.rows.column(name).cast(f.type) if name in self.rows.column_names
                   else pa.nulls(self.rows.num_rows, f.type)
                   for name, f in zip(schema.names, schema, strict=True)]
        rows = pa.Table.from_arrays(columns, schema=schema)
        return ColumnarChanges(self.changes.topic, self.changes.schema_name,
                               self.changes.table_name, self.changes.key_columns,
                               self.changes.columns, self.changes.events, rows,
                               toast=list(self.changes.toast), target=self.changes.target)


def rows_schema(changes: ColumnarChanges, mode: str) -> pa.Schema:
    row = [pa.field(c.name, c.type.arrow) for c in changes.columns]
    if mode == "changelog":
        return pa.schema([*columnar.CHANGELOG_META, *row])
    if mode == "scd2":  # every event, with its unchanged-TOAST flags
        return pa.schema([*columnar.CHANGELOG_META, *row,
                          *((TOAST_FLAG + c, pa.bool_()) for c in changes.toast)])
    return pa.schema([*row, (SEQ, pa.string()), (OP, pa.string()),
                      *((TOAST_FLAG + c, pa.bool_()) for c in changes.toast)])


def staged_batch(parts: list[PartResult]) -> tuple[ColumnarChanges, list[str]] | None:
    """The topic's batch as its staged parts describe it: `ColumnarChanges`' metadata (its
    `rows` left empty) and the staged files, in part order (None: no events); raises
    `Refused` for a batch this path leaves to the driver's event path."""
    refused = [p for p in parts if p.refused is not None]
    if refused:
        raise Refused(f"part {refused[0].part}: {refused[0].refused}")
    staged = [p for p in parts if p.file is not None]
    if not staged:
        return None
    if len({p.shape for p in staged}) > 1:
        raise Refused("the table's schema changes inside the batch")
    first = staged[0]
    columns = [Column(f["field"], field_type(f), bool(f.get("optional", True)))
               for f in orjson.loads(first.fields)]
    toast = [c.name for c in columns if any(c.name in p.toast for p in staged)]
    events = sum(p.events for p in parts)
    changes = ColumnarChanges(first.topic, first.schema_name, first.table_name,
                              first.key_columns, columns, events, pa.table({}), toast=toast)
    return changes, [str(p.file) for p in staged]


def net_across_parts(parts: list[PartResult], mode: str) -> StagedChanges | None:
    """The topic's batch from its staged parts (None: no events), netted in the driver;
    raises `Refused` for a batch this path leaves to the driver's event path.

    The driver reads the staged parts and nets them in Arrow (`part_net`): the parts are
    already netted, so this is a fraction of a second where a Spark SQL job over them cost
    seconds of executor time that more executors did not shorten.  A target that takes
    DataFrames has them netted on the executors instead (`executor_net`)."""
    batch = staged_batch(parts)
    if batch is None:
        return None
    changes, files = batch
    # (a column only some parts have, a part's TOAST flags, comes back null in the others)
    rows = pa.concat_tables([pq.read_table(f) for f in files], promote_options="permissive")
    if mode == "scd1":
        rows = net_fragments(rows, list(changes.columns), changes.key_columns,
                             list(changes.toast))
    else:
        rows = rows.take(pc.sort_indices(rows.column("__offset")))
    return StagedChanges(changes, rows, mode)
