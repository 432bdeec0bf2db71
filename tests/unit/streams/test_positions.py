"""cdcStrategy parsing: Datastream's three strategies, its specific positions' fields, and
a clear error naming the part for anything else; a first start with a position and the
automatic backfill is refused (its snapshot fixes the position)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from headwater.streams.model import StreamSpec
from headwater.streams.positions import CdcStrategy, CdcStrategyError, apply, start_time
from headwater.streams.profiles import source_profile


def test_parse_strategies() -> None:
    assert CdcStrategy.parse({"mostRecentStartPosition": {}}).kind == "mostRecentStartPosition"
    s = CdcStrategy.parse({"specificStartPosition": {"mysqlLogPosition": {
        "logFile": "b.000002", "logPosition": 4}}})
    assert s.position_kind == "mysqlLogPosition" and s.position == {"logFile": "b.000002",
                                                                   "logPosition": 4}
    assert s.as_json() == {"specificStartPosition": {"mysqlLogPosition": {
        "logFile": "b.000002", "logPosition": 4}}}
    assert s.describe() == 'mysqlLogPosition {"logFile":"b.000002","logPosition":4}'


@pytest.mark.parametrize(("doc", "message"), [
    ({}, "give exactly one of mostRecentStartPosition"),
    ({"mostRecentStartPosition": {}, "nextAvailableStartPosition": {}}, "(got 2)"),
    ({"latest": {}}, "(unknown: latest)"),
    ({"specificStartPosition": {"oraclePosition": {}}}, "give exactly one of mysqlLogPosition"),
    ({"specificStartPosition": {"mysqlLogPosition": {"logFile": "b.1"}}},
     "mysqlLogPosition: needs logFile, logPosition"),
    ({"specificStartPosition": {"postgresqlLsnPosition": {"lsn": "0/1", "x": 1}}},
     "postgresqlLsnPosition: unknown field(s) x"),
])
def test_bad_strategies(doc: dict[str, object], message: str) -> None:
    with pytest.raises(CdcStrategyError) as err:
        CdcStrategy.parse(doc)
    assert message in str(err.value)


def test_position_of_another_source_and_first_start_with_backfill(tmp_path: Path) -> None:
    src = source_profile("pg", "postgresql", {"database.hostname": "h", "database.user": "u",
                                              "database.dbname": "d"})
    props = {"topic.prefix": "s", "slot.name": "x"}
    mysql_pos = CdcStrategy.parse({"specificStartPosition": {"mysqlLogPosition": {
        "logFile": "b.1", "logPosition": 4}}})
    with pytest.raises(CdcStrategyError, match="mysqlLogPosition is not a position of a "
                       "postgresql source"):
        apply(mysql_pos, StreamSpec("s", "pg", "d"), src, props, tmp_path, None)
    nxt = CdcStrategy.parse({"nextAvailableStartPosition": {}})
    with pytest.raises(CdcStrategyError, match="on a first start needs backfillNone"):
        apply(nxt, StreamSpec("s", "pg", "d"), src, props, tmp_path, None)
    # mostRecent on a first start is the connector's own start: nothing to write.
    most = CdcStrategy.parse({"mostRecentStartPosition": {}})
    assert apply(most, StreamSpec("s", "pg", "d"), src, props, tmp_path, None) == {}
    assert not (tmp_path / "streams").exists()


def test_parse_gtid_positions() -> None:
    s = CdcStrategy.parse({"specificStartPosition": {"mysqlGtidPosition": {
        "gtidSet": "0-1-42,1-2-7"}}})
    assert s.position_kind == "mysqlGtidPosition" and s.position == {"gtidSet": "0-1-42,1-2-7"}
    assert s.describe() == 'mysqlGtidPosition {"gtidSet":"0-1-42,1-2-7"}'
    mysql_set = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-42:50-60"
    assert CdcStrategy.parse({"specificStartPosition": {"mysqlGtidPosition": {
        "gtidSet": mysql_set}}}).position == {"gtidSet": mysql_set}


@pytest.mark.parametrize(("gtid_set", "message"), [
    ("0-1-x", "cdcStrategy: mysqlGtidPosition {gtidSet: 0-1-x}: not a GTID set: '0-1-x' is "
              "neither a MariaDB GTID (domain-server-sequence, e.g. 0-1-42) nor a MySQL GTID "
              "set (uuid:interval"),
    ("0-1-5,\n0-2-6", "mysqlGtidPosition {gtidSet: 0-1-5, 0-2-6}: not a GTID set: names "
                      "domain 0 twice"),
    (42, "mysqlGtidPosition {gtidSet: 42}: gtidSet must be a string"),
    ("", "mysqlGtidPosition: needs gtidSet"),
])
def test_bad_gtid_sets(gtid_set: object, message: str) -> None:
    with pytest.raises(CdcStrategyError) as err:
        CdcStrategy.parse({"specificStartPosition": {"mysqlGtidPosition": {
            "gtidSet": gtid_set}}})
    assert message in str(err.value)
    assert "\n" not in str(err.value)


class _MySqlServer:
    """A DB-API connection to a MySQL 8.0 server, enough for `apply`'s questions."""

    def cursor(self) -> _MySqlServer:
        return self

    def __enter__(self) -> _MySqlServer:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, sql: str) -> None:
        self.sql = sql

    def fetchall(self) -> list[tuple[object, ...]]:
        assert self.sql == "SHOW BINARY LOGS"
        return [("b.000001", 500)]

    def fetchone(self) -> tuple[object, ...]:
        return ("8.0.36",) if self.sql == "SELECT VERSION()" else ("b.000001", 500)


