"""Datastream events from ChangeRecords: every field of PostgreSQL and MySQL events (golden),
change types of updates and key changes, deterministic uuids, sort_keys across backfill and
log events, the data-driven Oracle/SQL Server definitions and the seed's example flow."""

from __future__ import annotations

import io
import uuid
from decimal import Decimal
from typing import Any, NamedTuple

import orjson
import pytest
from fastavro import parse_schema, schemaless_reader

from headwater.connectors.mysql.position import MySqlPosition
from headwater.connectors.postgres.position import PostgresPosition
from headwater.formats.datastream.renderer import (
    AVRO_SCHEMA_HEADER,
    OBJECT_HEADER,
    UUID_NAMESPACE,
    DatastreamFormat,
)
from headwater.formats.datastream.sources import SOURCES, pg_lsn
from headwater.model.record import (
    ABSENT,
    UNCHANGED_TOAST,
    ChangeRecord,
    Op,
    SnapshotMarker,
    SourceContext,
    TransactionEvent,
)
from headwater.model.schema import (
    BYTES,
    INT32,
    INT64,
    STRING,
    Column,
    ConnectSchema,
    TableId,
    TableSchema,
)
from tests.record_json import json_of

STREAM = "projects/myProj/locations/myLoc/streams/pg-stream"
PG = SourceContext("postgresql", "srv", "headwater-test")
MY = SourceContext("mysql", "srv", "headwater-test")

DECIMAL = ConnectSchema(BYTES, name="org.apache.kafka.connect.data.Decimal",
                        parameters={"scale": "2", "connect.decimal.precision": "10"})


def pg_table() -> TableSchema:
    return TableSchema(TableId("shop", "public", "orders"), (
        Column("id", 0, "int4", ConnectSchema(INT32, optional=False)),
        Column("note", 1, "text", ConnectSchema(STRING)),
        Column("amount", 2, "numeric", DECIMAL),
        Column("placed", 3, "timestamp", ConnectSchema(
            INT64, name="io.debezium.time.MicroTimestamp")),
    ), ("id",))


def my_table() -> TableSchema:
    return TableSchema(TableId("shop", None, "orders"), (
        Column("id", 0, "INT", ConnectSchema(INT32, optional=False)),
        Column("note", 1, "VARCHAR", ConnectSchema(STRING)),
        Column("took", 2, "TIME", ConnectSchema(INT64, name="io.debezium.time.MicroTime")),
    ), ("id",))


PG_POS = PostgresPosition(lsn=0x16B374D848, commit_lsn=0x16B374D900, last_commit_lsn=1, tx_id=77)
PG_SNAP = PostgresPosition(lsn=0x100, commit_lsn=0x100, last_commit_lsn=None, tx_id=None)
MY_POS = MySqlPosition("mysql-bin.000003", 154, 2, 1, None, 7, None)
MY_SNAP = MySqlPosition("mysql-bin.000003", 100, 0, 1, None, None, None)
ROW = (1, "hello", Decimal("12.30"), 1_573_110_939_000_000)
SRC_MS, READ_MS = 1_573_110_939_000, 1_573_129_036_808


def rec(ctx: SourceContext, table: TableSchema, op: Op, before: Any, after: Any,
        position: Any, **kw: Any) -> ChangeRecord:
    args: dict[str, Any] = dict(context=ctx, table=table, op=op, before=before, after=after,
                                source_ts_ms=SRC_MS, processed_ts_ms=READ_MS,
                                snapshot=SnapshotMarker.FALSE, position=position)
    args.update(kw)
    return ChangeRecord(**args)


def events(fmt: DatastreamFormat, *records: ChangeRecord) -> list[dict[str, Any]]:
    return [orjson.loads(r.value or b"") for recs in fmt.render_batch(records).values()
            for r in recs]


