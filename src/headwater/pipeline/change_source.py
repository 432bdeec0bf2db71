"""The public Spark source `headwater`: change events of the topic log or Kafka as typed rows.

`spark.read.format("headwater")` and `spark.readStream.format("headwater")` (after
`headwater.spark.register(spark)`) give every change event of the chosen topics as a row:
the table's columns (the after image; the before image for a delete), then the changelog
columns the pipeline's `changelog` mode writes (`columnar.CHANGELOG_META`), then the topic, its
partition (0 in the local topic log) and the source table.  It is for users who write their own
Spark code (a MERGE, Spark Declarative Pipelines, a warehouse of their own) rather than run
`headwater pipeline`.

Why a Python data source and not a second decoder: each Spark partition is a range of one
topic's (Kafka: one topic partition's) offsets, and it is read and decoded in the executor by
the pipeline's own code (`change_stores`): column-wise (`columnar.decode_changelog`) or,
outside that shape, event by event (`decode.decode_topic`), and handed to Spark as Arrow
batches.

The schema is fixed when the DataFrame is made (Spark asks for it before any partition runs):
the row columns of the first and the last event of each topic's range, unless the reader is
given one (`.schema(...)`).  A partition whose events carry a column outside it is an error
naming the column, topic and offsets, never a column silently dropped; a column the schema
has but an event lacks (added later) is null.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from headwater.pipeline import tasks
from headwater.pipeline.change_stores import (
    PARTITION,
    SOURCE_TABLE,
    TOPIC,
    KafkaStore,
    LocalStore,
    SourceOptionError,
    Store,
)
from headwater.pipeline.columnar import CHANGELOG_META, NotColumnar
from headwater.pipeline.connect_types import field_type
from headwater.pipeline.source import rewound

NAME = "headwater"
# The columns after the table's: the changelog's bookkeeping, then where the row comes from.
META = pa.schema([*CHANGELOG_META, (TOPIC, pa.string()), (PARTITION, pa.int32()),
                  (SOURCE_TABLE, pa.string())])
OPTIONS = ("store", "path", "topic", "partitionrecords")  # (Spark lower-cases option names)
KAFKA_PREFIX = "kafka."  # options passed to the Kafka consumer, as Spark's kafka source does
_PROBE = 64  # records read at each end of a range to find its first and last value schema

__all__ = ["META", "NAME", "PARTITION", "SOURCE_TABLE", "TOPIC", "SourceOptionError",
           "register"]


def check_options(options: Mapping[str, str]) -> tuple[Store, str, int]:
    """(store, topic names or globs, records per partition), refusing unknown options: an
    option of another store given here would otherwise be ignored without a word."""
    lower = {k.lower(): v for k, v in options.items()}
    store_name = lower.get("store", "local").strip().lower()
    if store_name not in ("local", "kafka"):
        raise SourceOptionError(f"headwater source: option store: {store_name!r} is not local "
                                "or kafka (Datastream files are not read by this source)")
    kafka = store_name == "kafka"
    unknown = sorted(k for k in options if k.lower() not in OPTIONS
                     and not (kafka and k.lower().startswith(KAFKA_PREFIX)))
    if kafka and "path" in lower:
        unknown.append("path")
    if unknown:
        raise SourceOptionError(
            f"headwater source: unknown option(s) {', '.join(unknown)} for store "
            f"{store_name} (options: store, path, topic, partitionRecords, and kafka.* with "
            "store kafka)")
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
    if kafka:
        config = {k[len(KAFKA_PREFIX):]: v for k, v in options.items()
                  if k.lower().startswith(KAFKA_PREFIX)}
        return KafkaStore(config), spec, per_part
    if not lower.get("path"):
        raise SourceOptionError("headwater source: option path (the topic log directory) is "
                                "missing")
    root = Path(lower["path"])
    if not root.is_dir():
        raise SourceOptionError(f"headwater source: option path: {root} is not a directory")
    return LocalStore(root), spec, per_part


def _value_fields(slot: str, offset: int, value: bytes) -> list[dict[str, Any]]:
    """The row fields of an event's embedded schema; a value without one (Avro, or
    JsonConverter with schemas.enable=false) is an error naming where it is."""
    try:
        schema = orjson.loads(value)["schema"]
        fields: list[dict[str, Any]] = tasks._row_fields(schema)
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError, NotColumnar):
        raise SourceOptionError(
            f"headwater source: {slot} offset {offset}: the value is not a Debezium JSON "
            "document with its schema (JsonConverter, schemas.enable=true); Avro values and "
            "schemaless JSON are not read by this source") from None
    return fields


def _probe(store: Store, slot: str, start: int, end: int) -> list[dict[str, Any]]:
    """The row fields of the first and last change event of a range (first's order, then the
    last's new fields)."""
    first = next(((o, v) for o, _k, v in store.records(slot, start, min(end, start + _PROBE))
                  if v is not None), None)
    last = None
    for o, _k, v in store.records(slot, max(start, end - _PROBE), end):
        last = (o, v) if v is not None else last
    out: dict[str, dict[str, Any]] = {}
    for found in (first, last):
        if found is not None:
            for f in _value_fields(slot, found[0], found[1]):
                out.setdefault(f["field"], f)
    return list(out.values())


def table_schema(store: Store, ranges: Mapping[str, tuple[int, int]]) -> pa.Schema:
    """The rows' Arrow schema: the union of the topics' row columns (see the module
    docstring), then `META`."""
    columns: dict[str, pa.Field] = {}
    for topic, (start, end) in sorted(ranges.items()):
        if end <= start:
            continue
        for f in _probe(store, topic, start, end):
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


def read_part(store: Store, slot: str, start: int, end: int, schema: pa.Schema,
              ) -> Iterator[pa.RecordBatch]:
    """One partition's rows as Arrow batches (in an executor)."""
    table = store.decode(slot, start, end)
    if table is not None:
        yield from conform(table, schema, slot, start, end).to_batches(max_chunksize=65_536)


def check_not_rewound(store: Store, start: Mapping[str, int], latest: Mapping[str, int]
                      ) -> None:
    """A log that ends before what the query's checkpoint has read (records removed, a topic
    recreated) is an error: new records would reuse offsets the checkpoint has passed."""
    if isinstance(store, LocalStore):
        damage = rewound(Path(store.root), dict(start), dict(latest))
        if damage is not None:
            raise damage
        return
    for slot, end in sorted(latest.items()):
        if end < start.get(slot, 0):
            raise ValueError(f"headwater source: {slot} ends at offset {end} but the query's "
                             f"checkpoint has read up to offset {start[slot]}: the topic was "
                             "recreated or records were removed; start a new checkpoint")


def register(spark: Any) -> None:
    """Registers the `headwater` batch and streaming source with a Spark session."""
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceReader,
        DataSourceStreamReader,
        InputPartition,
    )

    class Part(InputPartition):
        def __init__(self, slot: str, start: int, end: int) -> None:
            self.slot, self.start, self.end = slot, start, end

    class Reader(DataSourceReader):
        def __init__(self, store: Store, ranges: dict[str, tuple[int, int]], per_part: int,
                     schema: Any) -> None:
            self.store, self.ranges, self.per_part = store, ranges, per_part
            self.schema = arrow_schema(schema)

        def partitions(self) -> list[Part]:
            return [Part(*c) for c in self.store.cut(self.ranges, self.per_part)]

        def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
            assert isinstance(partition, Part)
            return read_part(self.store, partition.slot, partition.start, partition.end,
                             self.schema)

    class StreamReader(DataSourceStreamReader):
        """Offsets are `{slot: next offset}` (slot: the topic, or `topic#partition` in
        Kafka); a new query starts at each log start."""

        def __init__(self, store: Store, spec: str, per_part: int, schema: Any) -> None:
            self.store, self.spec, self.per_part = store, spec, per_part
            self.schema = arrow_schema(schema)

        def initialOffset(self) -> dict[str, int]:  # noqa: N802 (Spark's name)
            return {t: start for t, (start, _end) in self.store.ranges(self.spec).items()}

        def latestOffset(self, start: dict[str, int] | None = None,  # noqa: N802
                         limit: Any = None) -> dict[str, int]:
            latest = {t: end for t, (_start, end) in self.store.ranges(self.spec).items()}
            check_not_rewound(self.store, start or {}, latest)
            return latest

        def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[Part]:
            ranges = {t: (start.get(t, 0), o) for t, o in end.items() if o > start.get(t, 0)}
            return [Part(*c) for c in self.store.cut(ranges, self.per_part)]

        def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
            assert isinstance(partition, Part)
            return read_part(self.store, partition.slot, partition.start, partition.end,
                             self.schema)

        def commit(self, end: dict[str, int]) -> None:
            """Nothing to release: the store keeps its records by its own retention."""

    class Source(DataSource):
        @classmethod
        def name(cls) -> str:
            return NAME

        def schema(self) -> Any:
            store, spec, _ = check_options(self.options)
            return spark_schema(table_schema(store, store.ranges(spec)))

        def reader(self, schema: Any) -> Reader:
            store, spec, per_part = check_options(self.options)
            ranges = {t: r for t, r in store.ranges(spec).items() if r[1] > r[0]}
            return Reader(store, ranges, per_part, schema)

        def streamReader(self, schema: Any) -> StreamReader:  # noqa: N802 (Spark's name)
            store, spec, per_part = check_options(self.options)
            return StreamReader(store, spec, per_part, schema)

    spark.dataSource.register(Source)
