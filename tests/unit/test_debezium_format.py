"""The Debezium JSON format: golden events from the reference, tombstones, key changes, options."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest

from headwater.connectors.postgres.position import PostgresPosition, PostgresSourceBlock
from headwater.convert.decimal import decimal_to_unscaled_bytes
from headwater.converters.connect_json import avro_name, json_default
from headwater.converters.headers import header_value
from headwater.converters.json import JsonConverter
from headwater.formats.debezium_json import DebeziumJsonFormat
from headwater.model.record import (
    ABSENT,
    UNCHANGED_TOAST,
    ChangeRecord,
    Op,
    SnapshotMarker,
    SourceContext,
    TxInfo,
)
from headwater.model.schema import INT32, STRING, Column, ConnectSchema, TableId, TableSchema
from tests.record_json import json_of

GOLDEN = Path(__file__).parent.parent / "golden"
CTX = SourceContext("postgresql", "PostgreSQL_server", "headwater-0.1.0")


def customers(key: tuple[str, ...] = ("id",)) -> TableSchema:
    cols = (
        Column("id", 0, "int4", ConnectSchema(INT32, optional=False), fallback=0),
        Column("first_name", 1, "varchar", ConnectSchema(STRING, optional=False), 255, fallback=""),
        Column("last_name", 2, "varchar", ConnectSchema(STRING, optional=False), 255, fallback=""),
        Column("email", 3, "varchar", ConnectSchema(STRING, optional=False), 255, fallback=""),
    )
    return TableSchema(TableId("postgres", "public", "customers"), cols, key)


ANNE = (1, "Anne", "Kretchmar", "annek@noanswer.org")
POS = PostgresPosition(24023128, 24023128, 24023119, 555)


def record(op: Op, before: Any, after: Any, **kw: Any) -> ChangeRecord:
    args: dict[str, Any] = {
        "context": CTX, "table": customers(), "op": op, "before": before, "after": after,
        "source_ts_ms": 1559033904863, "processed_ts_ms": 1559033904863,
        "snapshot": SnapshotMarker.FALSE, "position": POS,
    }
    args.update(kw)
    return ChangeRecord(**args)


def fmt(**kw: Any) -> DebeziumJsonFormat:
    return DebeziumJsonFormat(PostgresSourceBlock(), **kw)


def test_golden_customers_create_matches_reference_field_by_field() -> None:
    ((topic, out),) = fmt().render(record(Op.CREATE, None, ANNE))
    assert topic == "PostgreSQL_server.public.customers"
    assert json_of(out.key) == json_of((GOLDEN / "customers_key.json").read_bytes())
    got = json_of(out.value)
    want = orjson.loads((GOLDEN / "customers_create_value.json").read_bytes())
    assert got["schema"] == want["schema"]
    assert got["payload"] == want["payload"]
    # Field order of the envelope and the source block is Debezium's.
    assert list(got["payload"]) == [
        "before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"]
    assert list(got["payload"]["source"]) == [
        "version", "connector", "name", "ts_ms", "snapshot", "db", "sequence", "ts_us", "ts_ns",
        "schema", "table", "txId", "lsn", "xmin", "origin", "origin_lsn"]


def test_delete_is_followed_by_tombstone_with_same_key() -> None:
    (_, d), (_, t) = fmt().render(record(Op.DELETE, ANNE, None))
    assert json_of(d.value)["payload"]["op"] == "d"
    assert json_of(d.value)["payload"]["after"] is None
    assert t.key == d.key and t.value is None


def test_tombstones_can_be_disabled() -> None:
    assert len(fmt(tombstones_on_delete=False).render(record(Op.DELETE, ANNE, None))) == 1


def test_absent_values_render_as_null_or_fallback_and_toast_as_placeholder() -> None:
    table = customers()
    cols = list(table.columns)
    cols[3] = Column("email", 3, "text", ConnectSchema(STRING, optional=True))
    table = TableSchema(table.id, tuple(cols), ("id",))
    ((_, d), _) = fmt().render(record(Op.DELETE, (7, ABSENT, ABSENT, ABSENT), None, table=table))
    assert json_of(d.value)["payload"]["before"] == {
        "id": 7, "first_name": "", "last_name": "", "email": None}
    ((_, u),) = fmt(toasted_value_placeholder="__x").render(
        record(Op.UPDATE, None, (7, "a", UNCHANGED_TOAST, "e"), table=table))
    assert json_of(u.value)["payload"]["after"]["last_name"] == "__x"


def test_key_change_headers() -> None:
    """SimpleHeaderConverter form by default (Values text of the key struct), JsonConverter
    envelopes when it is the header converter; `header_value` reads both."""
    new = (2, *ANNE[1:])
    batch = [record(Op.DELETE, ANNE, None, other_key=new),
             record(Op.CREATE, None, new, other_key=ANNE)]
    ((_, (d, t, c)),) = fmt().render_batch(batch).items()
    assert dict(d.headers)["__debezium.newkey"] == b'{"id":2}'
    assert dict(c.headers)["__debezium.oldkey"] == b'{"id":1}'
    assert t.value is None and json_of(t.key)["payload"] == {"id": 1}
    json_fmt = fmt(header_converter=JsonConverter(True))
    ((_, (jd, _, jc)),) = json_fmt.render_batch(batch).items()
    envelope = orjson.loads(dict(jd.headers)["__debezium.newkey"] or b"")
    assert envelope["payload"] == {"id": 2}
    assert envelope["schema"]["name"] == "PostgreSQL_server.public.customers.Key"
    for simple, json, name, key in ((d, jd, "newkey", {"id": 2}), (c, jc, "oldkey", {"id": 1})):
        for form in (simple, json):
            assert header_value(dict(form.headers)[f"__debezium.{name}"]) == key
            # (SimpleHeaderConverter text carries no schema: taskId "0" reads back as 0.)
            assert header_value(dict(form.headers)["__debezium.context.taskId"]) in ("0", 0)


def test_keyless_table_delete_has_null_key_and_a_null_key_tombstone() -> None:
    # Debezium 3.x (differential test) sends the tombstone of a keyless delete too.
    table = TableSchema(customers().id, customers().columns, ())
    out = fmt().render(record(Op.DELETE, ANNE, None, table=table))
    assert [(r.key, r.value is None) for _, r in out] == [(None, False), (None, True)]


def test_context_headers_on_data_events_only() -> None:
    f = fmt(run_id="run-1")
    ((_, out),) = f.render(record(Op.CREATE, None, ANNE))
    expected = [("connectorLogicalName", "PostgreSQL_server"), ("taskId", "0"),
                ("connectorName", "postgresql"), ("runId", "run-1")]
    # SimpleHeaderConverter, a Kafka Connect worker's default: the string's UTF-8 text.
    assert out.headers == tuple((f"__debezium.context.{k}", v.encode()) for k, v in expected)
    ((_, out),) = fmt(run_id="run-1", header_converter=JsonConverter(True)).render(
        record(Op.CREATE, None, ANNE))
    assert {k: orjson.loads(v or b"") for k, v in out.headers} == {
        f"__debezium.context.{k}": {"schema": {"type": "string", "optional": False},
                                    "payload": v}
        for k, v in expected
    }
    assert fmt(context_headers=False).render(record(Op.CREATE, None, ANNE))[0][1].headers == ()


def test_schemas_disabled_gives_bare_payloads() -> None:
    ((_, out),) = fmt(key_schemas=False, value_schemas=False).render(
        record(Op.CREATE, None, ANNE))
    assert json_of(out.key) == {"id": 1}
    assert json_of(out.value)["after"]["email"] == "annek@noanswer.org"


def test_snapshot_markers_and_transaction_block() -> None:
    r = record(Op.READ, None, ANNE, snapshot=SnapshotMarker.LAST, tx=TxInfo("555", 3, 2))
    plain = json_of(fmt().render(r)[0][1].value)["payload"]
    assert plain["source"]["snapshot"] == "last" and plain["transaction"] is None
    withtx = json_of(
        fmt(provide_transaction_metadata=True).render(r)[0][1].value)["payload"]
    assert withtx["transaction"] == {"id": "555", "total_order": 3, "data_collection_order": 2}


def test_schema_bytes_are_cached_per_table_object() -> None:
    f = fmt()
    t = customers()
    a = f.plan(t, CTX)
    assert f.plan(t, CTX) is a
    assert f.plan(customers(), CTX) is not a  # a new TableSchema (schema change) re-plans


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Decimal("0"), b"\x00"),
        (Decimal("-1"), b"\xff"),
        (Decimal("127"), b"\x7f"),
        (Decimal("128"), b"\x00\x80"),
        (Decimal("-128"), b"\x80"),
        (Decimal("-129"), b"\xff\x7f"),
        (Decimal("1.00"), b"\x64"),
        (Decimal("2.55"), b"\x00\xff"),
        (Decimal("-12.345"), (-12345).to_bytes(2, "big", signed=True)),
    ],
)
def test_decimal_unscaled_bytes_match_java_biginteger(value: Decimal, expected: bytes) -> None:
    assert decimal_to_unscaled_bytes(value) == expected


def test_json_default_encodes_bytes_and_decimals_as_base64() -> None:
    assert json_default(b"\x01\x02") == "AQI="
    assert json_default(Decimal("1.00")) == "ZA=="
    with pytest.raises(TypeError):
        json_default(object())


@pytest.mark.parametrize(
    ("name", "first", "expected"),
    [("PostgreSQL_server", True, "PostgreSQL_server"), ("my-server", True, "my_server"),
     ("1abc", True, "_abc"), ("1abc", False, "1abc"), ("tbl.x", False, "tbl_x")],
)
def test_avro_name_sanitisation(name: str, first: bool, expected: str) -> None:
    assert avro_name(name, first=first) == expected


def test_a_key_change_tombstone_carries_the_newkey_header_on_both_paths() -> None:
    """Debezium 3.6's EventDispatcher copies the delete's headers onto its tombstone: the
    topic log's bytes and the Connect records (Kafka, Avro) alike."""
    new = (2, *ANNE[1:])
    batch = [record(Op.DELETE, ANNE, None, other_key=new),
             record(Op.CREATE, None, new, other_key=ANNE)]
    ((_, (_, t, _)),) = fmt().render_batch(batch).items()
    assert t.value is None
    assert dict(t.headers)["__debezium.newkey"] == b'{"id":2}'
    assert "__debezium.oldkey" not in dict(t.headers)
    delete, tombstone, create = fmt().render_connect(batch)
    assert tombstone.value is None and tombstone.value_schema is None
    assert tombstone.headers == delete.headers
    (newkey,) = [h for h in tombstone.headers if h.key == "__debezium.newkey"]
    assert newkey.value["id"] == 2
    assert "__debezium.newkey" not in {h.key for h in create.headers}