def test_postgresql_insert_every_field_golden() -> None:
    (event,) = events(DatastreamFormat(STREAM), rec(PG, pg_table(), Op.CREATE, None, ROW, PG_POS))
    name = f"{STREAM}\x1fpublic_orders\x1f{PG_POS.order_key}\x1fINSERT"
    assert event == {
        "stream_name": STREAM,
        "read_method": "postgres-cdc-wal",
        "object": "public_orders",
        "schema_key": event["schema_key"],
        "uuid": str(uuid.uuid5(UUID_NAMESPACE, name)),
        "read_timestamp": "2019-11-07T12:17:16.808Z",
        "source_timestamp": "2019-11-07T07:15:39.000Z",
        "sort_keys": [0x16B374D900, 0x16B374D848, 1, 0],
        "source_metadata": {
            "schema": "public", "table": "orders", "is_deleted": False,
            "change_type": "INSERT", "tx_id": "77", "lsn": "16/B374D848",
            "primary_keys": ["id"],
        },
        "payload": {"id": 1, "note": "hello", "amount": 12.30,
                    "placed": "2019-11-07T07:15:39"},
    }
    assert len(event["schema_key"]) == 40 and int(event["schema_key"], 16) >= 0
    # field order: generic metadata as Datastream lists it, then source metadata and payload
    assert list(event) == ["stream_name", "read_method", "object", "schema_key", "uuid",
                           "read_timestamp", "source_timestamp", "sort_keys",
                           "source_metadata", "payload"]
    assert list(event["source_metadata"]) == ["schema", "table", "is_deleted", "change_type",
                                              "tx_id", "lsn", "primary_keys"]


def test_postgresql_update_delete_and_backfill() -> None:
    fmt = DatastreamFormat(STREAM)
    upd, dele, back = events(
        fmt,
        rec(PG, pg_table(), Op.UPDATE, ROW, (*ROW[:1], "new", *ROW[2:]), PG_POS),
        # REPLICA IDENTITY DEFAULT: the source sent only the key of the deleted row
        rec(PG, pg_table(), Op.DELETE, (1, ABSENT, ABSENT, ABSENT), None, PG_POS._replace(
            lsn=PG_POS.lsn + 8)),
        rec(PG, pg_table(), Op.READ, None, ROW, PG_SNAP, snapshot=SnapshotMarker.TRUE),
    )
    assert upd["source_metadata"]["change_type"] == "UPDATE"
    assert upd["payload"]["note"] == "new"  # the new row, no before image
    assert dele["source_metadata"]["is_deleted"] is True
    assert dele["source_metadata"]["change_type"] == "DELETE"
    assert dele["payload"] == {"id": 1, "note": None, "amount": None, "placed": None}
    assert back["read_method"] == "postgresql-backfill"
    assert back["source_metadata"]["change_type"] == "INSERT"
    assert back["source_metadata"]["lsn"] is None and back["source_metadata"]["tx_id"] is None
    assert back["sort_keys"] == [0x100, 0x100, 0, 0]
    # a backfill row sorts before every log event after the snapshot point
    assert back["sort_keys"] < upd["sort_keys"] < dele["sort_keys"]