def test_gtid_position_on_mysql_is_refused(tmp_path: Path) -> None:
    src = source_profile("my", "mysql", {"database.hostname": "h", "database.user": "u"})
    spec = StreamSpec("s", "my", "d", backfill="none")
    gtids = CdcStrategy.parse({"specificStartPosition": {"mysqlGtidPosition": {
        "gtidSet": "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-42"}}})
    with pytest.raises(CdcStrategyError, match=re.escape(
            "cdcStrategy: mysqlGtidPosition {gtidSet: 3e11fa47-71ca-11e1-9e33-c80aa9429562:"
            "1-42}: starting from a GTID set on a MySQL server is not supported yet")):
        apply(gtids, spec, src, {"topic.prefix": "s"}, tmp_path, _MySqlServer())
    assert not (tmp_path / "streams" / "s" / "offsets.json").exists()


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-11-29T18:00:00Z", (1795975200, 0)),
    ("2026-11-29T18:00:00.5Z", (1795975200, 500_000_000)),
    ("2026-11-29T18:00:00.123456789Z", (1795975200, 123_456_789)),
    ("2026-11-29T19:30:00+01:30", (1795975200, 0)),
    ("2026-11-29t18:00:00z", (1795975200, 0)),
])
def test_mongodb_start_time(text: str, expected: tuple[int, int]) -> None:
    s = CdcStrategy.parse({"specificStartPosition": {"mongodbChangeStreamPosition": {
        "startTime": text}}})
    assert s.position_kind == "mongodbChangeStreamPosition"
    assert s.describe() == f'mongodbChangeStreamPosition {{"startTime":"{text}"}}'
    assert start_time(text) == expected


@pytest.mark.parametrize(("value", "message"), [
    ("2026-11-29 18:00:00", "{startTime: 2026-11-29 18:00:00}: startTime is not an RFC 3339 "
                            "timestamp"),
    ("2026-11-29T18:00:00", "startTime is not an RFC 3339 timestamp"),  # no zone
    ("2026-11-29T18:00:00.1234567890Z", "startTime is not an RFC 3339 timestamp"),
    ("2026-13-01T00:00:00Z", "{startTime: 2026-13-01T00:00:00Z}: startTime is not a valid "
                             "time: month must be in 1..12"),
    (1795975200, "{startTime: 1795975200}: startTime must be a string"),
    ("", "mongodbChangeStreamPosition: needs startTime"),
])
def test_bad_mongodb_start_times(value: object, message: str) -> None:
    with pytest.raises(CdcStrategyError) as err:
        CdcStrategy.parse({"specificStartPosition": {"mongodbChangeStreamPosition": {
            "startTime": value}}})
    assert str(err.value).startswith("cdcStrategy")
    assert message in str(err.value)


def test_mongodb_offset_time() -> None:
    """The connector starts at an offset's sec/ord only when it holds no resume token."""
    from bson.timestamp import Timestamp

    from headwater.connectors.mongodb.position import offset_time

    assert offset_time({"sec": 5, "ord": 0, "snapshot_completed": True}) == Timestamp(5, 0)
    assert offset_time({"sec": 5, "ord": 1, "resume_token": "x"}) is None
    assert offset_time({"sec": -1, "ord": -1}) is None  # a snapshot's offset
    assert offset_time(None) is None


@pytest.mark.parametrize(("text", "raw"), [
    ("0000002b:00000140:0003", "0000002b000001400003"),
    ("0x0000002B000001400003", "0000002b000001400003"),
    (" 0000002B000001400003 ", "0000002b000001400003"),
])
def test_sqlserver_lsn(text: str, raw: str) -> None:
    from headwater.streams.positions import sqlserver_lsn

    assert sqlserver_lsn(text).hex() == raw
    s = CdcStrategy.parse({"specificStartPosition": {"sqlServerLsnPosition": {"lsn": text}}})
    assert s.position_kind == "sqlServerLsnPosition"


@pytest.mark.parametrize("value", ["0/16B3748", "2b:140:3", "0x2B", 42])
def test_bad_sqlserver_lsns(value: object) -> None:
    with pytest.raises(CdcStrategyError, match=re.escape(
            f"cdcStrategy: sqlServerLsnPosition {{lsn: {value}}}: not an SQL Server LSN")):
        CdcStrategy.parse({"specificStartPosition": {"sqlServerLsnPosition": {"lsn": value}}})


def test_sqlserver_position_on_another_source(tmp_path: Path) -> None:
    src = source_profile("pg", "postgresql", {"database.hostname": "h", "database.user": "u",
                                              "database.dbname": "d"})
    lsn = CdcStrategy.parse({"specificStartPosition": {"sqlServerLsnPosition": {
        "lsn": "0000002b:00000140:0003"}}})
    with pytest.raises(CdcStrategyError, match="sqlServerLsnPosition is not a position of a "
                       "postgresql source"):
        apply(lsn, StreamSpec("s", "pg", "d", backfill="none"), src,
              {"topic.prefix": "s", "slot.name": "x"}, tmp_path, None)
