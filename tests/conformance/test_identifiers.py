"""Identifiers that need quoting: spaces, unicode, a double quote, a dot, a reserved word as a
column.  Each table is captured under Debezium's sanitized topic name (every character
outside [a-zA-Z0-9._-] becomes `_`), while `source.table` keeps the real name."""

from __future__ import annotations

import pytest

from .driver import Column
from .harness import Harness, wait

pytestmark = pytest.mark.integration

COLUMNS = [Column("id", "int", nullable=False), Column("select", "int"),
           Column("Mixed Case", "varchar(10)")]

@pytest.mark.parametrize(("table", "topic_tail"), [
    pytest.param("Order Items", "Order_Items", id="space"),
    pytest.param("tëst_表", "t_st__", id="unicode"),
    pytest.param('we"ird', "we_ird", id="double-quote"),
    pytest.param("a.b", "a.b", id="dot"),
    pytest.param("order", "order", id="reserved-word"),
])
def test_quoted_identifiers_are_captured_under_sanitized_topics(
    cdc: Harness, table: str, topic_tail: str
) -> None:
    d = cdc.driver
    q = d.quote(table)
    d.create_table(table, COLUMNS, ["id"])
    d.execute(f"INSERT INTO {q} VALUES (1, 10, 'x')")
    topic = d.topic(table)
    assert topic.endswith("." + topic_tail)
    cap = cdc.capture(tables=[table])
    try:
        wait(lambda: cdc.count_of(topic) >= 1, f"the snapshot read on {topic}", capture=cap)
        d.execute(f"INSERT INTO {q} VALUES (2, 20, 'y')",
                  f"UPDATE {q} SET {d.quote('select')} = 11 WHERE id = 1")
        wait(lambda: cdc.count_of(topic) >= 3, "streamed events", capture=cap)
    finally:
        cap.stop()
    # the prefix alone is MariaDB's schema change topic
    assert cdc.topic_names() - {topic, d.prefix} == set(), "events on other topics"
    recs = cdc.records_of(topic)
    assert [(k, v["op"]) for _, k, v in recs] == [({"id": 1}, "r"), ({"id": 2}, "c"),
                                                  ({"id": 1}, "u")]
    assert recs[0][2]["after"] == {"id": 1, "select": 10, "Mixed Case": "x"}
    assert recs[2][2]["after"] == {"id": 1, "select": 11, "Mixed Case": "x"}
    assert {v["source"]["table"] for _, _, v in recs} == {table}


def test_two_tables_on_one_topic_stop_the_connector_before_it_starts(cdc: Harness) -> None:
    """`Order Items` and `Order_Items` both sanitize to `Order_Items`: the connector refuses to
    start, naming both tables, before it creates anything on the server or writes a record."""
    d = cdc.driver
    for name in ("Order Items", "Order_Items"):
        d.create_table(name, COLUMNS, ["id"])
    proc = cdc.process(cdc.config(tables=["Order Items", "Order_Items"]))
    _, stderr = proc.communicate(timeout=120)
    message = stderr.decode()
    assert proc.returncode != 0
    assert "Order Items" in message and "Order_Items" in message, message
    assert not cdc.topics.exists() or cdc.topic_names() == set()
    assert not cdc.offsets.exists()
    if d.name == "postgres":  # nothing created on the server: no slot, no publication
        conn = d.connect()
        try:
            cur = conn.cursor()
            slot = d.properties(cdc.topics, cdc.offsets)["slot.name"]
            cur.execute("SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s",
                        (slot,))
            assert cur.fetchone()[0] == 0
            publication = d.properties(cdc.topics, cdc.offsets).get(
                "publication.name", "dbz_publication")
            cur.execute("SELECT count(*) FROM pg_publication WHERE pubname = %s", (publication,))
            assert cur.fetchone()[0] == 0
        finally:
            conn.close()
