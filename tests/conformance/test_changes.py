"""Row changes as Debezium emits them, for every connector: creates, updates, deletes and their
tombstones, primary-key changes, truncates, transaction metadata."""

from __future__ import annotations

import time
from typing import Any

import pytest

from headwater.converters.headers import header_value

from .driver import Column
from .harness import Harness, wait

pytestmark = pytest.mark.integration

ITEMS = [Column("id", "int", nullable=False), Column("name", "varchar(40)", nullable=False),
         Column("n", "int")]


def _items(cdc: Harness, *rows: tuple[int, str, int | None]) -> None:
    cdc.driver.create_table("items", ITEMS, ["id"])
    if rows:
        cdc.driver.execute(*(("INSERT INTO items VALUES (%s, %s, %s)", r) for r in rows))


def test_creates_updates_deletes_and_tombstones(cdc: Harness) -> None:
    d = cdc.driver
    _items(cdc, (1, "a", 1), (2, "b", None))
    cap = cdc.capture()
    try:
        wait(lambda: cdc.count("items") >= 2, "2 snapshot reads", capture=cap)
        d.execute(("INSERT INTO items VALUES (%s, %s, %s)", (3, "c", 3)))
        d.execute("UPDATE items SET name = 'A', n = 10 WHERE id = 1")
        d.execute("DELETE FROM items WHERE id = 2")
        wait(lambda: cdc.count("items") >= 6, "4 streamed records", capture=cap)
    finally:
        cap.stop()
    recs = cdc.records("items")
    assert len(recs) == 6
    reads = [v for _, _, v in recs[:2]]
    assert [(v["op"], v["after"]["id"]) for v in reads] == [("r", 1), ("r", 2)]
    assert [v["source"]["snapshot"] for v in reads] == ["first", "last"]  # Debezium 3.x markers
    assert reads[1]["after"] == {"id": 2, "name": "b", "n": None}
    (_, kc, create), (_, ku, update), (_, kd, delete), (_, kt, tomb) = recs[2:]
    assert (kc, create["op"], create["before"]) == ({"id": 3}, "c", None)
    assert create["after"] == {"id": 3, "name": "c", "n": 3}
    assert (ku, update["op"]) == ({"id": 1}, "u")
    assert update["before"] == {"id": 1, "name": "a", "n": 1}
    assert update["after"] == {"id": 1, "name": "A", "n": 10}
    assert (kd, delete["op"], delete["after"]) == ({"id": 2}, "d", None)
    assert delete["before"] == {"id": 2, "name": "b", "n": None}
    assert (kt, tomb) == ({"id": 2}, None)
    for v in (create, update, delete):
        src = v["source"]
        assert src["snapshot"] == "false" and src["name"] == d.prefix
        assert src["table"] == "items" and src["ts_ms"] > 0
        assert v["ts_ms"] >= src["ts_ms"]
    assert cdc.replayed("items", "name") == cdc.source("items", "name") == {1: "A", 3: "c"}


def test_primary_key_change_is_delete_tombstone_create_with_key_headers(cdc: Harness) -> None:
    _items(cdc, (1, "a", 1))
    cap = cdc.capture()
    try:
        wait(lambda: cdc.count("items") >= 1, "the snapshot read", capture=cap)
        cdc.driver.execute("UPDATE items SET id = 100 WHERE id = 1")
        wait(lambda: cdc.count("items") >= 4, "delete, tombstone, create", capture=cap)
    finally:
        cap.stop()
    recs = cdc.records("items")
    assert len(recs) == 4
    (r1, k1, v1), (r2, k2, v2), (r3, k3, v3) = recs[1:]
    assert (k1, v1["op"], v1["before"], v1["after"]) == (
        {"id": 1}, "d", {"id": 1, "name": "a", "n": 1}, None)
    assert (k2, v2) == ({"id": 1}, None)
    assert (k3, v3["op"], v3["after"]) == ({"id": 100}, "c", {"id": 100, "name": "a", "n": 1})
    if cdc.driver.key_change_headers:
        assert header_value(dict(r1.headers)["__debezium.newkey"]) == {"id": 100}
        assert header_value(dict(r3.headers)["__debezium.oldkey"]) == {"id": 1}
        assert "__debezium.oldkey" not in dict(r1.headers)
        assert "__debezium.newkey" not in dict(r3.headers)
        # the tombstone has the delete's headers, as Debezium's EventDispatcher copies them
        assert header_value(dict(r2.headers)["__debezium.newkey"]) == {"id": 100}
    else:  # the server logged a delete and an insert: two unrelated events, as in Debezium
        assert not {"__debezium.newkey", "__debezium.oldkey"} & {
            name for r in (r1, r3) for name, _ in (r.headers or [])}
    assert "__debezium.oldkey" not in dict(r2.headers or [])
    assert cdc.replayed("items", "name") == {100: "a"}


