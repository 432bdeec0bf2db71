"""The pipeline reads the unified forms Google's tables brought (issue 30): timestampTz and
timeTz records, UNSUPPORTED (null) columns, and MySQL BIGINT UNSIGNED as DECIMAL(20,0), from
the Avro events the renderer writes to the Arrow values the pipeline merges."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal

import pyarrow as pa
from fastavro import parse_schema, schemaless_reader

from headwater.formats.datastream.renderer import AVRO_SCHEMA_HEADER, DatastreamFormat
from headwater.model.record import Op
from headwater.model.schema import INT32, INT64, STRING, Column, ConnectSchema, TableId, TableSchema
from headwater.pipeline.datastream.types import payload_columns
from tests.record_json import json_of
from tests.unit.datastream.test_events import MY, MY_POS, PG, PG_POS, STREAM, rec


def _decoded(table: TableSchema, ctx: object, row: tuple[object, ...], pos: object
             ) -> dict[str, tuple[pa.DataType, object]]:
    fmt = DatastreamFormat(STREAM, encoding="avro", file_headers=True)
    out = fmt.render_batch([rec(ctx, table, Op.CREATE, None, row, pos)])  # type: ignore[arg-type]
    ((record,),) = out.values()
    schema = json_of(dict(record.headers)[AVRO_SCHEMA_HEADER])
    datum = schemaless_reader(io.BytesIO(record.value or b""), parse_schema(schema), None)
    assert isinstance(datum, dict)
    return {c.name: (c.type.arrow, None if datum["payload"][c.avro_name] is None
                     else c.type.decode(datum["payload"][c.avro_name]))
            for c in payload_columns(schema)}


def test_postgresql_zoned_types_and_unsupported_reach_the_pipeline() -> None:
    table = TableSchema(TableId("shop", "public", "t"), (
        Column("id", 0, "int4", ConnectSchema(INT32, optional=False)),
        Column("paid", 1, "timestamptz", ConnectSchema(
            STRING, name="io.debezium.time.ZonedTimestamp")),
        Column("opens", 2, "timetz", ConnectSchema(STRING, name="io.debezium.time.ZonedTime")),
        Column("area", 3, "box", ConnectSchema(STRING)),
    ), ("id",))
    got = _decoded(table, PG, (1, "2024-01-02T01:04:05.5Z", "03:04:05.25Z", "(1,1),(0,0)"),
                   PG_POS)
    assert got["paid"] == (pa.timestamp("us", tz="UTC"),
                           dt.datetime(2024, 1, 2, 1, 4, 5, 500000, tzinfo=dt.UTC))
    assert got["opens"] == (pa.string(), "03:04:05.250000+00:00")
    assert got["area"] == (pa.string(), None)  # UNSUPPORTED: no value, as Datastream


def test_mysql_bigint_unsigned_above_the_signed_range_reaches_the_pipeline() -> None:
    table = TableSchema(TableId("shop", None, "t"), (
        Column("id", 0, "INT", ConnectSchema(INT32, optional=False)),
        Column("big", 1, "BIGINT", ConnectSchema(INT64), unsigned=True),
    ), ("id",))
    # Connect's long holds 2^64-1 as -1 (bigint.unsigned.handling.mode=long)
    got = _decoded(table, MY, (1, -1), MY_POS)
    assert got["big"] == (pa.decimal128(20, 0), Decimal(2**64 - 1))