def test_mysql_events_every_field_golden_and_split_updates() -> None:
    fmt = DatastreamFormat("my-stream")
    new_row = (2, "moved", 3_600_000_000 * 30)
    ins, upd, key_del, key_ins, dele, back, inc = events(
        fmt,
        rec(MY, my_table(), Op.CREATE, None, (1, "a", -1_000_000), MY_POS),
        rec(MY, my_table(), Op.UPDATE, (1, "a", 0), (1, "b", 0), MY_POS._replace(row=3)),
        rec(MY, my_table(), Op.DELETE, (1, "b", 0), None, MY_POS._replace(pos=400),
            other_key=new_row),
        rec(MY, my_table(), Op.CREATE, None, new_row, MY_POS._replace(pos=400),
            other_key=(1, "b", 0)),
        rec(MY, my_table(), Op.DELETE, new_row, None, MY_POS._replace(pos=500)),
        rec(MY, my_table(), Op.READ, None, (9, "z", 0), MY_SNAP, snapshot=SnapshotMarker.LAST),
        rec(MY, my_table(), Op.READ, None, (9, "z", 0), MY_SNAP,
            snapshot=SnapshotMarker.INCREMENTAL),
    )
    assert ins == {
        "stream_name": "my-stream",
        "read_method": "mysql-cdc-binlog",
        "object": "shop_orders",
        "schema_key": ins["schema_key"],
        "uuid": ins["uuid"],
        "read_timestamp": "2019-11-07T12:17:16.808Z",
        "source_timestamp": "2019-11-07T07:15:39.000Z",
        "sort_keys": [3, 154, 2, 1, 0],
        "source_metadata": {
            "log_file": "mysql-bin.000003", "log_position": 154, "primary_keys": ["id"],
            "is_deleted": False, "database": "shop", "table": "orders",
            "change_type": "INSERT",
        },
        # MySQL TIME is TIME_INTERVAL: microseconds, negative allowed
        "payload": {"id": 1, "note": "a", "took": -1_000_000},
    }
    assert list(ins["source_metadata"]) == ["log_file", "log_position", "primary_keys",
                                            "is_deleted", "database", "table", "change_type"]
    assert upd["source_metadata"]["change_type"] == "UPDATE-INSERT"
    assert (key_del["source_metadata"]["change_type"], key_del["source_metadata"]["is_deleted"],
            key_del["payload"]["id"]) == ("UPDATE-DELETE", True, 1)
    assert (key_ins["source_metadata"]["change_type"], key_ins["source_metadata"]["is_deleted"],
            key_ins["payload"]["id"]) == ("UPDATE-INSERT", False, 2)
    assert key_del["sort_keys"] < key_ins["sort_keys"]  # one position: delete half first
    assert key_del["uuid"] != key_ins["uuid"]
    assert dele["source_metadata"]["change_type"] == "DELETE"
    assert back["read_method"] == "mysql-backfill-fulldump"
    assert inc["read_method"] == "mysql-backfill-incremental"
    assert (back["source_metadata"]["log_file"], back["source_metadata"]["log_position"]) == (
        "", 0)
    assert back["sort_keys"] == [3, 100, 0, 0, 0] < ins["sort_keys"]


def test_uuid_is_deterministic_and_distinct() -> None:
    records = [rec(PG, pg_table(), Op.CREATE, None, ROW, PG_POS._replace(lsn=PG_POS.lsn + i))
               for i in range(50)]
    first = [e["uuid"] for e in events(DatastreamFormat(STREAM), *records)]
    again = [e["uuid"] for e in events(DatastreamFormat(STREAM), *records)]
    assert first == again  # a re-delivered event (new process) keeps its uuid
    assert len(set(first)) == 50
    other = [e["uuid"] for e in events(DatastreamFormat("other"), *records)]
    assert not set(first) & set(other)
    # backfill rows share the snapshot position: the key tells them apart, keyless the ordinal
    keyless = TableSchema(TableId("shop", "public", "log"),
                          (Column("v", 0, "text", ConnectSchema(STRING)),))
    reads = [rec(PG, keyless, Op.READ, None, ("same",), PG_SNAP, snapshot=SnapshotMarker.TRUE)
             for _ in range(3)]
    uuids = [e["uuid"] for e in events(DatastreamFormat(STREAM), *reads)]
    assert len(set(uuids)) == 3
    assert uuids == [e["uuid"] for e in events(DatastreamFormat(STREAM), *reads)]


def test_non_row_events_and_truncate_are_not_rendered() -> None:
    fmt = DatastreamFormat(STREAM)
    tx = TransactionEvent(PG, "BEGIN", "77", SRC_MS, None, None, PG_POS)
    truncate = rec(PG, pg_table(), Op.TRUNCATE, None, None, PG_POS)
    assert fmt.render_batch([tx, truncate]) == {}


def test_unchanged_toast_keeps_placeholder_for_text_not_null() -> None:
    (event,) = events(DatastreamFormat(STREAM, toasted_value_placeholder="__toast"), rec(
        PG, pg_table(), Op.UPDATE, None, (1, UNCHANGED_TOAST, Decimal("1.00"), 0), PG_POS))
    assert event["payload"]["note"] == "__toast"


