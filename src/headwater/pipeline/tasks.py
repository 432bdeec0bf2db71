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

The part's decoder is chosen by the topic's event model, which the driver passes with each
task (`Task.model`): Datastream events (SCD1) are decoded by `datastream.staged` into the same
fragments as the event-by-event decoder's (`fragments`), one staged table per `object`, and
typed and deduplicated by `uuid` in the driver's net across parts.

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
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol
from urllib.parse import quote

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from headwater.pipeline import columnar
from headwater.pipeline.capabilities import DATASTREAM, ROWS
from headwater.pipeline.columnar import (
    OP,
    SEQ,
    TOAST_FLAG,
    ColumnarChanges,
    NotColumnar,
)
from headwater.pipeline.connect_types import field_type
from headwater.pipeline.datastream import staged as datastream
from headwater.pipeline.decode import Column, decode_topic
from headwater.pipeline.fragments import Refused as Refused  # noqa: PLC0414 (re-exported)
from headwater.pipeline.fragments import event_fragments
from headwater.pipeline.net import dedup
from headwater.pipeline.part_net import first_deliveries, net_fragments
from headwater.pipeline.source import read_range
from headwater.topics.segment import live_segments

log = logging.getLogger("headwater.pipeline.tasks")

# A part is worth a task from this many records on: below, the task's start-up (a Python
# worker, the segment's mapping) costs more than the decode it spares the others.
MIN_TASK_RECORDS = 10_000
# ... and at most this many: a task's payload buffers stay a few hundred MB, and a big batch
# makes more tasks than cores, which Spark hands out as cores free up (a whole number of
# rounds of them: `plan`).
MAX_TASK_RECORDS = 250_000


class Task(NamedTuple):
    """One part of one topic's range: records start <= offset < end, of the topic's event
    model (the driver's, never judged from the records on the executor)."""

    topic: str
    start: int
    end: int
    part: int
    model: str = ROWS


# The modes whose batches the stage takes, per event model: Datastream's SCD1 only (its
# changelog drops re-deliveries by `uuid` against the target, its SCD2 keeps every event:
# both stay the driver's event path, `datastream.apply`).
STAGED_MODES: dict[str, frozenset[str]] = {
    ROWS: frozenset({"scd1", "scd2", "changelog"}),
    DATASTREAM: frozenset({"scd1"}),
}


