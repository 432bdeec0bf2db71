"""`offset.mismatch.strategy` (and the deprecated `slot.seek.to.known.offset.on.start`) against
a real PostgreSQL: a stored offset behind a re-created slot, and a slot put back behind the
stored offset (a copy of the slot taken earlier)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from headwater.testing.replay import events

from .conftest import Env, wait_for

pytestmark = pytest.mark.integration

ADVANCED = "pg_replication_slot_advance"
MOVED = "behind the slot's confirmed position"


def _ids(env: Env) -> list[int]:
    if not env.topics.exists():
        return []
    return [v["after"]["id"] for _, _, v in events(env.topics, f"{env.prefix}.public.t")
            if v is not None and v["op"] == "c"]


def _stored_lsn(env: Env) -> int:
    data: Any = json.loads(env.offsets.read_text())
    return int(data["offset"]["lsn"])


def _confirmed(env: Env) -> int:
    text = env.sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                   "WHERE slot_name = %s", (env.slot,))[0][0]
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def _run(env: Env, insert: int, extra: dict[str, Any] | None = None) -> None:
    """A capture run that streams the insert of row `insert` and stops once it is stored."""
    before = len(_ids(env))
    cap = env.capture(extra)
    try:
        wait_for(lambda: cap.runtime.metrics.connected or cap.error, what="streaming")
        assert cap.error is None
        env.sql("INSERT INTO t VALUES (%s)", (insert,))
        wait_for(lambda: len(_ids(env)) > before, what=f"row {insert}")
        wait_for(lambda: cap.runtime.queue.size == 0, what="queue drained")
    finally:
        cap.stop()


def _recreated_slot(env: Env) -> None:
    """Row 1 captured and stored; the slot dropped, row 2 written, the slot created again."""
    env.sql("CREATE TABLE t (id int PRIMARY KEY)")
    _run(env, 1)
    env.drop_slot()
    env.sql("INSERT INTO t VALUES (2)")
    env.sql("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (env.slot,))


@pytest.mark.parametrize("strategy", ["trust_slot", "trust_greater_lsn"])
def test_a_recreated_slot_is_streamed_from(env: Env, strategy: str,
                                           caplog: pytest.LogCaptureFixture) -> None:
    _recreated_slot(env)
    stored, confirmed = _stored_lsn(env), _confirmed(env)
    assert stored < confirmed
    with caplog.at_level(logging.INFO, logger="headwater"):
        _run(env, 3, {"offset.mismatch.strategy": strategy})
    # Row 2 came before the new slot existed: lost to it whatever the strategy.
    assert _ids(env) == [1, 3]
    moved = any(MOVED in r.getMessage() for r in caplog.records)
    assert moved
    assert not any(ADVANCED in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(("extra", "strategy"), [
    ({"offset.mismatch.strategy": "trust_offset"}, "trust_offset"),
    ({"slot.seek.to.known.offset.on.start": "true"}, "trust_offset"),
    ({}, "no_validation"),  # Debezium's log position check runs there too
])
def test_a_recreated_slot_is_refused(env: Env, extra: dict[str, Any], strategy: str) -> None:
    _recreated_slot(env)
    cap = env.capture(extra)
    wait_for(lambda: cap.error is not None, what="the start to fail")
    with pytest.raises(Exception, match=rf"re-created or moved.*strategy={strategy}\)"):
        cap.stop()
    assert _ids(env) == [1]


def test_trust_offset_with_when_needed_snapshots_again(env: Env) -> None:
    _recreated_slot(env)
    cap = env.capture({"offset.mismatch.strategy": "trust_offset",
                       "snapshot.mode": "when_needed"})
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed or cap.error, what="snapshot")
        assert cap.error is None
    finally:
        cap.stop()
    reads = [v["after"]["id"] for _, _, v in events(env.topics, f"{env.prefix}.public.t")
             if v is not None and v["op"] == "r"]
    assert sorted(reads) == [1, 2]


def _slot_behind(env: Env) -> int:
    """Row 1 captured; a copy of the slot kept; row 2 captured; the slot replaced by the copy:
    the slot is behind the stored offset.  Returns the stored LSN."""
    env.sql("CREATE TABLE t (id int PRIMARY KEY)")
    _run(env, 1)
    backup = env.slot + "_copy"
    env.sql("SELECT pg_copy_logical_replication_slot(%s, %s)", (env.slot, backup))
    _run(env, 2)
    env.drop_slot()
    env.sql("SELECT pg_copy_logical_replication_slot(%s, %s)", (backup, env.slot))
    env.drop_slot(backup)
    stored = _stored_lsn(env)
    assert _confirmed(env) < stored
    return stored


@pytest.mark.parametrize("strategy", ["no_validation", "trust_offset", "trust_slot",
                                      "trust_greater_lsn"])
def test_a_slot_behind_the_offset(env: Env, strategy: str,
                                  caplog: pytest.LogCaptureFixture) -> None:
    stored = _slot_behind(env)
    with caplog.at_level(logging.INFO, logger="headwater"):
        cap = env.capture({"offset.mismatch.strategy": strategy})
        try:
            wait_for(lambda: cap.runtime.metrics.connected or cap.error, what="streaming")
            assert cap.error is None
            advanced = _confirmed(env) >= stored
            env.sql("INSERT INTO t VALUES (3)")
            wait_for(lambda: 3 in _ids(env), what="row 3")
        finally:
            cap.stop()
    seeks = strategy in ("trust_offset", "trust_greater_lsn")
    assert any(ADVANCED in r.getMessage() for r in caplog.records) == seeks
    if seeks:
        assert advanced  # moved before streaming began
    assert not any(MOVED in r.getMessage() for r in caplog.records)
    assert _ids(env) == [1, 2, 3]  # row 2 is not sent again in any case