def test_avro_datum_round_trips_through_fastavro_with_unified_types() -> None:
    fmt = DatastreamFormat(STREAM, encoding="avro")
    out = fmt.render_batch([rec(PG, pg_table(), Op.CREATE, None, ROW, PG_POS)])
    ((record,),) = out.values()
    headers = dict(record.headers)
    assert headers[OBJECT_HEADER] == b"public_orders"
    schema = json_of(headers[AVRO_SCHEMA_HEADER])
    payload = next(f for f in schema["fields"] if f["name"] == "payload")["type"]
    assert [(f["name"], f["unifiedType"], f["sourceType"]) for f in payload["fields"]] == [
        ("id", "INTEGER", "int4"), ("note", "STRING", "text"),
        ("amount", "DECIMAL(10,2)", "numeric"), ("placed", "TIMESTAMP", "timestamp")]
    got = schemaless_reader(io.BytesIO(record.value or b""), parse_schema(schema), None)
    assert isinstance(got, dict)
    assert got["read_method"] == "postgres-cdc-wal"
    assert got["sort_keys"] == [0x16B374D900, 0x16B374D848, 1, 0]
    assert got["payload"]["amount"] == Decimal("12.30")
    # PostgreSQL timestamp is Datastream's TIMESTAMP (timestamp-micros), not a DATETIME record
    assert got["payload"]["placed"].isoformat() == "2019-11-07T07:15:39+00:00"
    assert got["source_timestamp"].isoformat() == "2019-11-07T07:15:39+00:00"
    # the JSON event of the same record has the same identity
    (js,) = events(DatastreamFormat(STREAM), rec(PG, pg_table(), Op.CREATE, None, ROW, PG_POS))
    assert (got["uuid"], got["schema_key"]) == (js["uuid"], js["schema_key"])


class OraclePosition(NamedTuple):
    """What an Oracle connector's position will offer (the definition names the attributes)."""

    scn: int
    rs_id: str
    ssn: int
    row_id: str
    log_file: str | None = None
    tx_id: str | None = None

    @property
    def order_key(self) -> tuple[int, int, int, int, int]:
        a, b, c = (int(p, 16) for p in self.rs_id.split("."))
        return (self.scn, a, b, c, self.ssn)


def test_seed_example_flow_oracle_insert_update_delete() -> None:
    """S003 §3.7: INSERT, UPDATE, DELETE of one row; the well-defined fields reproduced."""
    sample = TableSchema(TableId("DB1", "ROOT", "SAMPLE"), (
        Column("THIS_IS_MY_PK", 0, "NUMBER", ConnectSchema(INT64, optional=False)),
        Column("FIELD1", 1, "NCHAR", ConnectSchema(STRING)),
        Column("FIELD2", 2, "NCHAR", ConnectSchema(STRING)),
    ), ("THIS_IS_MY_PK",))
    ctx = SourceContext("oracle", "ora", "x")
    stream = "projects/myProj/locations/myLoc/streams/Oracle-to-Source"
    t0, t1 = (1231535353, "foo", "TLV"), (1231535353, None, "TLV")
    flow = events(
        DatastreamFormat(stream),
        rec(ctx, sample, Op.CREATE, None, t0,
            OraclePosition(15869116216871, "0x0073c9.000a4e4c.01d0", 67, "AAAPwRAALAAMzMBABD")),
        rec(ctx, sample, Op.UPDATE, t0, t1,
            OraclePosition(15869150473224, "0x0073c9.000a4e4c.01d1", 0, "AAAPwRAALAAMzMBABD")),
        rec(ctx, sample, Op.DELETE, t1, None,
            OraclePosition(15869150473255, "0x0073c9.000a4e4c.01d2", 0, "AAAPwRAALAAMzMBABD")),
    )
    assert [e["read_method"] for e in flow] == ["oracle-cdc-logminer"] * 3
    assert [e["stream_name"] for e in flow] == [stream] * 3
    assert [e["source_metadata"]["change_type"] for e in flow] == [
        "INSERT", "UPDATE-INSERT", "DELETE"]
    assert [e["source_metadata"]["is_deleted"] for e in flow] == [False, False, True]
    assert [e["payload"] for e in flow] == [
        {"THIS_IS_MY_PK": 1231535353, "FIELD1": "foo", "FIELD2": "TLV"},
        {"THIS_IS_MY_PK": 1231535353, "FIELD1": None, "FIELD2": "TLV"},
        {"THIS_IS_MY_PK": 1231535353, "FIELD1": None, "FIELD2": "TLV"},  # last image
    ]
    first = flow[0]["source_metadata"]
    assert list(first) == ["log_file", "scn", "row_id", "is_deleted", "database", "schema",
                           "table", "change_type", "tx_id", "rs_id", "ssn"]
    assert (first["scn"], first["rs_id"], first["ssn"], first["schema"], first["table"],
            first["database"]) == (15869116216871, "0x0073c9.000a4e4c.01d0", 67, "ROOT",
                                   "SAMPLE", "DB1")
    assert flow[0]["sort_keys"] < flow[1]["sort_keys"] < flow[2]["sort_keys"]
    assert len({e["uuid"] for e in flow}) == 3


