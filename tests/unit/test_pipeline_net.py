"""Decoding and the net-change fold: ordering, dedup, truncates, TOAST, keys."""

from __future__ import annotations

import base64
import itertools
import random
from typing import Any

import orjson
import pytest

from headwater.pipeline.decode import decode_topic, sequence_key
from headwater.pipeline.net import KeylessTableError, net_changes

ROW_SCHEMA = {
    "type": "struct", "optional": True, "name": "s.public.t.Value",
    "fields": [
        {"type": "int32", "optional": False, "field": "id"},
        {"type": "string", "optional": True, "field": "v"},
        {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
         "parameters": {"scale": "2", "connect.decimal.precision": "10"}, "field": "amount"},
    ],
}
KEY_SCHEMA = {"type": "struct", "optional": False, "name": "s.public.t.Key",
              "fields": [{"type": "int32", "optional": False, "field": "id"}]}


def event(op: str, key: int | None, v: str | None, lsn: int, prev_commit: int | None,
          snapshot: str = "false", amount: str | None = None) -> tuple[bytes | None, bytes]:
    row = {"id": key, "v": v, "amount": amount}
    value = {
        "schema": {"type": "struct", "fields": [
            {**ROW_SCHEMA, "field": "before"}, {**ROW_SCHEMA, "field": "after"}]},
        "payload": {
            "before": row if op == "d" else None,
            "after": None if op in ("d", "t") else row,
            "source": {"connector": "postgresql", "schema": "public", "table": "t", "lsn": lsn,
                       "txId": lsn, "snapshot": snapshot,
                       "sequence": orjson.dumps([None if prev_commit is None else str(prev_commit),
                                                 str(lsn)]).decode()},
            "op": op, "ts_ms": 1,
        },
    }
    k = None if key is None or op == "t" else orjson.dumps(
        {"schema": KEY_SCHEMA, "payload": {"id": key}})
    return k, orjson.dumps(value)


def decode(events: list[tuple[bytes | None, bytes]]) -> Any:
    return decode_topic("s.public.t", [(i, k, v) for i, (k, v) in enumerate(events)])


def final_state(events: list[tuple[bytes | None, bytes]]) -> dict[Any, Any]:
    net, _ = net_changes(decode(events).events, "public.t")
    assert all(n.delete or n.row is not None for n in net)
    return {n.key[0]: (None if n.delete or n.row is None else n.row["v"]) for n in net}


def test_decodes_types_key_and_table_shape() -> None:
    ch = decode([event("c", 1, "a", 100, 50, amount="AJY=")])  # unscaled 150 -> 1.50
    (e,) = ch.events
    assert (ch.schema_name, ch.table_name, ch.key_columns) == ("public", "t", ("id",))
    assert [c.name for c in ch.column_list] == ["id", "v", "amount"]
    assert e.key == (1,) and str(e.row["amount"]) == "1.50" and e.op == "c"


def test_tombstones_are_skipped_and_bad_input_names_the_offset() -> None:
    k, _ = event("d", 1, "a", 100, 50)
    ch = decode_topic("s.public.t", [(0, k, None)])
    assert ch.events == []
    with pytest.raises(ValueError, match="offset 7"):
        decode_topic("s.public.t", [(7, k, b"{not json")])
    with pytest.raises(ValueError, match=r"schemas\.enable"):
        decode_topic("s.public.t", [(3, k, b'{"op":"c"}')])


def test_snapshot_reads_rank_below_later_stream_events() -> None:
    read = sequence_key({"connector": "postgresql", "lsn": 500, "snapshot": "last",
                         "sequence": '[null,"500"]'}, None, 9)
    first_stream = sequence_key({"connector": "postgresql", "lsn": 500,
                                 "snapshot": "false", "sequence": '[null,"500"]'},
                                None, 10)
    later = sequence_key({"connector": "postgresql", "lsn": 480, "snapshot": "false",
                          "sequence": '["600","480"]'}, None, 11)
    assert read < first_stream < later


