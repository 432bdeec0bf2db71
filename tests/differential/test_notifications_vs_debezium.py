"""Incremental snapshot notifications on the sink channel against real Debezium 3.x
(PostgreSQL): the same execute-snapshot signal, the same tables, compared record by record.

Debezium runs first (its own slot), then Headwater (its own slot, created after Debezium's run,
so it does not see Debezium's signal): the signal row is deleted and written again with the
same id for Headwater.  Both read table `t` (35 rows, chunks of 10) and the empty table `e`.

Normalised, because it must differ between two runs: the notification's `timestamp` (when each
connector sent it), and the id of the initial snapshot's SKIPPED notification (a random UUID;
an incremental snapshot's notifications carry the signal's id, compared).  Everything else
(key and value schemas, field order, ids, types, `additional_data`) must be equal, or match a
row of docs/compatibility.md's "Notification differences the tests accept", and every row
there must be needed.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from headwater.testing.debezium_oracle import DebeziumOracle, OracleRecord, available
from headwater.testing.localpg import LocalPostgres, wait_for

from .compat import Difference, diff, load_rules
from .test_postgres_vs_debezium import (
    COMPAT_DOC,
    common_properties,
    headwater_records,
    parse,
    report,
    run_headwater,
    unexplained,
)

pytestmark = pytest.mark.integration
_skip = available()
if _skip is not None:
    pytestmark = [pytest.mark.integration, pytest.mark.skip(reason=_skip)]

TOPIC = "inv_notifications"
SIGNAL = ("INSERT INTO debezium_signal VALUES ('sig-1', 'execute-snapshot', "
          "'{\"data-collections\": [\"public.t\", \"public.e\"], \"type\": \"incremental\"}')")
SENT_AT = "<timestamp>"
RANDOM_ID = "<uuid>"


def notifications(records: list[OracleRecord]) -> list[dict[str, Any]]:
    out = []
    for r in records:
        if r.topic != TOPIC:
            continue
        key, value = parse(r.key), parse(r.value)
        value["payload"]["timestamp"] = SENT_AT
        if value["payload"]["aggregate_type"] == "Initial Snapshot":
            key["payload"]["id"] = value["payload"]["id"] = RANDOM_ID
        out.append({"key": key, "value": value})
    return out


def completed(records: list[OracleRecord]) -> bool:
    return any(r.topic == TOPIC and r.value and '"COMPLETED"' in r.value for r in records)


def slot_active(pg: LocalPostgres, db: str, slot: str) -> bool:
    conn = pg.connect(db)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,))
            row = cur.fetchone()
            return bool(row and row[0])
    finally:
        conn.close()


@pytest.fixture(scope="module")
def pg() -> Any:
    server = LocalPostgres().start()
    try:
        yield server
    finally:
        server.cleanup()


def test_incremental_snapshot_notifications_match(pg: LocalPostgres, tmp_path: Path) -> None:
    db = "diff_notes"
    pg.create_database(db)
    conn = pg.connect(db)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, "
                    "type varchar(32) NOT NULL, data varchar(2048))")
        cur.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        cur.execute("INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 35) g")
        cur.execute("CREATE TABLE e (id int PRIMARY KEY)")
    props = common_properties(pg, db, {
        "snapshot.mode": "no_data",
        "provide.transaction.metadata": "false",
        "signal.data.collection": "public.debezium_signal",
        "incremental.snapshot.chunk.size": "10",
        "notification.enabled.channels": "sink",
        "notification.sink.topic.name": TOPIC,
    })
    dbz = DebeziumOracle({**props, "slot.name": "dbz_notes",
                          "publication.name": "dbz_pub_notes"}, tmp_path / "debezium").start()
    try:
        wait_for(lambda: slot_active(pg, db, "dbz_notes"), timeout=180,
                 what="Debezium streaming")
        time.sleep(1.0)
        with conn.cursor() as cur:
            cur.execute(SIGNAL)
        dbz_records = dbz.wait_for(completed, 180, "the COMPLETED notification")
    finally:
        dbz.stop()
    with conn.cursor() as cur:
        cur.execute("DELETE FROM debezium_signal")
    hw = run_headwater({**props, "slot.name": "hw_notes", "publication.name": "hw_pub_notes"},
                       tmp_path / "headwater")
    try:
        wait_for(lambda: hw.runtime.metrics.connected, timeout=120, what="Headwater streaming")
        with conn.cursor() as cur:
            cur.execute(SIGNAL)
        topics = tmp_path / "headwater" / "topics"
        wait_for(lambda: completed(headwater_records(topics).get(TOPIC, [])), timeout=120,
                 what="Headwater's COMPLETED notification")
    finally:
        hw.stop()
        conn.close()
    theirs = notifications(dbz_records)
    ours = notifications(headwater_records(topics).get(TOPIC, []))
    assert [n["value"]["payload"]["type"] for n in theirs] == [
        "SKIPPED", "STARTED", "IN_PROGRESS", "IN_PROGRESS", "IN_PROGRESS", "IN_PROGRESS",
        "TABLE_SCAN_COMPLETED", "TABLE_SCAN_COMPLETED", "COMPLETED"], json.dumps(theirs)
    out: list[Difference] = []
    if len(theirs) != len(ours):
        out.append(Difference(TOPIC, "<record count>", len(theirs), len(ours)))
    for i, (d, h) in enumerate(zip(theirs, ours, strict=False)):
        diff(TOPIC, f"#{i}", d, h, out)
    rules = load_rules(COMPAT_DOC, "## Notification differences the tests accept")
    left = unexplained(out, rules)
    assert not left, report(left, tmp_path / "differences.txt")
    unused = [r for r in rules if not any(r.explains(d) for d in out)]
    assert not unused, f"rules no difference needs: {unused}"