@pytest.mark.parametrize("position", [
    POS,
    PostgresPosition(24023128, 24023128, None, None),  # before any commit, no xid
    PostgresPosition(7, 9, 5, 4, xmin=3, commit_ts_us=1559033904863123),
])
@pytest.mark.parametrize("snapshot", list(SnapshotMarker))
def test_the_postgres_source_json_is_its_payload_serialized(
        position: PostgresPosition, snapshot: SnapshotMarker) -> None:
    """The hot path's per-table template of the `source` block writes what serializing the
    payload dict writes, also for null positions and a `%` in the names."""
    table = TableSchema(TableId("db%d", "s%s", "t%%"), customers().columns, ("id",))
    ctx = SourceContext("postgresql", "server%s", "3.6%")
    block = PostgresSourceBlock()
    rec = record(Op.UPDATE, None, ANNE, position=position, snapshot=snapshot, table=table,
                 context=ctx)
    assert block.json_renderer(table, ctx)(rec) == orjson.dumps(block.payload(rec))


def test_one_postgres_source_renderer_follows_every_change_of_transaction() -> None:
    """The renderer formats a transaction's numbers once for the records that share them:
    each record's JSON is still its own payload's, whichever of those numbers changes from
    one record to the next (and back)."""
    table = TableSchema(TableId("db%d", "s%s", "t%%"), customers().columns, ("id",))
    ctx = SourceContext("postgresql", "server%s", "3.6%")
    block = PostgresSourceBlock()
    render = block.json_renderer(table, ctx)
    base = PostgresPosition(100, 200, 50, 7, xmin=None, commit_ts_us=1559033904863123)
    variants: list[dict[str, Any]] = [
        {}, {"lsn": 101}, {"lsn": 102}, {"last_commit_lsn": None}, {"last_commit_lsn": 60},
        {"tx_id": None}, {"tx_id": 8}, {"xmin": 3}, {"commit_ts_us": None},
        {"commit_ts_us": 1559033904863124}, {}, {"lsn": 10**19},
    ]
    records = [record(Op.UPDATE, None, ANNE, position=base._replace(**v), snapshot=s,
                      source_ts_ms=ts, table=table, context=ctx)
               for v in variants for s in (SnapshotMarker.FALSE, SnapshotMarker.LAST)
               for ts in (1559033904863, 1559033904864)]
    rendered = [render(r) for r in records]
    assert rendered == [orjson.dumps(block.payload(r)) for r in records]
    assert len(set(rendered)) > len(records) // 2  # the records really differ