def test_commit_order_beats_lsn_order_for_interleaved_transactions() -> None:
    # tx A commits first (prev commit 100) with a change at LSN 300; tx B commits next
    # (prev commit = A's commit 400) but its change sits earlier in the WAL (LSN 200).
    a = event("u", 1, "from A", 300, 100)
    b = event("u", 1, "from B", 200, 400)
    assert final_state([a, b]) == {1: "from B"}
    assert final_state([b, a]) == {1: "from B"}  # arrival order does not matter


def test_duplicates_are_dropped() -> None:
    c = event("c", 1, "a", 100, 50)
    d = event("d", 1, "a", 200, 150)
    net, _ = net_changes(decode([c, d, c, d, c]).events, "public.t")
    assert [(n.key, n.delete) for n in net] == [((1,), True)]


def test_truncate_clears_older_events_in_the_batch() -> None:
    evs = [event("c", 1, "a", 100, 50), event("t", None, None, 200, 150),
           event("c", 2, "b", 300, 250)]
    net, truncate = net_changes(decode(evs).events, "public.t")
    assert truncate is not None and [n.key for n in net] == [(2,)]


def test_unchanged_toast_is_filled_from_the_previous_event_in_the_batch() -> None:
    evs = [event("c", 1, "full", 100, 50), event("u", 1, "__debezium_unavailable_value", 200, 150)]
    (n,), _ = net_changes(decode(evs).events, "public.t")
    assert n.row is not None and n.row["v"] == "full" and not n.unavailable
    (m,), _ = net_changes(decode(evs[1:]).events, "public.t")
    assert m.unavailable == frozenset({"v"})  # the target keeps its value


def test_a_placeholder_in_base64_is_unsent_too() -> None:
    """MySQL's NOBLOB BLOB columns carry the placeholder's bytes (base64 in JSON, as Debezium
    writes them): the target keeps its value rather than taking those bytes."""
    b64 = base64.b64encode(b"__debezium_unavailable_value").decode()
    (m,), _ = net_changes(decode([event("u", 1, b64, 200, 150)]).events, "public.t")
    assert m.unavailable == frozenset({"v"})


def test_keyless_tables_need_a_key_for_merges() -> None:
    with pytest.raises(KeylessTableError, match=r"message\.key\.columns"):
        net_changes(decode([event("c", None, "a", 100, 50)]).events, "public.t")


def test_every_interleaving_of_a_small_history_gives_the_same_final_state() -> None:
    history = [
        event("r", 1, "snap1", 90, None, snapshot="true"),
        event("r", 2, "snap2", 90, None, snapshot="last"),
        event("u", 1, "x", 95, 90),
        event("d", 2, "snap2", 96, 90),
        event("c", 2, "again", 120, 110),
        event("u", 1, "y", 105, 110),
    ]
    want = {1: "y", 2: "again"}
    for perm in itertools.permutations(history):
        assert final_state(list(perm)) == want
    rng = random.Random(3)
    for _ in range(200):  # with duplicates too
        evs = history + rng.sample(history, 3)
        rng.shuffle(evs)
        assert final_state(evs) == want


def test_logical_decoding_messages_are_no_row_changes() -> None:
    """`<topic.prefix>.message` matches a pipeline's `<prefix>.*` topics: its op m events are
    skipped, an unknown op still fails."""
    message = orjson.dumps({"schema": {"type": "struct", "fields": []}, "payload": {
        "op": "m", "ts_ms": 1, "source": {"lsn": 5}, "transaction": None,
        "message": {"prefix": "p", "content": "eA=="}}})
    assert decode_topic("s.message", [(0, b'{"prefix":"p"}', message)]).events == []
    with pytest.raises(ValueError, match="unknown op 'x'"):
        decode_topic("s.message", [(0, None, message.replace(b'"op":"m"', b'"op":"x"'))])