def test_truncate_is_op_t_when_not_skipped(cdc: Harness) -> None:
    _items(cdc, (1, "a", 1), (2, "b", 2))
    cap = cdc.capture({"skipped.operations": "none"})
    try:
        wait(lambda: cdc.count("items") >= 2, "snapshot", capture=cap)
        cdc.driver.execute("TRUNCATE TABLE items")
        cdc.driver.execute("INSERT INTO items VALUES (3, 'c', 3)")
        wait(lambda: cdc.count("items") >= 4, "truncate and insert", capture=cap)
    finally:
        cap.stop()
    recs = cdc.records("items")
    assert [v["op"] for _, _, v in recs] == ["r", "r", "t", "c"]
    _, key, truncate = recs[2]
    assert key is None
    assert truncate["before"] is None and truncate["after"] is None
    assert truncate["source"]["table"] == "items" and truncate["source"]["snapshot"] == "false"
    assert cdc.replayed("items", "name") == {3: "c"}


def test_truncate_is_skipped_by_default(cdc: Harness) -> None:
    _items(cdc, (1, "a", 1))
    cap = cdc.capture()
    try:
        wait(lambda: cdc.count("items") >= 1, "snapshot", capture=cap)
        cdc.driver.execute("TRUNCATE TABLE items")
        cdc.driver.execute("INSERT INTO items VALUES (3, 'c', 3)")
        wait(lambda: cdc.count("items") >= 2, "the insert", capture=cap)
    finally:
        cap.stop()
    assert [v["op"] for v in cdc.values("items")] == ["r", "c"]


def _tx_capture(cdc: Harness, *transactions: tuple[str, ...]) -> tuple[
        list[Any], list[Any], list[Any]]:
    """Captures tables a and b with transaction metadata and runs `transactions` after the
    snapshot; returns the transaction topic's values and a's and b's event values."""
    d = cdc.driver
    for table in ("a", "b"):
        d.create_table(table, [Column("id", "int", nullable=False)], ["id"])
    d.execute("INSERT INTO a VALUES (0)")
    tx_topic = f"{d.prefix}.transaction"
    cap = cdc.capture({"provide.transaction.metadata": "true"})
    try:
        wait(lambda: cap.runtime.metrics.snapshot_completed and cdc.count("a") >= 1,
             "snapshot", capture=cap)
        for statements in transactions:
            d.execute(*statements)
        wait(lambda: cdc.count_of(tx_topic) >= 2 * len(transactions), "BEGIN/END pairs",
             capture=cap)
        time.sleep(0.3)  # nothing more comes
    finally:
        cap.stop()
    tx = cdc.records_of(tx_topic)
    for _, key, value in tx:
        assert key == {"id": value["id"]}
    return [v for _, _, v in tx], cdc.values("a"), cdc.values("b")


def _tx_id(driver: Any, record_id: str) -> str:
    """The transaction of a transaction id: Debezium 3.x's PostgreSQL connector writes
    `<txId>:<LSN of the record>` (PostgresTransactionMonitor), the same txId throughout."""
    return record_id.split(":", maxsplit=1)[0] if driver.name.startswith("postgres") else record_id


def test_transaction_metadata(cdc: Harness) -> None:
    d = cdc.driver
    tx, a, b = _tx_capture(cdc, ("INSERT INTO a VALUES (1)", "INSERT INTO b VALUES (1)",
                                 "INSERT INTO a VALUES (2)"))
    assert [v["status"] for v in tx] == ["BEGIN", "END"]
    begin, end = tx
    assert begin["event_count"] is None and begin["data_collections"] is None
    assert _tx_id(d, end["id"]) == _tx_id(d, begin["id"]) and end["event_count"] == 3
    assert sorted((c["data_collection"], c["event_count"]) for c in end["data_collections"]) == [
        (d.collection("a"), 2), (d.collection("b"), 1)]
    assert a[0]["op"] == "r" and a[0]["transaction"] is None  # snapshot reads: no transaction
    blocks = [(_tx_id(d, v["transaction"]["id"]), v["transaction"]["total_order"],
               v["transaction"]["data_collection_order"]) for v in a[1:] + b]
    tx_id = _tx_id(d, begin["id"])
    assert blocks == [(tx_id, 1, 1), (tx_id, 3, 2), (tx_id, 2, 1)]


def test_transaction_metadata_counts_both_events_of_a_key_change(cdc: Harness) -> None:
    """A key change is two events (delete, create) of one table: Debezium's TransactionContext
    counts each one, in the total and in the table's count (TransactionContext.event)."""
    d = cdc.driver
    tx, _, b = _tx_capture(cdc, ("INSERT INTO b VALUES (1)",), ("UPDATE b SET id = 2",))
    assert [v["status"] for v in tx] == ["BEGIN", "END", "BEGIN", "END"]
    end = tx[3]
    assert (end["event_count"], [(c["data_collection"], c["event_count"])
                                 for c in end["data_collections"]]) == (
        2, [(d.collection("b"), 2)])
    assert [(v["op"], _tx_id(d, v["transaction"]["id"]), v["transaction"]["total_order"],
             v["transaction"]["data_collection_order"]) for v in b] == [
        ("c", _tx_id(d, tx[0]["id"]), 1, 1), ("d", _tx_id(d, end["id"]), 1, 1),
        ("c", _tx_id(d, end["id"]), 2, 2)]