def test_the_value_template_keeps_a_percent_in_the_schema_and_the_absent_fallbacks() -> None:
    """The value is a `%` template with the schema JSON as an argument: a `%` in a column name
    stays as it is; a key-only before image shows null or the NOT NULL column's fallback."""
    cols = (*customers().columns[:3],
            Column("e%smail", 3, "varchar", ConnectSchema(STRING, optional=True), 255))
    table = TableSchema(TableId("postgres", "public", "customers"), cols, ("id",))
    ((_, (delete, _)),) = fmt().render_batch(
        [record(Op.DELETE, (1, ABSENT, UNCHANGED_TOAST, ABSENT), None, table=table)]).items()
    assert delete.value is not None
    doc = orjson.loads(delete.value)
    assert doc["payload"]["before"] == {"id": 1, "first_name": "",
                                        "last_name": "__debezium_unavailable_value",
                                        "e%smail": None}
    assert [f["field"] for f in doc["schema"]["fields"][0]["fields"]][-1] == "e%smail"


def test_a_batch_renders_each_event_processing_time() -> None:
    """The envelope's ts_ms/ts_us/ts_ns are formatted once per distinct processing time of a
    batch: every event still carries its own, as when rendered alone."""
    table = customers()
    times = [1559033904863, 1559033904863, 1559033904864, 1559033904863, 0, 1, 1, 2**40]
    records = [record(Op.UPDATE, ANNE, ANNE, processed_ts_ms=ts, table=table) for ts in times]
    f = fmt(run_id="run")
    ((_, batch),) = f.render_batch(records).items()
    alone = [r for rec in records for _, r in f.render(rec)]
    assert batch == alone
    assert [orjson.loads(r.value or b"")["payload"]["ts_ns"] for r in batch] == [
        ts * 1_000_000 for ts in times]


