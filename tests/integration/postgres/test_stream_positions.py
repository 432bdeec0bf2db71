"""Datastream's cdcStrategy against a real PostgreSQL, through the CLI: a resume from a
specific LSN streams exactly the rows committed after it, mostRecentStartPosition skips what
was written while paused, nextAvailableStartPosition resumes from the slot, and an LSN behind
the slot is refused with the position named (the stream stays PAUSED, nothing starts)."""

from __future__ import annotations

from pathlib import Path

import orjson

from headwater.testing.localpg import wait_for

from .conftest import Env
from .test_streams import Cli, _ids, _profile, _rows, cli  # noqa: F401 (fixture)


def test_start_positions(env: Env, cli: Cli, tmp_path: Path) -> None:  # noqa: F811
    env.sql("CREATE TABLE t (id int PRIMARY KEY)")
    _profile(cli, env.pg, "pg", env.db)
    cli("profiles", "create", "out", "--kind", "topics", "--dir", str(tmp_path / "topics"))
    cli("streams", "create", "s", "--source", "pg", "--destination", "out", "--include",
        "public.t", "--backfill", "none", "-p", "headwater.topics.segment.ms=200")
    topics = tmp_path / "topics" / "s"

    def ids() -> set[int]:
        return set(_ids(_rows(topics, "s.public.t")))

    def insert(lo: int, hi: int) -> None:
        env.sql(f"INSERT INTO t SELECT generate_series({lo}, {hi})")

    def resume(strategy: str, code: int = 0) -> str:
        return cli("streams", "resume", "s", "--wait", "60", "--cdc-strategy", strategy,
                   code=code)

    assert cli.json("streams", "start", "s", "--wait", "60",
                    "--cdc-strategy", "mostRecentStartPosition")["state"] == "RUNNING"
    insert(1, 5)
    wait_for(lambda: ids() >= set(range(1, 6)), 60, what="streamed rows")
    assert cli.json("streams", "pause", "s", "--wait", "60")["state"] == "PAUSED"

    # specificStartPosition (postgresqlLsnPosition): only what commits after the LSN.
    insert(6, 10)
    lsn = env.sql("SELECT pg_current_wal_insert_lsn()::text")[0][0]
    insert(11, 15)
    resume(orjson.dumps({"specificStartPosition": {"postgresqlLsnPosition": {"lsn": lsn}}}
                        ).decode())
    wait_for(lambda: ids() >= set(range(11, 16)), 60, what="rows after the LSN")
    assert not ids() & set(range(6, 11)), "rows before the LSN were streamed"
    assert cli.json("streams", "pause", "s", "--wait", "60")["state"] == "PAUSED"

    # An LSN the slot no longer has: refused, named, recorded; the stream stays PAUSED.
    out = resume('{"specificStartPosition": {"postgresqlLsnPosition": {"lsn": "0/10"}}}',
                  code=2)
    text = " ".join(out.split())
    assert "the start position postgresqlLsnPosition {lsn: 0/10} is not available" in text
    assert "behind replication slot" in text
    assert cli.state("s") == "PAUSED"
    last = cli.json("streams", "errors", "s")["errors"][-1]
    assert last["reason"] == "START_POSITION_UNAVAILABLE"
    assert last["details"]["position"] == "postgresqlLsnPosition {lsn: 0/10}"
    # A malformed one names the part.
    bad = resume('{"specificStartPosition": {"mysqlLogPosition": {"logFile": "x"}}}', code=2)
    assert "mysqlLogPosition: needs logFile, logPosition" in " ".join(bad.split())

    # mostRecentStartPosition: what was written while paused is skipped.
    insert(16, 20)
    resume("mostRecentStartPosition")
    insert(21, 25)
    wait_for(lambda: ids() >= set(range(21, 26)), 60, what="rows after the resume")
    assert not ids() & set(range(16, 21))
    assert cli.json("streams", "pause", "s", "--wait", "60")["state"] == "PAUSED"

    # nextAvailableStartPosition: from the slot's confirmed position.
    insert(26, 30)
    resume("nextAvailableStartPosition")
    wait_for(lambda: ids() >= set(range(26, 31)), 60, what="rows from the slot")
    assert cli.json("streams", "pause", "s", "--wait", "60")["state"] == "PAUSED"
    history = [h["detail"] for h in cli.json("streams", "describe", "s")["history"]]
    assert any("cdcStrategy postgresqlLsnPosition" in d for d in history)
    assert any("cdcStrategy nextAvailableStartPosition" in d for d in history)
