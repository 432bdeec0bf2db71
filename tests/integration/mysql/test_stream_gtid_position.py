"""Datastream's `specificStartPosition {mysqlGtidPosition {gtidSet}}` against a real MariaDB,
through the CLI (the capture in its own process): a first start and a resume from a GTID
position stream only the transactions after it, and the capture keeps GTIDs in its offsets
from then on; a malformed set, a MySQL set on MariaDB, a set ahead of the server's binary logs
and one whose following binary logs were purged are refused naming the position, and the
stream stays PAUSED.

The server is shared by every test of the pytest worker, so its binary logs hold other tests'
transactions (in the same GTID domain): the positions are read from @@gtid_binlog_pos right
after this test's own inserts.  The purge keeps the newest binary log only, as
test_mysql_connector's purge test does: every test writes what it reads after it starts."""

from __future__ import annotations

import orjson

from headwater.testing.localpg import wait_for
from tests.integration.postgres.test_streams import Cli, _rows, cli  # noqa: F401 (fixture)

from .conftest import MariaEnv
from .stream_cli import create_profiles, run_sql


def _gtid_pos(menv: MariaEnv) -> str:
    return str(run_sql(menv, "SELECT @@global.gtid_binlog_pos")[0][0])


def _gtid_strategy(gtid_set: str) -> str:
    return orjson.dumps({"specificStartPosition": {"mysqlGtidPosition": {
        "gtidSet": gtid_set}}}).decode()


def _stream(cli: Cli, menv: MariaEnv) -> None:  # noqa: F811
    create_profiles(cli, menv)
    cli("streams", "create", "s", "--source", "maria", "--destination", "out",
        "--include", menv.db, "--backfill", "none", "-p", "headwater.topics.segment.ms=200",
        "-p", "poll.interval.ms=100")