@pytest.mark.parametrize(("op", "before", "after"), [
    (Op.CREATE, None, ANNE[:3]),
    (Op.UPDATE, ANNE[:3], ANNE),
    (Op.DELETE, (*ANNE, "extra"), None),
])
def test_a_row_image_of_another_width_than_the_table_is_refused(
        op: Op, before: Any, after: Any) -> None:
    """The hot path zips a row image with the column names without zip's `strict` when their
    lengths match: an image of another width still raises (zip's ValueError), never renders
    a truncated row."""
    with pytest.raises(ValueError, match="zip"):
        fmt().render_batch([record(op, before, after)])


@pytest.mark.parametrize("key_schemas", [True, False])
def test_a_one_column_key_is_its_value_in_the_key_template(key_schemas: bool) -> None:
    """A one-column key is rendered from a `%` template of the key's JSON with the value
    alone serialized: the same bytes as the key dict serialized, a `%` in the column or the
    table name kept, the values of every type (null, bytes, Decimal) as orjson and
    json_default write them."""
    cols = (Column("i%sd", 0, "int4", ConnectSchema(INT32, optional=False)),
            *customers().columns[1:])
    table = TableSchema(TableId("postgres", "public", "cu%dstomers"), cols, ("i%sd",))
    f = fmt(key_schemas=key_schemas)
    plan = f.plan(table, CTX)
    assert plan.key_template is not None
    for key in (1, -(2**63), "x\"%s", None, b"\x00\xff", Decimal("1.50")):
        row = (key, "Anne", "K", "a@b")
        ((_, (created,)),) = f.render_batch(
            [record(Op.CREATE, None, row, table=table)]).items()
        payload = orjson.dumps({"i%sd": key}, default=json_default)
        assert created.key == (plan.key_prefix + payload + b"}" if key_schemas else payload)
        assert created.key == f._key(plan, row)
