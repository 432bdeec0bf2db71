"""What the cheaper MySQL streaming path must keep: a binlog codec's memoised converters answer
by object, never by equality; the source block's per-table JSON template writes the
payload's bytes; a rows event converted column by column gives the row-by-row
values, and a failing value still goes through the dispatcher's converting failure mode."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

import orjson
import pytest

from headwater.connectors.mysql.columns import JdbcTimestamp, MySqlColumn, MySqlTable
from headwater.connectors.mysql.position import MySqlPosition, MySqlSourceBlock
from headwater.connectors.mysql.tables import build_codec
from headwater.connectors.mysql.types import MySqlTypeModes
from headwater.engine.dispatcher import DispatchOptions, EventConvertingError, EventDispatcher
from headwater.engine.metrics import CaptureMetrics
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
from headwater.relational.codec import convert_images, row_images

CONTEXT = SourceContext("mariadb", "shop", "3.5.0.Final")


def _table(name: str = "orders") -> MySqlTable:
    return MySqlTable("shop", name, (
        MySqlColumn("id", "BIGINT", nullable=False),
        MySqlColumn("price", "DECIMAL", 10, 2),
        MySqlColumn("at", "TIMESTAMP", 3),
        MySqlColumn("note", "VARCHAR", 20, charset="utf8mb4"),
    ), ("id",))


def _codec(name: str = "orders") -> Any:
    return build_codec(_table(name), MySqlTypeModes(), lambda *_: True)


def test_the_binlog_codec_remembers_by_object_not_by_equality() -> None:
    binlog = _codec().binlog()
    stamp = datetime(2026, 11, 30, 12, 0, 0, 100000)
    jdbc = JdbcTimestamp(2026, 11, 30, 12, 0, 0, 100000)  # == stamp, same hash
    assert stamp == jdbc
    first = binlog.convert((1, Decimal("-0.00"), stamp, "a"))
    second = binlog.convert((2, Decimal("0.00"), jdbc, "b"))
    assert first[2] == "2026-11-30T12:00:00.100Z"  # binlog form: the column's 3 digits
    assert second[2] == "2026-11-30T12:00:00.1Z"  # JDBC form: as few digits as needed
    plain = _codec()
    assert second == plain.convert((2, Decimal("0.00"), jdbc, "b"))
    # the same object again is answered from the memo, with the same value
    assert binlog.convert((1, Decimal("-0.00"), stamp, "a")) == first
    assert _codec().binlog() is not binlog  # one per codec (table version)


def test_the_binlog_codec_shares_the_schema_object() -> None:
    codec = _codec()
    assert codec.binlog().schema is codec.schema  # the renderer's plan cache is per object
    assert codec.binlog() is codec.binlog()


def _record(block_table: Any, row: int, ts: int = 1_764_500_000_000,
            context: SourceContext = CONTEXT) -> ChangeRecord:
    return ChangeRecord(context, block_table, Op.CREATE, None, (1, None, None, None), ts, ts,
                        SnapshotMarker.FALSE,
                        MySqlPosition("mysql-bin.000003", 400, row, 7, "0-7-9", 11, "INSERT"))


def test_the_source_block_is_the_full_block_of_each_record() -> None:
    block = MySqlSourceBlock("mariadb")
    orders, items = _codec("orders").schema, _codec("items").schema
    other = SourceContext("mariadb", "other", "3.5.0.Final")
    payloads = [block.payload(_record(orders, 0)), block.payload(_record(items, 1, ts=5)),
                block.payload(_record(orders, 2, context=other))]
    assert [orjson.dumps(p) for p in payloads] == [
        b'{"version":"3.5.0.Final","connector":"mariadb","name":"shop","ts_ms":1764500000000,'
        b'"snapshot":"false","db":"shop","sequence":null,"ts_us":1764500000000000,'
        b'"ts_ns":1764500000000000000,"table":"orders","server_id":7,"gtid":"0-7-9",'
        b'"file":"mysql-bin.000003","pos":400,"row":0,"thread":11,"query":"INSERT"}',
        b'{"version":"3.5.0.Final","connector":"mariadb","name":"shop","ts_ms":5,'
        b'"snapshot":"false","db":"shop","sequence":null,"ts_us":5000,"ts_ns":5000000,'
        b'"table":"items","server_id":7,"gtid":"0-7-9","file":"mysql-bin.000003","pos":400,'
        b'"row":1,"thread":11,"query":"INSERT"}',
        b'{"version":"3.5.0.Final","connector":"mariadb","name":"other","ts_ms":1764500000000,'
        b'"snapshot":"false","db":"shop","sequence":null,"ts_us":1764500000000000,'
        b'"ts_ns":1764500000000000000,"table":"orders","server_id":7,"gtid":"0-7-9",'
        b'"file":"mysql-bin.000003","pos":400,"row":2,"thread":11,"query":"INSERT"}',
    ]
    payloads[0]["row"] = 99  # a record's block is its own
    assert block.payload(_record(orders, 3))["row"] == 3



@pytest.mark.parametrize("snapshot", list(SnapshotMarker))
def test_the_source_json_is_its_payload_serialized(snapshot: SnapshotMarker) -> None:
    """The hot path's per-table template of the `source` block writes what serializing the
    payload dict writes, also for null positions and `%` or quotes in names and the query;
    one renderer formats an event's values once for the records sharing them, and each
    record's JSON is still its own payload's whichever value changes from one to the next
    (and back)."""
    block = MySqlSourceBlock("mariadb")
    table = _codec("or%sders").schema
    ctx = SourceContext("mariadb", "sh%dop", "3.5%")
    render = block.json_renderer(table, ctx)
    base = MySqlPosition("mysql-bin.000003", 400, 2, 7, "0-7-9", 11,
                         "INSERT INTO t VALUES ('%d \"x\"')")
    variants: list[dict[str, Any]] = [
        {}, {"row": 3}, {"row": 4}, {"file": "mysql-bin.000004"}, {"pos": 4}, {"server_id": 1},
        {"gtid": None}, {"gtid": "0-7-10"}, {"thread": None}, {"query": None},
        {"ts_sec": 9}, {}, {"file": "mysql-bin.000004", "pos": 4, "row": 0, "server_id": 1,
                            "gtid": None, "thread": None, "query": None}]
    records = [ChangeRecord(ctx, table, Op.CREATE, None, (1, None, None, None), ts, 5,
                            snapshot, base._replace(**v))
               for v in variants for ts in (5, 6)]
    rendered = [render(r) for r in records]
    assert rendered == [orjson.dumps(block.payload(r)) for r in records]
    assert len(set(rendered)) > len(records) // 2  # the records really differ


def _dispatcher(mode: str) -> EventDispatcher:
    return EventDispatcher(CONTEXT, DispatchOptions(converting_failure_mode=mode),
                           CaptureMetrics(), lambda batch: None)


def test_a_rows_event_converts_column_by_column_as_row_by_row() -> None:
    codec = _codec().binlog()
    shared = datetime(2026, 1, 2, 3, 4, 5, 600000)
    images = [(i, Decimal(i) / 4, shared if i % 2 else None, None if i % 3 else f"n{i}")
              for i in range(50)]
    assert convert_images(_dispatcher("fail"), codec, images) == [
        _codec().convert(image) for image in images]


@pytest.mark.parametrize("mode", ["fail", "warn"])
def test_a_failing_value_goes_through_the_converting_failure_mode(mode: str) -> None:
    codec = _codec().binlog()
    images = [(1, Decimal("1.5"), None, "a"), (2, "not a decimal", None, "b")]
    dispatcher = _dispatcher(mode)
    if mode == "fail":
        with pytest.raises(EventConvertingError, match="column price"):
            convert_images(dispatcher, codec, images)
        return
    out = convert_images(dispatcher, codec, images)
    assert out[0] == _codec().convert(images[0])
    assert out[1][1] is None and out[1][3] == "b"
    assert dispatcher.metrics.erroneous_events == 1


def test_a_rows_event_s_images_are_paired_by_operation() -> None:
    def tens(images: Any) -> list[tuple[Any, ...]]:
        return [tuple(v * 10 for v in image) for image in images]

    updates = [((1,), (2,)), ((3,), (4,))]  # (before, after) pairs
    assert row_images(tens, Op.UPDATE, updates) == ([(10,), (30,)], [(20,), (40,)])
    assert row_images(tens, Op.CREATE, [(1,)]) == ([None], [(10,)])
    assert row_images(tens, Op.DELETE, [(1,)]) == ([(10,)], [None])


def test_a_memoised_column_converts_at_once_as_value_by_value() -> None:
    """A binlog codec's memoised converter converts a whole column (`column`): the values
    value by value would give, nulls as null, remembered or not; a column holding the
    codec's unsent marker gives None (the codec then goes row by row)."""
    codec = _codec().binlog()
    price = codec.column_converters[1]
    assert price is not None and codec.column_converters[0] is None
    shared = Decimal("1.25")
    column = [shared, None, Decimal("-0.00"), shared, Decimal("7")]
    expected = [None if v is None else _codec().converters[1](v) for v in column]
    assert price(column, codec.UNSENT) == expected  # misses
    assert price(column, codec.UNSENT) == expected  # hits
    assert price([shared, codec.UNSENT], codec.UNSENT) is None
    images = [(i, v, None, "n") for i, v in enumerate(column)]
    assert codec.convert_rows(images) == [_codec().convert(image) for image in images]
