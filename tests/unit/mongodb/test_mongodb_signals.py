"""MongoDB signals without a server: signal documents, regex data-collections, shell-style
filters, `_id` keys in offsets and in the window."""

from __future__ import annotations

import datetime
import json

import pytest
from bson import Decimal128, Int64, ObjectId, Regex

from headwater.connectors.mongodb.incremental import decode_key, encode_key, window_key
from headwater.connectors.mongodb.query_json import FilterError, parse_filter
from headwater.connectors.mongodb.signals import expand_signal, signal_from_document
from headwater.engine.signals import ExecuteSnapshot, Signal, StopSnapshot, parse_action


def test_signal_documents_as_debezium_reads_them() -> None:
    s = signal_from_document({"_id": "a", "type": "log", "data": '{"message": "hi"}'})
    assert (s.id, s.type, s.data) == ("a", "log", '{"message": "hi"}')
    # Debezium's tests: an ObjectId _id and the data under another name, as a sub-document
    oid = ObjectId()
    s = signal_from_document({"_id": oid, "type": "execute-snapshot",
                              "payload": {"data-collections": ["db.c"]}})
    assert s.id == str(oid) and json.loads(s.data or "") == {"data-collections": ["db.c"]}
    s = signal_from_document({"_id": oid, "id": "x", "type": "pause-snapshot", "data": None})
    assert (s.id, s.data) == ("x", None)
    assert signal_from_document({"a": 1, "b": 2}).type == ""


def test_data_collections_are_regular_expressions() -> None:
    known = [("db", "orders"), ("db", "order_lines"), ("db", "users"), ("db", "a.b")]
    sig = Signal("1", "execute-snapshot", json.dumps({
        "data-collections": ["db\\.order.*", "db.users", "other.x", "db.a.b"],
        "additional-conditions": [{"data-collection": "db\\.order_.*", "filter": "{x: 1}"}]}))
    action = parse_action(expand_signal(sig, known))
    assert isinstance(action, ExecuteSnapshot)
    assert action.collections == (("db", "orders"), ("db", "order_lines"), ("db", "users"),
                                  ("other", "x"), ("db", "a.b"))
    assert action.conditions == ((("db", "order_lines"), "{x: 1}"),)
    stop = parse_action(expand_signal(Signal("2", "stop-snapshot", json.dumps(
        {"data-collections": ["db\\.u.*"]})), known))
    assert isinstance(stop, StopSnapshot) and stop.collections == (("db", "users"),)
    untouched = Signal("3", "log", '{"message": "x"}')
    assert expand_signal(untouched, known) is untouched


def test_shell_style_filters() -> None:
    assert parse_filter("{ aa: { $lt: 250 } }") == {"aa": {"$lt": 250}}
    assert parse_filter("({'name': 'x', ok: true, n: null, $or: [{a: 1}]})") == {
        "name": "x", "ok": True, "n": None, "$or": [{"a": 1}]}
    assert parse_filter('{"_id": {"$oid": "5f0000000000000000000000"}}') == {
        "_id": ObjectId("5f0000000000000000000000")}
    assert parse_filter("{s: 'a \"q\" b', t: \"it's\"}") == {"s": 'a "q" b', "t": "it's"}
    assert parse_filter("  ") == {}
    with pytest.raises(FilterError):
        parse_filter("color='blue'")
    with pytest.raises(FilterError):
        parse_filter("[1]")


@pytest.mark.parametrize("value", [
    5, -(2**31), 2**31, Int64(7), 1.5, "5", "", ObjectId(), {"a": 1, "b": [1, "x"]},
    datetime.datetime(2024, 5, 1, 12, 0, 0, 123000), Decimal128("1.10"), True,
    Regex("^a", "i"),
])
def test_keys_keep_their_bson_type_in_offsets(value: object) -> None:
    stored = json.loads(json.dumps(encode_key(value)))
    back = decode_key(stored)
    assert (back == value and type(back) is type(value)) or (
        isinstance(value, int) and not isinstance(value, bool) and back == value)
    if type(value) is int and abs(value) < 2**31:
        assert stored == value  # plain numbers for the common case


def test_window_keys_equal_when_mongodb_holds_ids_equal() -> None:
    assert window_key(1) == window_key(1.0) == window_key(Int64(1)) == window_key(
        Decimal128("1.0"))
    assert window_key(1) != window_key("1") and window_key(True) != window_key(1)
    oid = ObjectId()
    assert window_key(oid) == window_key(ObjectId(str(oid)))
    assert window_key({"a": 1}) != window_key({"a": 2})