def plan(root: Path, ranges: dict[str, tuple[int, int]], parallelism: int,
         min_records: int = MIN_TASK_RECORDS, max_records: int = MAX_TASK_RECORDS,
         models: Mapping[str, str] | None = None) -> list[Task]:
    """Each topic's range cut into `parallelism` parts of at least `min_records` offsets (fewer
    for a small range), or, when a part would exceed `max_records`, into a multiple of
    `parallelism` parts: five parts on two cores would run in three rounds, the last with a
    core idle, where six run in two.  A cut moves to a segment's first offset when one lies
    within a quarter part of it, so that most tasks map whole segments (a task starting inside
    a segment skims the lines before its first offset)."""
    tasks: list[Task] = []
    for topic, (start, end) in sorted(ranges.items()):
        size = end - start
        if size <= 0:
            continue
        n = max(1, min(parallelism, size // max(1, min_records)))
        if size > n * max_records:
            rounds = -(-size // (max(1, parallelism) * max_records))
            n = rounds * max(1, parallelism)
        bases = [s.base for s in live_segments(root / topic) if start < s.base < end]
        cuts = [start]
        for i in range(1, n):
            ideal = start + size * i // n
            near = min(bases, key=lambda b: abs(b - ideal), default=None)
            cut = near if near is not None and abs(near - ideal) <= size / n / 4 else ideal
            if cut > cuts[-1]:
                cuts.append(cut)
        cuts.append(end)
        model = (models or {}).get(topic, ROWS)
        tasks += [Task(topic, a, b, i, model)
                  for i, (a, b) in enumerate(itertools.pairwise(cuts))]
    return tasks


class PartResult(NamedTuple):
    """What a task hands back to the driver: a line of metadata, never the rows."""

    topic: str
    part: int
    file: str | None  # the staged Parquet file (None: no events, or refused)
    events: int
    refused: str | None  # why the part is left to the driver's event path
    # what the driver rebuilds the columns from: the row's Connect fields (JSON) for Debezium
    # rows, each payload column's value kinds for Datastream (`datastream.staged.columns`)
    fields: str
    key_columns: tuple[str, ...]
    schema_name: str | None
    table_name: str | None
    toast: tuple[str, ...]  # columns with unchanged-TOAST flags in this part
    model: str = ROWS
    table: str = ""  # the table's name in the topic: "" (a Debezium topic is one table), or
    # the Datastream `object` (a topic may hold several)

    @property
    def shape(self) -> tuple[str, tuple[str, ...]]:
        return self.fields, self.key_columns


def staging_dir(checkpoint: Path, batch_id: int) -> Path:
    return checkpoint / "staging" / str(batch_id)


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


def run_task(root: Path, staging: Path, mode: str, task: Task) -> list[PartResult]:
    """A part of the local log through `run_part`."""
    return run_part(LogPart(root, task), staging, mode, task.model)


def run_part(part: Part, staging: Path, mode: str, model: str = ROWS) -> list[PartResult]:
    """Reads, decodes and nets one part (on an executor) and stages it as Parquet: a result
    per table (Datastream: per `object`), or one saying the part is empty or refused.

    A part the task cannot read or decode (a damaged log, an undecodable value) is refused
    with the error's text: the driver's event path then meets the same error and reports it
    as it always has (`TopicLogDamaged` stops the pipeline with its own message)."""
    try:
        if mode not in STAGED_MODES[model]:
            raise Refused(f"{model} events in {mode}: the driver's event path")
        if model == DATASTREAM:
            tables = datastream.decode_part(part.topic, part.records())
        else:
            decoded, fields = _decode(part, mode)
            tables = [] if decoded is None else [("", decoded, fields)]
    except Refused as exc:
        return [_refused(part, str(exc), model)]
    except Exception as exc:  # (the driver's path meets it again and raises it)
        return [_refused(part, f"{type(exc).__name__}: {exc}", model)]
    if not tables:
        return [PartResult(part.topic, part.part, None, 0, None, "[]", (), None, None, (),
                           model)]
    return [_stage(staging, part, decoded, fields, model, table)
            for table, decoded, fields in tables]


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


def _refused(task: Part, why: str, model: str = ROWS) -> PartResult:
    return PartResult(task.topic, task.part, None, 0, why, "[]", (), None, None, (), model)


def _stage(staging: Path, task: Part, decoded: ColumnarChanges, fields: str,
           model: str = ROWS, table: str = "") -> PartResult:
    """Writes the part's rows (through a temporary name: a retried task rewrites it whole);
    a table of a topic of several beside the topic's others, named by its quoted name."""
    folder = staging / task.topic
    folder.mkdir(parents=True, exist_ok=True)
    name = task.staged_name()
    path = folder / (f"{quote(table, safe='')}.{name}" if table else name)
    tmp = folder / f".{path.name}.{uuid.uuid4().hex}.tmp"
    pq.write_table(decoded.rows, tmp)
    os.replace(tmp, path)
    return PartResult(task.topic, task.part, str(path), decoded.events, None, fields,
                      decoded.key_columns, decoded.schema_name, decoded.table_name,
                      tuple(decoded.toast), model, table)


def _by_events(task: Part) -> tuple[ColumnarChanges | None, str]:
    """A part outside the column-wise shape, by the event-by-event decoder: each event left
    after `net.dedup` is a fragment (`fragments.event_fragments`)."""
    records = task.records()
    if len({_value_head(v) for _o, _k, v in records if v is not None}) > 1:
        raise Refused("two value schemas in one part")
    changes = decode_topic(task.topic, records)
    decoded = event_fragments(changes, dedup(changes.events))
    if decoded is None:
        return None, "[]"
    value = next(v for _o, _k, v in records if v is not None)
    return decoded, orjson.dumps(_row_fields(orjson.loads(value)["schema"])).decode()


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
              models: Mapping[str, str] | None = None) -> dict[str, list[PartResult]]:
    """Runs the batch's tasks (one Spark job) and returns their results per topic (`models`:
    each topic's event model, Debezium rows when not named).  The batch's staging folder is
    emptied first: a replayed batch stages its parts again."""
    staging = staging_dir(checkpoint, batch_id)
    clear_staging(checkpoint, upto=batch_id)
    tasks = plan(root, ranges, int(spark.sparkContext.defaultParallelism), min_records,
                 models=models)
    if not tasks:
        return {}
    root_text, staging_text = str(root), str(staging)

    def work(rows: Iterable[tuple[str, int, int, int, str]]) -> Iterator[PartResult]:
        for row in rows:
            yield from run_task(Path(root_text), Path(staging_text), mode, Task(*row))

    return run_job(spark, f"headwater batch {batch_id}: read, decode, net {len(tasks)} parts",
                   [tuple(t) for t in tasks], len(tasks), work)


def run_job(spark: Any, description: str, items: list[Any], task_count: int,
            work: Callable[[Iterator[Any]], Iterable[PartResult]]
            ) -> dict[str, list[PartResult]]:
    """The stage's Spark job, the local log's and Kafka's (`kafka_tasks.run_stage`):
    `items` cut into `task_count` Spark tasks of consecutive items, each task's items through
    `work` on an executor, the `PartResult`s back per topic.  An RDD job: Kafka's stage ran
    as `spark.range(...).mapInArrow` (Spark SQL's planning and its Arrow round trips for a few
    rows of metadata) and cost about 0.17 s more a batch than this (median of 11 alternated
    batches of tasks that do nothing, `local[2]`, load 10-14; 2026-12-02)."""
    sc = spark.sparkContext
    sc.setJobDescription(description)
    try:
        results: list[PartResult] = sc.parallelize(items, task_count).mapPartitions(
            work).collect()
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


# The target's column types of a table (`DeltaTarget.column_types`), which Datastream's JSON
# columns keep where their values fit.
TargetTypes = Callable[[ColumnarChanges], Mapping[str, pa.DataType]]


def tables(parts: list[PartResult]) -> list[list[PartResult]]:
    """A topic's staged parts per table, in part order (one table for Debezium rows, one per
    `object` for Datastream); raises `Refused` when a part was refused: the whole topic goes
    to the driver's event path, never some of its tables."""
    refused = [p for p in parts if p.refused is not None]
    if refused:
        raise Refused(f"part {refused[0].part}: {refused[0].refused}")
    out: dict[str, list[PartResult]] = {}
    for p in parts:
        if p.file is not None:
            out.setdefault(p.table, []).append(p)
    return [out[t] for t in sorted(out)]


def staged_batch(parts: list[PartResult], target_types: TargetTypes | None = None
                 ) -> tuple[ColumnarChanges, list[str]] | None:
    """One table's batch as its staged parts describe it: `ColumnarChanges`' metadata (its
    `rows` left empty) and the staged files, in part order (None: no events); raises
    `Refused` for a batch this path leaves to the driver's event path.  A Datastream table's
    columns are typed as the driver's decode types the batch (`datastream.columns`), with
    the target's column types (`target_types`)."""
    staged = [p for table in tables(parts) for p in table]
    if not staged:
        return None
    first = staged[0]
    if len({p.table for p in staged}) > 1:
        raise ValueError("staged_batch takes one table's parts (`tables`)")
    events = sum(p.events for p in staged)
    changes = ColumnarChanges(first.topic, first.schema_name, first.table_name,
                              first.key_columns, [], events, pa.table({}))
    if len({p.key_columns for p in staged}) > 1:
        raise Refused("the table's key changes inside the batch")
    if first.model == DATASTREAM:
        changes.columns = datastream.columns([p.fields for p in staged],
                                             target_types(changes) if target_types else {})
    elif len({p.shape for p in staged}) > 1:
        raise Refused("the table's schema changes inside the batch")
    else:
        changes.columns = [Column(f["field"], field_type(f), bool(f.get("optional", True)))
                           for f in orjson.loads(first.fields)]
    changes.toast = [c.name for c in changes.columns if any(c.name in p.toast for p in staged)]
    return changes, [str(p.file) for p in staged]


def net_across_parts(parts: list[PartResult], mode: str,
                     target_types: TargetTypes | None = None) -> StagedChanges | None:
    """One table's batch from its staged parts (None: no events), netted in the driver;
    raises `Refused` for a batch this path leaves to the driver's event path.

    The driver reads the staged parts and nets them in Arrow (`part_net`): the parts are
    already netted, so this is a fraction of a second where a Spark SQL job over them cost
    seconds of executor time that more executors did not shorten.  A target that takes
    DataFrames has Debezium rows netted on the executors instead (`executor_net`).
    Datastream's parts are typed as the batch (`datastream.conform`), re-deliveries across
    parts dropped by `uuid`, and the offsets cut off the net's sequences
    (`datastream.staged`)."""
    batch = staged_batch(parts, target_types)
    if batch is None:
        return None
    changes, files = batch
    read = [pq.read_table(f) for f in files]
    if parts[0].model == DATASTREAM:
        read = [datastream.conform(r, changes.columns) for r in read]
    # (a column only some parts have, a part's TOAST flags, comes back null in the others)
    rows = pa.concat_tables(read, promote_options="permissive")
    if datastream.ID in rows.column_names:
        rows = first_deliveries(rows, datastream.ID)
    if mode == "scd1":
        rows = net_fragments(rows, list(changes.columns), changes.key_columns,
                             list(changes.toast))
    else:
        rows = rows.take(pc.sort_indices(rows.column("__offset")))
    if parts[0].model == DATASTREAM:
        rows = rows.set_column(rows.schema.get_field_index(SEQ), SEQ, pc.utf8_slice_codeunits(
            rows.column(SEQ), 0, -datastream.SEQ_SUFFIX))
    return StagedChanges(changes, rows, mode)
