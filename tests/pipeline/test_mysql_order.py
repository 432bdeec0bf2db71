"""Change order of MySQL/MariaDB events (binlog coordinates) in the decoder's sequence."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from headwater.connectors.mysql.ordering import binlog_number
from headwater.pipeline.decode import decode_topic, sequence_key
from headwater.pipeline.net import dedup, net_changes

ROW = {"type": "struct", "optional": True, "fields": [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "string", "optional": True, "field": "v"}]}
KEY = {"type": "struct", "optional": False, "fields": [
    {"type": "int32", "optional": False, "field": "id"}]}


def source(file: str | None, pos: int | None, row: int | None,
           snapshot: Any = "false", connector: str = "mysql") -> dict[str, Any]:
    return {"version": "2.7", "connector": connector, "name": "shop", "ts_ms": 0,
            "snapshot": snapshot, "db": "shop", "sequence": None, "table": "t",
            "server_id": 1, "gtid": None, "file": file, "pos": pos, "row": row,
            "thread": None, "query": None}


def seq(file: str, pos: int, row: int, snapshot: Any = "false", offset: int = 0) -> str:
    return sequence_key(source(file, pos, row, snapshot), None, offset)


@pytest.mark.parametrize(("name", "number"), [
    ("mysql-bin.000003", 3), ("mariadb-bin.000123", 123), ("binlog.1000000", 1_000_000),
    ("nosuffix", 0), ("", 0), (None, 0)])
def test_binlog_file_number_is_the_name_suffix(name: str | None, number: int) -> None:
    assert binlog_number(name) == number


def test_stream_order_is_file_then_position_then_row() -> None:
    ordered = [seq("mysql-bin.000003", 4, 0), seq("mysql-bin.000003", 4, 1),
               seq("mysql-bin.000003", 4, 12), seq("mysql-bin.000003", 900, 0),
               seq("mysql-bin.000003", 2**40, 0),
               seq("mysql-bin.000004", 4, 0),  # a later file wins over a larger position
               seq("mysql-bin.000010", 4, 0)]  # numerically, not as text
    assert sorted(ordered) == ordered
    assert len({len(s) for s in ordered}) == 1  # fixed width: string order is tuple order


@pytest.mark.parametrize("marker", ["true", "last", "incremental", True])
def test_snapshot_reads_rank_at_their_binlog_position(marker: Any) -> None:
    snap = seq("mysql-bin.000003", 500, 7, snapshot=marker, offset=99)
    assert seq("mysql-bin.000003", 499, 3) < snap  # stream events before the snapshot
    assert seq("mysql-bin.000002", 9000, 0) < snap
    assert snap < seq("mysql-bin.000003", 500, 0)  # stream from that position on
    assert snap < seq("mysql-bin.000003", 501, 0)
    assert snap < seq("mysql-bin.000004", 4, 0)
    # the snapshot's row is 0, whatever the event says
    assert snap == seq("mysql-bin.000003", 500, 0, snapshot=marker, offset=99)


def test_topic_offset_breaks_ties_only() -> None:
    assert seq("mysql-bin.000003", 500, 0, "true", 1) < seq("mysql-bin.000003", 500, 0, "true", 2)
    assert seq("mysql-bin.000003", 500, 1, offset=0) > seq("mysql-bin.000003", 500, 0, offset=9)


def event(op: str, key: int, v: str, src: dict[str, Any]) -> tuple[bytes, bytes]:
    row = {"id": key, "v": v}
    value = {"schema": {"type": "struct", "fields": [{**ROW, "field": "before"},
                                                     {**ROW, "field": "after"}]},
             "payload": {"before": row if op == "d" else None,
                         "after": None if op == "d" else row, "source": src, "op": op,
                         "ts_ms": 0}}
    return orjson.dumps({"schema": KEY, "payload": {"id": key}}), orjson.dumps(value)


def final(events: list[tuple[bytes, bytes]]) -> dict[int, str | None]:
    changes = decode_topic("shop.shop.t", [(i, k, v) for i, (k, v) in enumerate(events)])
    net, _ = net_changes(changes.events, "shop.t")
    return {n.key[0]: None if n.delete else (n.row or {})["v"] for n in net}


def test_net_change_follows_the_binlog_not_the_topic_order() -> None:
    f = "mysql-bin.000007"
    events = [
        event("u", 1, "stream after snapshot", source(f, 800, 0)),
        event("r", 1, "snapshot", source(f, 600, 0, "true")),
        event("r", 2, "snapshot", source(f, 600, 0, "last")),
        event("u", 2, "stream before snapshot", source(f, 550, 2)),  # late, older: loses
        event("u", 3, "second row of the event", source(f, 900, 1)),
        event("u", 3, "first row of the event", source(f, 900, 0)),
        event("d", 4, "x", source("mysql-bin.000008", 4, 0)),
        event("c", 4, "older file", source(f, 9999, 0)),
    ]
    assert final(events) == {1: "stream after snapshot", 2: "snapshot",
                             3: "second row of the event", 4: None}


def test_redeliveries_collapse_but_distinct_updates_do_not() -> None:
    f = "mysql-bin.000001"
    a = event("u", 1, "a", source(f, 100, 0))
    b = event("u", 1, "b", source(f, 200, 0))
    changes = decode_topic("shop.shop.t", [(0, *a), (1, *b), (2, *a)])
    kept = dedup(changes.events)
    assert [e.offset for e in kept] == [0, 1]  # same op, same key, other position: both kept
    assert final([a, b, a]) == {1: "b"}


def test_mariadb_connector_orders_by_the_binlog_too() -> None:
    def maria(pos: int, snapshot: str = "false") -> str:
        return sequence_key(source("mariadb-bin.000002", pos, 0, snapshot, "mariadb"), None, 0)

    assert maria(100) < maria(200, "true") < maria(200) < maria(300)
    assert maria(200) == seq("mariadb-bin.000002", 200, 0)
