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

pytestmark: list[pytest.MarkDecorator] = [pytest.mark.integration]
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


PAUSE_ROWS = 200  # 20 chunks of 10
PAUSE_SIGNAL = ("INSERT INTO debezium_signal VALUES ('{id}', '{kind}-snapshot', "
                "'{{\"type\": \"incremental\"}}')")


def _kinds(notes: list[dict[str, Any]]) -> list[str]:
    return [n["value"]["payload"]["type"] for n in notes]


def _has(kind: str) -> Any:
    def seen(records: list[OracleRecord]) -> bool:
        return any(r.topic == TOPIC and r.value and f'"type":"{kind}"' in r.value.replace(
            " ", "") for r in records)
    return seen


def _run_paused(wait_records: Any, cur: Any, tag: str) -> None:
    """The execute-snapshot and pause-snapshot signals in one transaction (so the pause
    takes effect at the same point of the snapshot for both connectors, whatever their
    speed), then resume-snapshot once PAUSED is out; `wait_records(predicate, what)` waits
    on the connector's notifications."""
    cur.execute(SIGNAL.replace("sig-1", "sig-p") + "; "
                + PAUSE_SIGNAL.format(id=f"pause-{tag}", kind="pause"))
    wait_records(_has("PAUSED"), "the PAUSED notification")
    time.sleep(1.0)  # paused: no chunk may be read
    cur.execute(PAUSE_SIGNAL.format(id=f"resume-{tag}", kind="resume"))
    wait_records(completed, "the COMPLETED notification")


def test_paused_and_resumed_snapshot_notifications_match(pg: LocalPostgres,
                                                          tmp_path: Path) -> None:
    """PAUSED and RESUMED (pause-snapshot, resume-snapshot on the source channel) against
    Debezium's.  The two are compared as records, and their place by rule (no chunk read
    between them, chunks read after RESUMED, and the one documented difference of place
    below); the rest of the stream record by record."""
    db = "diff_pause"
    pg.create_database(db)
    conn = pg.connect(db)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, "
                    "type varchar(32) NOT NULL, data varchar(2048))")
        cur.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        cur.execute("INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, %s) g",
                    (PAUSE_ROWS,))
        cur.execute("CREATE TABLE e (id int PRIMARY KEY)")
    props = common_properties(pg, db, {
        "snapshot.mode": "no_data",
        "provide.transaction.metadata": "false",
        "signal.data.collection": "public.debezium_signal",
        "incremental.snapshot.chunk.size": "10",
        "notification.enabled.channels": "sink",
        "notification.sink.topic.name": TOPIC,
    })
    dbz = DebeziumOracle({**props, "slot.name": "dbz_pause",
                          "publication.name": "dbz_pub_pause"}, tmp_path / "debezium").start()
    try:
        wait_for(lambda: slot_active(pg, db, "dbz_pause"), timeout=180,
                 what="Debezium streaming")
        time.sleep(1.0)
        with conn.cursor() as cur:
            _run_paused(lambda p, what: dbz.wait_for(p, 180, what), cur, "dbz")
        dbz_records = dbz.records()
    finally:
        dbz.stop()
    with conn.cursor() as cur:
        cur.execute("DELETE FROM debezium_signal")
    hw = run_headwater({**props, "slot.name": "hw_pause", "publication.name": "hw_pub_pause"},
                       tmp_path / "headwater")
    topics = tmp_path / "headwater" / "topics"

    def hw_wait(predicate: Any, what: str) -> None:
        wait_for(lambda: predicate(headwater_records(topics).get(TOPIC, [])), timeout=120,
                 what=f"Headwater's {what}")

    try:
        wait_for(lambda: hw.runtime.metrics.connected, timeout=120, what="Headwater streaming")
        with conn.cursor() as cur:
            _run_paused(hw_wait, cur, "hw")
    finally:
        hw.stop()
        conn.close()
    theirs = notifications(dbz_records)
    ours = notifications(headwater_records(topics).get(TOPIC, []))
    out: list[Difference] = []
    for name, notes in (("Debezium", theirs), ("Headwater", ours)):
        kinds = _kinds(notes)
        assert kinds.count("PAUSED") == kinds.count("RESUMED") == 1, (name, kinds)
        paused, resumed = kinds.index("PAUSED"), kinds.index("RESUMED")
        assert "IN_PROGRESS" not in kinds[paused + 1:resumed], (name, kinds)
        assert "IN_PROGRESS" in kinds[resumed:], (name, kinds)
    assert _kinds(theirs)[-1] == "COMPLETED"
    # The one difference of place (docs/compatibility.md, incremental snapshot
    # notifications): Debezium reads the first chunk while handling execute-snapshot, before
    # the pause of the same transaction; Headwater applies both at the transaction's end.
    assert _kinds(theirs)[:4] == ["SKIPPED", "STARTED", "IN_PROGRESS", "PAUSED"], theirs[:4]
    assert _kinds(ours)[:4] == ["SKIPPED", "STARTED", "PAUSED", "RESUMED"], ours[:4]
    for kind in ("PAUSED", "RESUMED"):
        (d,) = [n for n in theirs if n["value"]["payload"]["type"] == kind]
        (h,) = [n for n in ours if n["value"]["payload"]["type"] == kind]
        diff(TOPIC, f"#{kind}", d, h, out)
    rest_theirs = [n for n in theirs if n["value"]["payload"]["type"] not in ("PAUSED",
                                                                             "RESUMED")]
    rest_ours = [n for n in ours if n["value"]["payload"]["type"] not in ("PAUSED",
                                                                         "RESUMED")]
    assert _kinds(rest_theirs).count("IN_PROGRESS") >= PAUSE_ROWS // 10
    if len(rest_theirs) != len(rest_ours):
        out.append(Difference(TOPIC, "<record count>", len(rest_theirs), len(rest_ours)))
    for i, (d, h) in enumerate(zip(rest_theirs, rest_ours, strict=False)):
        diff(TOPIC, f"#{i}", d, h, out)
    rules = load_rules(COMPAT_DOC, "## Notification differences the tests accept")
    left = unexplained(out, rules)
    assert not left, report(left, tmp_path / "differences.txt")
