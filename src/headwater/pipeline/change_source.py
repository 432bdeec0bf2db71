"""The public Spark source `headwater`: a topic log's change events as typed rows.

`spark.read.format("headwater")` and `spark.readStream.format("headwater")` (after
`headwater.spark.register(spark)`) give every change event of the chosen topics as a row:
the table's columns (the after image; the before image for a delete), then the changelog
columns the pipeline's `changelog` mode writes (`columnar.CHANGELOG_META`), then the topic and
the source table.  It is for users who write their own Spark code (a MERGE, Spark Declarative
Pipelines, a warehouse of their own) rather than run `headwater pipeline`.

Why a Python data source and not a second decoder: each Spark partition is a range of one
topic's offsets (cut by `tasks.plan`, as the pipeline's executor stage cuts a batch), and the
partition is read and decoded in the executor by the pipeline's own code, column-wise
(`columnar.scan` + `columnar.decode_changelog`) or, outside that shape, event by event
(`source.read_range` + `decode.decode_topic`), and handed to Spark as Arrow batches.

The schema is fixed when the DataFrame is made (Spark asks for it before any partition runs):
the row columns of the first and the last event of each topic's range, unless the reader is
given one (`.schema(...)`).  A partition whose events carry a column outside it is an error
naming the column, topic and offsets, never a column silently dropped; a column the schema
has but an event lacks (added later) is null.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from headwater.pipeline import columnar, tasks
from headwater.pipeline.columnar import CHANGELOG_META, NotColumnar
from headwater.pipeline.connect_types import field_type
from headwater.pipeline.decode import decode_topic
from headwater.pipeline.source import is_table_topic, read_range, rewound
from headwater.topics import reader

NAME = "headwater"
TOPIC = "__topic"
SOURCE_TABLE = "__source_table"
# The columns after the table's: the changelog's bookkeeping, then where the row comes from.
META = pa.schema([*CHANGELOG_META, (TOPIC, pa.string()), (SOURCE_TABLE, pa.string())])
OPTIONS = ("path", "topic", "partitionrecords")  # (Spark hands options over lower-cased)
_PROBE = 64  # records read at each end of a range to find its first and last value schema


class SourceOptionError(ValueError):
    """An option of the `headwater` source is missing or wrong (the message names it)."""


def check_options(options: Mapping[str, str]) -> tuple[Path, str, int]:
    """(topics dir, topic names or globs, records per partition), refusing unknown options:
    a Kafka or Datastream option given here would otherwise be ignored without a word."""
    unknown = sorted(k for k in options if k.lower() not in OPTIONS)
    if unknown:
        raise SourceOptionError(
            f"headwater source: unknown option(s) {', '.join(unknown)}; it reads the local "
            "topic log only (options: path, topic, partitionRecords); for Kafka topics read "
            "them with Spark's kafka source")
    lower = {k.lower(): v for k, v in options.items()}
    if not lower.get("path"):
        raise SourceOptionError("headwater source: option path (the topic log directory) is "
                                "missing")
    root = Path(lower["path"])
    if not root.is_dir():
        raise SourceOptionError(f"headwater source: option path: {root} is not a directory")
    spec = lower.get("topic", "")
    if not spec.strip():
        raise SourceOptionError("headwater source: option topic (topic names or globs, "
                                "comma-separated) is missing")
    text = lower.get("partitionrecords", str(tasks.MAX_TASK_RECORDS))
    try:
        per_part = int(text)
    except ValueError:
        per_part = 0
    if per_part <= 0:
        raise SourceOptionError(
            f"headwater source: option partitionRecords must be a positive integer, got {text!r}")
    return root, spec, per_part


def matching_topics(root: Path, spec: str) -> dict[str, tuple[int, int]]:
    """(log start, next offset) of every table topic matching a name or glob of `spec`; a
    name or glob matching none is an error (a typo would otherwise read nothing)."""
    found = {t.name: (t.start_offset, t.end_offset) for t in reader.list_topics(root)
             if is_table_topic(t.name)}
    out: dict[str, tuple[int, int]] = {}
    for glob in (g.strip() for g in spec.split(",") if g.strip()):
        hits = {n: r for n, r in found.items() if fnmatch.fnmatchcase(n, glob)}
        if not hits:
            raise SourceOptionError(f"headwater source: option topic: no topic in {root} "
                                    f"matches {glob!r}")
        out.update(hits)
    return out


def _value_fields(value: bytes) -> list[dict[str, Any]]:
    fields: list[dict[str, Any]] = tasks._row_fields(orjson.loads(value)["schema"])
    return fields


def _probe(root: Path, topic: str, start: int, end: int) -> list[dict[str, Any]]:
    """The row fields of the first and last change event of a range (first's order, then the
    last's new fields)."""
    first = next((v for _o, _k, v in read_range(root, topic, start, min(end, start + _PROBE))
                  if v is not None), None)
    last = None
    for _o, _k, v in read_range(root, topic, max(start, end - _PROBE), end):
        last = v if v is not None else last
    out: dict[str, dict[str, Any]] = {}
    for value in (first, last):
        if value is not None:
            for f in _value_fields(value):
                out.setdefault(f["field"], f)
    return list(out.values())


def table_schema(root: Path, ranges: Mapping[str, tuple[int, int]]) -> pa.Schema:
    """The rows' Arrow schema: the union of the topics' row columns (see the module
    docstring), then `META`."""
    columns: dict[str, pa.Field] = {}
    for topic, (start, end) in sorted(ranges.items()):
        for f in _probe(root, topic, start, end):
            field = pa.field(f["field"], field_type(f).arrow)
            seen = columns.setdefault(field.name, field)
            if seen.type != field.type:
                raise SourceOptionError(
                    f"headwater source: column {field.name!r} is {seen.type} in one topic and "
                    f"{field.type} in {topic}; read them apart or give a schema")
    if not columns:
        raise SourceOptionError(
            f"headwater source: topics {', '.join(sorted(ranges))} hold no change event to "
            "take the table's columns from; give the schema with .schema(...)")
    clash = sorted(set(columns) & set(META.names))
    if clash:
        raise SourceOptionError(f"headwater source: table column(s) {', '.join(clash)} have "
                                "the names of the source's own columns")
    return pa.schema([*columns.values(), *META])


def spark_schema(schema: pa.Schema) -> Any:
    """Spark's StructType of the rows (naive timestamps as TIMESTAMP_NTZ, as the pipeline's
    Delta tables hold them)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema, prefer_timestamp_ntz=True)


def arrow_schema(struct: Any) -> pa.Schema:
    """The Arrow schema Spark takes the batches of `struct` in."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(struct, timestamp_utc=True)


def decode_range(root: Path, topic: str, start: int, end: int) -> pa.Table | None:
    """Every change event of a topic's range in the changelog layout plus `TOPIC` and
    `SOURCE_TABLE` (None: no events): column-wise, else event by event."""
    try:
        decoded = columnar.decode_changelog(
            topic, columnar.scan(root, topic, start, end, columnar.Positions()))
        if decoded is None:
            return None
        table, schema_name, table_name = decoded.rows, decoded.schema_name, decoded.table_name
    except NotColumnar:
        changes = decode_topic(topic, read_range(root, topic, start, end))
        if not changes.events:
            return None
        table = columnar.changelog_table(changes)
        schema_name, table_name = changes.schema_name, changes.table_name
    source_table = ".".join(p for p in (schema_name, table_name) if p) or None
    n = table.num_rows
    table = table.append_column(TOPIC, pa.array([topic] * n, pa.string()))
    return table.append_column(SOURCE_TABLE, pa.array([source_table] * n, pa.string()))


def conform(table: pa.Table, schema: pa.Schema, topic: str, start: int, end: int) -> pa.Table:
    """The decoded rows in the read's schema: a column it lacks is null, a column the events
    carry beyond it is an error (module docstring)."""
    extra = [n for n in table.column_names if n not in schema.names]
    if extra:
        raise ValueError(
            f"headwater source: topic {topic} offsets {start}..{end - 1}: column(s) "
            f"{', '.join(extra)} are not in the read's schema (the table changed after the "
            "schema was taken): read again, or give a schema that has them")
    arrays = []
    for field in schema:
        if field.name not in table.column_names:
            arrays.append(pa.nulls(table.num_rows, field.type))
            continue
        col = table.column(field.name)
        try:
            arrays.append(col if col.type == field.type else col.cast(field.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ValueError(f"headwater source: topic {topic} offsets {start}..{end - 1}: "
                             f"column {field.name!r} does not fit {field.type}: {exc}") from None
    return pa.Table.from_arrays(arrays, schema=schema)


def read_part(root: Path, topic: str, start: int, end: int, schema: pa.Schema,
              ) -> Iterator[pa.RecordBatch]:
    """One partition's rows as Arrow batches (in an executor)."""
    table = decode_range(root, topic, start, end)
    if table is not None:
        yield from conform(table, schema, topic, start, end).to_batches(max_chunksize=65_536)


def plan_parts(root: Path, ranges: Mapping[str, tuple[int, int]], per_part: int,
               ) -> list[tasks.Task]:
    """The ranges cut into partitions of at most `per_part` records, at segment starts where
    one is near (`tasks.plan`)."""
    return tasks.plan(root, dict(ranges), os.cpu_count() or 1, min(per_part,
                      tasks.MIN_TASK_RECORDS), per_part)


def register(spark: Any) -> None:
    """Registers the `headwater` batch and streaming source with a Spark session."""
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceReader,
        DataSourceStreamReader,
        InputPartition,
    )

    class Part(InputPartition):
        def __init__(self, topic: str, start: int, end: int) -> None:
            self.topic, self.start, self.end = topic, start, end

    def parts(root: Path, ranges: Mapping[str, tuple[int, int]], per_part: int) -> list[Part]:
        return [Part(t.topic, t.start, t.end) for t in plan_parts(root, ranges, per_part)]

    class Reader(DataSourceReader):
        def __init__(self, root: Path, ranges: dict[str, tuple[int, int]], per_part: int,
                     schema: Any) -> None:
            self.root, self.ranges, self.per_part = str(root), ranges, per_part
            self.schema = arrow_schema(schema)

        def partitions(self) -> list[Part]:
            return parts(Path(self.root), self.ranges, self.per_part)

        def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
            assert isinstance(partition, Part)
            return read_part(Path(self.root), partition.topic, partition.start, partition.end,
                             self.schema)

    class StreamReader(DataSourceStreamReader):
        """Offsets are `{topic: next offset}`; a new query starts at each log start."""

        def __init__(self, root: Path, spec: str, per_part: int, schema: Any) -> None:
            self.root, self.spec, self.per_part = str(root), spec, per_part
            self.schema = arrow_schema(schema)

        def _now(self) -> dict[str, tuple[int, int]]:
            return matching_topics(Path(self.root), self.spec)

        def initialOffset(self) -> dict[str, int]:  # noqa: N802 (Spark's name)
            return {t: start for t, (start, _end) in self._now().items()}

        def latestOffset(self, start: dict[str, int] | None = None,  # noqa: N802
                         limit: Any = None) -> dict[str, int]:
            latest = {t: end for t, (_start, end) in self._now().items()}
            damage = rewound(Path(self.root), start or {}, latest)
            if damage is not None:
                raise damage
            return latest

        def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[Part]:
            ranges = {t: (start.get(t, 0), o) for t, o in end.items() if o > start.get(t, 0)}
            return parts(Path(self.root), ranges, self.per_part)

        def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
            assert isinstance(partition, Part)
            return read_part(Path(self.root), partition.topic, partition.start, partition.end,
                             self.schema)

        def commit(self, end: dict[str, int]) -> None:
            """Nothing to release: the topic log keeps its records by its own retention."""

    class Source(DataSource):
        @classmethod
        def name(cls) -> str:
            return NAME

        def schema(self) -> Any:
            root, spec, _ = check_options(self.options)
            return spark_schema(table_schema(root, matching_topics(root, spec)))

        def reader(self, schema: Any) -> Reader:
            root, spec, per_part = check_options(self.options)
            ranges = {t: r for t, r in matching_topics(root, spec).items() if r[1] > r[0]}
            return Reader(root, ranges, per_part, schema)

        def streamReader(self, schema: Any) -> StreamReader:  # noqa: N802 (Spark's name)
            root, spec, per_part = check_options(self.options)
            return StreamReader(root, spec, per_part, schema)

    spark.dataSource.register(Source)