def test_every_source_definition_has_the_generic_fields_it_needs() -> None:
    for kind, spec in SOURCES.items():
        names = [f.name for f in spec.fields]
        assert "is_deleted" in names and "change_type" in names, kind
        assert len(names) == len(set(names)), kind
        assert spec.cdc and spec.backfill, kind
    assert SOURCES["sqlserver"].cdc == "sqlserver-cdc"
    assert SOURCES["mariadb"] is SOURCES["mysql"]


def test_decimal_in_every_connect_form_is_a_json_number() -> None:
    from headwater.convert.decimal import ConnectDecimal, decimal_to_unscaled_bytes

    forms = (Decimal("-12.30"), ConnectDecimal.of(-1230, 2), decimal_to_unscaled_bytes(
        Decimal("-12.30")))
    for form in forms:
        (event,) = events(DatastreamFormat(STREAM), rec(
            PG, pg_table(), Op.CREATE, None, (1, None, form, None), PG_POS))
        assert event["payload"]["amount"] == -12.3, form


def test_pg_lsn_text_form() -> None:
    assert pg_lsn(0x16B374D848) == "16/B374D848"
    assert pg_lsn(0) == "0/0"


def test_unknown_source_is_an_error() -> None:
    with pytest.raises(ValueError, match="no Datastream definition"):
        events(DatastreamFormat(STREAM), rec(SourceContext("db2", "x", "y"), pg_table(),
                                             Op.CREATE, None, ROW, PG_POS))


def test_number_is_a_string_in_json_and_avro() -> None:
    """Datastream's NUMBER: Avro `string` logicalType `number`, JSON string (unified types
    page). A Connect Decimal without precision and a VariableScaleDecimal are NUMBERs."""
    from headwater.convert.decimal import ConnectDecimal, decimal_to_unscaled_bytes
    from headwater.formats.datastream.unified import unified_type

    no_precision = ConnectSchema(BYTES, name="org.apache.kafka.connect.data.Decimal",
                                 parameters={"scale": "2"})
    u = unified_type(Column("n", 0, "numeric", no_precision), "postgresql")
    assert u.name == "NUMBER" and u.avro == {"type": "string", "logicalType": "number"}
    assert u.to_json is not None and u.to_avro is not None
    for form in (Decimal("-12.30"), ConnectDecimal.of(-1230, 2),
                 decimal_to_unscaled_bytes(Decimal("-12.30"))):
        assert u.to_json(form) == "-12.30", form
        assert u.to_avro(form) == "-12.30", form
    variable = ConnectSchema(INT64, name="io.debezium.data.VariableScaleDecimal")
    v = unified_type(Column("v", 0, "numeric", variable), "postgresql")
    assert v.name == "NUMBER" and v.to_json is not None
    assert v.to_json({"scale": 3, "value": (12345).to_bytes(2, "big")}) == "12.345"


def test_unified_avro_definitions_follow_datastream_documentation() -> None:
    """The Avro definitions of docs/datastream.md's documented unified types table."""
    from headwater.formats.datastream.unified import DATETIME_RECORD, INTERVAL_RECORD

    assert DATETIME_RECORD == {
        "type": "record", "name": "datetime",
        "fields": [{"name": "date", "type": {"type": "int", "logicalType": "date"}},
                   {"name": "time", "type": {"type": "long", "logicalType": "time-micros"}}]}
    assert INTERVAL_RECORD == {
        "type": "record", "name": "interval",
        "fields": [{"name": "months", "type": "int"}, {"name": "hours", "type": "int"},
                   {"name": "micros", "type": "long"}]}
