"""Logical decoding message events (op ``m``) as the format renders them.

Why: Debezium's LogicalDecodingMessageMonitor builds these records itself, outside the
EventDispatcher that adds the ``__debezium.context.*`` headers to data change events, so they
carry no headers; a consumer keyed on those headers must see the same records from Headwater.
The differential test compares them with Debezium's record by record; this one pins the shape
without a database.
"""

from __future__ import annotations

import base64

import orjson

from headwater.config.connector_common import NameFilter
from headwater.connectors.postgres.messages import MessageCapture
from headwater.connectors.postgres.position import PostgresPosition, PostgresSourceBlock
from headwater.formats.debezium_json import DebeziumJsonFormat
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext, TxInfo

CTX = SourceContext("postgresql", "srv", "headwater-test")


def message(mode: str, content: bytes, tx: TxInfo | None) -> ChangeRecord:
    capture = MessageCapture("db", mode, NameFilter((), ()))
    return ChangeRecord(
        context=CTX, table=capture.table, op=Op.MESSAGE, before=None,
        after=("hw.p", capture.encode(content)), source_ts_ms=5, processed_ts_ms=7,
        snapshot=SnapshotMarker.FALSE, position=PostgresPosition(200, 200, 100, None), tx=tx,
    )


def test_message_event_has_debeziums_envelope_and_no_headers() -> None:
    fmt = DebeziumJsonFormat(PostgresSourceBlock(), provide_transaction_metadata=True)
    tx = TxInfo("42", 2, 1)
    ((topic, out),) = fmt.render(message("bytes", b"\x00\xff", tx))
    assert topic == "srv.message"
    assert out.headers == ()
    assert out.key is not None and out.value is not None
    assert orjson.loads(out.key)["payload"] == {"prefix": "hw.p"}
    value = orjson.loads(out.value)
    payload = value["payload"]
    assert list(payload) == ["op", "ts_ms", "source", "transaction", "message"]
    assert payload["op"] == "m" and payload["ts_ms"] == 7
    assert payload["message"] == {"prefix": "hw.p",
                                  "content": base64.b64encode(b"\x00\xff").decode()}
    assert payload["transaction"] == {"id": "42", "total_order": 2, "data_collection_order": 1}
    assert (payload["source"]["schema"], payload["source"]["table"]) == ("", "")
    assert value["schema"]["name"] == "io.debezium.connector.postgresql.MessageValue"
    # the other path (transforms, other converters) agrees
    (record,) = fmt.render_connect([message("bytes", b"\x00\xff", tx)])
    assert record.headers == () and record.topic == "srv.message"
    assert record.key == {"prefix": "hw.p"}


def test_message_content_follows_binary_handling_mode() -> None:
    fmt = DebeziumJsonFormat(PostgresSourceBlock())
    for mode, expected, schema_type in (("hex", "00ff", "string"),
                                        ("base64", "AP8=", "string"),
                                        ("bytes", "AP8=", "bytes")):
        ((_, out),) = fmt.render(message(mode, b"\x00\xff", None))
        assert out.value is not None
        value = orjson.loads(out.value)
        assert value["payload"]["message"]["content"] == expected
        assert value["payload"]["transaction"] is None
        block = next(f for f in value["schema"]["fields"] if f["field"] == "message")
        assert block["fields"][1] == {"type": schema_type, "optional": True, "field": "content"}
