"""Datastream events end to end from a real MariaDB: full-dump backfill then binlog events in
JSON files, every field of source_metadata, MySQL's split update change types."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from headwater.testing.localpg import wait_for

from .conftest import MariaEnv

pytestmark = pytest.mark.integration


def read_events(menv: MariaEnv) -> list[dict[str, Any]]:
    base = menv.tmp / "files" / "maria-stream"
    out: list[dict[str, Any]] = []
    for path in sorted(base.rglob("*.jsonl")) if base.exists() else []:
        assert not path.name.startswith(".")
        out.extend(orjson.loads(line) for line in path.read_bytes().splitlines())
    return out


def test_mariadb_backfill_and_binlog_events_in_json_files(menv: MariaEnv) -> None:
    menv.sql("CREATE TABLE orders (id INT PRIMARY KEY, note VARCHAR(20), amount DECIMAL(8,2), "
             "took TIME(6))")
    menv.sql("INSERT INTO orders VALUES (1, 'first', 12.30, '-01:00:00')")
    menv.sql("COMMIT")
    cap = menv.capture({
        "headwater.event.format": "datastream",
        "headwater.datastream.stream.name": "projects/p/locations/l/streams/maria-stream",
        "headwater.destination": "files",
        "headwater.destination.files.dir": str(menv.tmp / "files"),
        "headwater.destination.files.max.ms": 300})
    try:
        wait_for(lambda: read_events(menv), what="backfill", timeout=60)
        menv.sql("INSERT INTO orders VALUES (2, 'second', 1.50, '838:59:59')")
        menv.sql("UPDATE orders SET note = 'changed' WHERE id = 1")
        menv.sql("UPDATE orders SET id = 3 WHERE id = 2")
        menv.sql("DELETE FROM orders WHERE id = 1")
        menv.sql("COMMIT")
        wait_for(lambda: len(read_events(menv)) >= 6, what="binlog events", timeout=60)
    finally:
        cap.stop()
    events = sorted(read_events(menv), key=lambda e: e["sort_keys"])
    assert len(events) == 6
    back, *log = events
    assert back["read_method"] == "mysql-backfill-fulldump"
    assert back["object"] == f"{menv.db}_orders"
    assert back["source_metadata"] == {
        "log_file": "", "log_position": 0, "primary_keys": ["id"], "is_deleted": False,
        "database": menv.db, "table": "orders", "change_type": "INSERT"}
    assert back["payload"] == {"id": 1, "note": "first", "amount": 12.3,
                               "took": -3_600_000_000}
    assert {e["read_method"] for e in log} == {"mysql-cdc-binlog"}
    assert [(e["source_metadata"]["change_type"], e["source_metadata"]["is_deleted"],
             e["payload"]["id"]) for e in log] == [
        ("INSERT", False, 2), ("UPDATE-INSERT", False, 1), ("UPDATE-DELETE", True, 2),
        ("UPDATE-INSERT", False, 3), ("DELETE", True, 1)]
    assert log[0]["payload"]["took"] == (838 * 3600 + 59 * 60 + 59) * 1_000_000
    for e in log:
        meta = e["source_metadata"]
        assert meta["log_file"].rsplit(".", 1)[1].isdigit() and meta["log_position"] > 0
        assert e["sort_keys"][:2] == [int(meta["log_file"].rsplit(".", 1)[1]),
                                      meta["log_position"]]
    assert len({e["uuid"] for e in events}) == 6