def test_start_and_resume_from_gtid_set(menv: MariaEnv, cli: Cli) -> None:  # noqa: F811
    db = menv.db
    run_sql(menv, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    after_1 = _gtid_pos(menv)
    run_sql(menv, "INSERT INTO t VALUES (2)")
    _stream(cli, menv)
    topics = menv.tmp / "topics" / "s"

    def ids() -> list[int]:
        return sorted(p["after"]["id"] for p in _rows(topics, f"s.{db}.t") if p["op"] == "c")

    # First start: the schema is rebuilt from the current one, then only the transactions
    # after the set are streamed (row 2, not row 1).
    started = cli.json("streams", "start", "s", "--wait", "60", "--cdc-strategy",
                       _gtid_strategy(after_1))
    assert started["state"] == "RUNNING", cli.log()
    wait_for(lambda: 2 in ids(), 120, what="the row after the GTID position")
    assert ids() == [2]
    assert cli.json("streams", "pause", "s", "--wait", "60")["state"] == "PAUSED"

    # Resume from a later position: row 3 was written before it, row 4 after.
    run_sql(menv, "INSERT INTO t VALUES (3)")
    after_3 = _gtid_pos(menv)
    run_sql(menv, "INSERT INTO t VALUES (4)")
    cli("streams", "resume", "s", "--wait", "60", "--cdc-strategy", _gtid_strategy(after_3))
    wait_for(lambda: 4 in ids(), 60, what="the row after the second GTID position")
    assert ids() == [2, 4]
    assert cli.json("streams", "pause", "s", "--wait", "60")["state"] == "PAUSED"
    offsets = orjson.loads((cli.data / "streams" / "s" / "offsets.json").read_bytes())
    assert "gtids" in orjson.dumps(offsets).decode(), offsets

    # A plain resume continues from the GTIDs the capture kept: row 5 once, nothing again.
    run_sql(menv, "INSERT INTO t VALUES (5)")
    cli("streams", "resume", "s", "--wait", "60")
    wait_for(lambda: 5 in ids(), 60, what="the row after a plain resume")
    assert ids() == [2, 4, 5]
    assert cli.json("streams", "pause", "s", "--wait", "60")["state"] == "PAUSED"


def test_refused_gtid_sets(menv: MariaEnv, cli: Cli) -> None:  # noqa: F811
    run_sql(menv, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    _stream(cli, menv)
    assert cli.json("streams", "start", "s", "--wait", "60")["state"] == "RUNNING", cli.log()
    assert cli.json("streams", "pause", "s", "--wait", "60")["state"] == "PAUSED"

    def refused(gtid_set: str) -> str:
        out = cli("streams", "resume", "s", "--cdc-strategy", _gtid_strategy(gtid_set), code=2)
        assert cli.state("s") == "PAUSED"
        return " ".join(out.split())

    assert ("mysqlGtidPosition {gtidSet: 0-1-x}: not a GTID set: '0-1-x' is neither a "
            "MariaDB GTID") in refused("0-1-x")
    assert "mysqlGtidPosition {gtidSet: 0-1-5,0-1-6}: not a GTID set: names domain 0 " \
        "twice" in refused("0-1-5,0-1-6")
    mysql_set = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"
    assert (f"mysqlGtidPosition {{gtidSet: {mysql_set}}}: a MySQL GTID set (uuid:interval), "
            "but the server is MariaDB") in refused(mysql_set)
    assert cli.json("streams", "errors", "s")["errors"] == []  # request errors, not positions

    domain, server, seq = _gtid_pos(menv).split(",")[0].split("-")
    ahead = f"{domain}-{server}-{int(seq) + 1_000_000}"
    text = refused(ahead)
    assert (f"the start position mysqlGtidPosition {{gtidSet: {ahead}}} is not available on "
            f"the source: {ahead} is not in the server's binary logs") in text
    unknown = "4000-1-1"  # a domain nothing was ever written in
    assert (f"the start position mysqlGtidPosition {{gtidSet: {unknown}}} is not available "
            "on the source") in refused(unknown)

    # Purged: the binary logs after the position are gone, so the server could not send the
    # transactions that followed it (here row 2's).
    before_2 = _gtid_pos(menv)
    root = menv.server.connect()
    with root.cursor() as cur:
        cur.execute("FLUSH BINARY LOGS")
        run_sql(menv, "INSERT INTO t VALUES (2)")
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW MASTER STATUS")
        current = cur.fetchone()[0]

        def purged() -> bool:
            # MariaDB keeps files its binlog checkpoint still needs: retry until it lets go.
            cur.execute(f"PURGE BINARY LOGS TO '{current}'")
            cur.execute("SHOW BINARY LOGS")
            return [row[0] for row in cur.fetchall()] == [current]

        wait_for(purged, timeout=30, interval=0.5, what=f"binary logs before {current} purged")
    root.close()
    text = refused(before_2)
    assert (f"the start position mysqlGtidPosition {{gtidSet: {before_2}}} is not available "
            f"on the source: transactions after it were purged: the oldest binary log on the "
            f"server, {current}, starts after") in text

    errors = cli.json("streams", "errors", "s")["errors"]
    assert [e["reason"] for e in errors] == ["START_POSITION_UNAVAILABLE"] * 3
    assert errors[0]["details"]["position"] == f"mysqlGtidPosition {{gtidSet: {ahead}}}"


def test_located_start_is_the_next_transaction(menv: MariaEnv) -> None:
    """The offset's file and position (the schema history's bound) are those of the first
    transaction after the set, found in the server's real binary logs."""
    from headwater.connectors.mysql.gtid_start import mariadb_start, parse_gtid_set

    run_sql(menv, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    after_1 = _gtid_pos(menv)
    run_sql(menv, "INSERT INTO t VALUES (2)")
    after_2 = _gtid_pos(menv)
    logs = [(str(r[0]), int(r[1])) for r in run_sql(menv, "SHOW BINARY LOGS")]
    with menv.conn.cursor() as cur:
        file, pos = mariadb_start(cur, parse_gtid_set(after_1), logs)
    event = run_sql(menv, f"SHOW BINLOG EVENTS IN '{file}' FROM {pos} LIMIT 1")[0]
    assert (event[2], event[5].split()[-1]) == ("Gtid", after_2.split(",")[0]), event
    end = run_sql(menv, "SHOW MASTER STATUS")[0][:2]
    logs = [(str(r[0]), int(r[1])) for r in run_sql(menv, "SHOW BINARY LOGS")]
    with menv.conn.cursor() as cur:
        assert mariadb_start(cur, parse_gtid_set(_gtid_pos(menv)), logs) == (end[0],
                                                                               int(end[1]))
