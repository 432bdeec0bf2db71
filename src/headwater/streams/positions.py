"""Where a stream's change capture starts: Datastream's `cdcStrategy` on start and resume.

Why offsets and not a second start path: the connectors already start from a stored offset
(MySQL: binlog file and position; PostgreSQL: an LSN, checked against the slot) and already
know `snapshot.mode=never` (MySQL: stream from the oldest binlog) and `recovery` (rebuild
the schema history, then stream from the offset).  So a strategy is resolved against the
source, checked, and written as the stream's offset before its worker starts; the worker
then runs the ordinary capture, with a one-run `snapshot.mode` when the start needs one.

Datastream's `CdcStrategy` (datastream_resources.proto, RunStreamRequest.cdc_strategy):
`mostRecentStartPosition {}`, `nextAvailableStartPosition {}`, `specificStartPosition` with
`mysqlLogPosition {logFile, logPosition}`, `mysqlGtidPosition {gtidSet}`,
`sqlServerLsnPosition {lsn}`, `oracleScnPosition {scn}`.  Datastream has no PostgreSQL
position; Headwater adds `postgresqlLsnPosition {lsn}` (its own name, said so in the docs).
A position the source no longer has fails the request, naming it: nothing starts elsewhere.
SQL Server streams check `sqlServerLsnPosition` against the LSNs the capture instances hold.
`mysqlGtidPosition` is a MariaDB GTID position on MariaDB (connectors/mysql/gtid_start.py
says why); on MySQL it is refused (the binlog reader starts from GTIDs on MariaDB only).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import orjson

from headwater.streams.model import BACKFILL_NONE, StreamSpec
from headwater.streams.profiles import Profile, source_kind
from headwater.streams.translate import OFFSETS_FILE, stream_dir

if TYPE_CHECKING:
    from headwater.connectors.mysql.gtid_start import GtidSet

MOST_RECENT: Final = "mostRecentStartPosition"
NEXT_AVAILABLE: Final = "nextAvailableStartPosition"
SPECIFIC: Final = "specificStartPosition"
STRATEGIES: Final = (MOST_RECENT, NEXT_AVAILABLE, SPECIFIC)
# The specific positions, with their fields and the source kind each applies to.
POSITIONS: Final = {
    "mysqlLogPosition": ("mysql", ("logFile", "logPosition")),
    "mysqlGtidPosition": ("mysql", ("gtidSet",)),
    "postgresqlLsnPosition": ("postgresql", ("lsn",)),
    "sqlServerLsnPosition": ("sqlserver", ("lsn",)),
    "oracleScnPosition": ("oracle", ("scn",)),
    "mongodbChangeStreamPosition": ("mongodb", ("startTime",)),
}
OVERRIDE_FILE: Final = "start-override.json"  # the next run's snapshot.mode, when needed


class CdcStrategyError(ValueError):
    """A malformed strategy, or one this stream cannot use; the message says which part."""


class StartPositionUnavailable(CdcStrategyError):
    """The position is not (or no longer) on the source."""

    def __init__(self, position: str, why: str) -> None:
        self.position = position
        super().__init__(f"the start position {position} is not available on the source: {why}")


@dataclass(frozen=True, slots=True)
class CdcStrategy:
    kind: str  # one of STRATEGIES
    position_kind: str | None = None  # a key of POSITIONS (specificStartPosition only)
    position: Mapping[str, Any] | None = None

    @classmethod
    def parse(cls, doc: Mapping[str, Any]) -> CdcStrategy:
        """Datastream's JSON: exactly one of the three strategies."""
        given = [k for k in doc if doc[k] is not None]
        unknown = [k for k in given if k not in STRATEGIES]
        if unknown or len(given) != 1:
            raise CdcStrategyError(
                f"cdcStrategy: give exactly one of {', '.join(STRATEGIES)}"
                + (f" (unknown: {', '.join(unknown)})" if unknown else f" (got {len(given)})"))
        kind = given[0]
        if kind != SPECIFIC:
            return cls(kind)
        spec = doc[kind]
        if not isinstance(spec, Mapping) or len(spec) != 1 or next(iter(spec)) not in POSITIONS:
            raise CdcStrategyError(f"cdcStrategy.{SPECIFIC}: give exactly one of "
                                   + ", ".join(POSITIONS))
        pkind = next(iter(spec))
        fields = spec[pkind]
        needed = POSITIONS[pkind][1]
        if not isinstance(fields, Mapping) or any(fields.get(f) in (None, "") for f in needed):
            raise CdcStrategyError(f"cdcStrategy.{SPECIFIC}.{pkind}: needs "
                                   + ", ".join(needed))
        extra = sorted(set(fields) - set(needed))
        if extra:
            raise CdcStrategyError(f"cdcStrategy.{SPECIFIC}.{pkind}: unknown field(s) "
                                   + ", ".join(extra))
        if pkind == "mysqlGtidPosition":
            gtid_set(fields["gtidSet"])  # a malformed set fails the request, naming it
        if pkind == "mongodbChangeStreamPosition":
            start_time(fields["startTime"])  # likewise a malformed time
        if pkind == "sqlServerLsnPosition":
            sqlserver_lsn(fields["lsn"])  # and a malformed LSN
        return cls(kind, pkind, dict(fields))

    def as_json(self) -> dict[str, Any]:
        if self.kind != SPECIFIC:
            return {self.kind: {}}
        assert self.position_kind is not None
        return {SPECIFIC: {self.position_kind: dict(self.position or {})}}

    def describe(self) -> str:
        if self.position_kind is None:
            return self.kind
        return f"{self.position_kind} {orjson.dumps(dict(self.position or {})).decode()}"


def gtid_set(value: Any) -> GtidSet:
    """`mysqlGtidPosition.gtidSet`, either flavour (which one the server takes is checked
    against it in `apply`)."""
    from headwater.connectors.mysql.gtid_start import GtidSetError, parse_gtid_set

    text = " ".join(str(value).split())
    if not isinstance(value, str):
        raise CdcStrategyError(f"cdcStrategy: mysqlGtidPosition {{gtidSet: {text}}}: gtidSet "
                               "must be a string")
    try:
        return parse_gtid_set(value)
    except GtidSetError as exc:
        raise CdcStrategyError(f"cdcStrategy: mysqlGtidPosition {{gtidSet: {text}}}: not a "
                               f"GTID set: {exc}") from None


_SQLSERVER_LSN = re.compile(r"(?:0x)?([0-9A-Fa-f]{20})|([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8}):"
                            r"([0-9A-Fa-f]{4})")


def sqlserver_lsn(value: Any) -> bytes:
    """`sqlServerLsnPosition.lsn` as SQL Server's `binary(10)`: written as Debezium writes
    it ("0000002b:00000140:0003", the `source` block's `change_lsn`/`commit_lsn`) or as SQL
    Server prints a binary(10) ("0x0000002B000001400003")."""
    m = _SQLSERVER_LSN.fullmatch(value.strip()) if isinstance(value, str) else None
    if m is None:
        raise CdcStrategyError(
            f"cdcStrategy: sqlServerLsnPosition {{lsn: {value}}}: not an SQL Server LSN "
            "(write it as Debezium's change_lsn/commit_lsn, 0000002b:00000140:0003, or as "
            "a binary(10), 0x0000002B000001400003)")
    return bytes.fromhex(m.group(1) or "".join(m.groups()[1:]))


# google.protobuf.Timestamp's JSON form (RFC 3339): "Z" or an offset, 0-9 fractional digits.
_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
                      r"(?:([Zz])|([+-])(\d{2}):(\d{2}))")


def start_time(value: Any) -> tuple[int, int]:
    """`mongodbChangeStreamPosition.startTime` as (seconds since the epoch, nanoseconds)."""
    where = f"cdcStrategy: mongodbChangeStreamPosition {{startTime: {value}}}: startTime"
    example = "an RFC 3339 timestamp such as 2026-11-29T18:00:00Z or 2026-11-29T18:00:00.5Z"
    if not isinstance(value, str):
        raise CdcStrategyError(f"{where} must be a string, {example}")
    m = _RFC3339.fullmatch(value.strip())
    if m is None:
        raise CdcStrategyError(f"{where} is not {example}")
    y, mo, d, h, mi, sec = (int(g) for g in m.groups()[:6])
    try:
        tz = dt.UTC if m.group(8) else dt.timezone(
            (-1 if m.group(9) == "-" else 1)
            * dt.timedelta(hours=int(m.group(10)), minutes=int(m.group(11))))
        when = dt.datetime(y, mo, d, h, mi, sec, tzinfo=tz)
    except ValueError as exc:
        raise CdcStrategyError(f"{where} is not a valid time: {exc}") from None
    nanos = int((m.group(7) or "").ljust(9, "0") or 0)
    return (when - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(seconds=1), nanos


def _write_offset(home: Path, partition: dict[str, Any] | None, offset: dict[str, Any],
                  prefix: str) -> None:
    from headwater.engine.offsets import FileOffsetStore

    FileOffsetStore(home / OFFSETS_FILE, partition or {"server": prefix}).save(offset)


def _stored_partition(home: Path) -> dict[str, Any] | None:
    from headwater.engine.offsets import read_offset_file

    doc = read_offset_file(home / OFFSETS_FILE)
    part = doc.get("partition") if doc else None
    return dict(part) if isinstance(part, dict) else None


def apply(strategy: CdcStrategy, spec: StreamSpec, source: Profile, props: Mapping[str, str],
          data_dir: Path, conn: Any) -> dict[str, str]:
    """Checks the strategy against the source (`conn`, a DB-API connection to it; `props`,
    the stream's connector properties) and writes the stream's offset; returns the
    connector properties the next run needs (empty when the connector's own start is what
    was asked)."""
    kind = source_kind(source.kind).name
    home = stream_dir(data_dir, spec.name)
    first = not (home / OFFSETS_FILE).exists()
    if strategy.position_kind is not None and POSITIONS[strategy.position_kind][0] != kind:
        raise CdcStrategyError(f"cdcStrategy: {strategy.position_kind} is not a position of a "
                               f"{kind} source")
    if strategy.kind == MOST_RECENT and first:
        return {}  # the connector's first start streams from now (after any backfill)
    if first and spec.backfill != BACKFILL_NONE:
        raise CdcStrategyError(
            f"cdcStrategy {strategy.kind} on a first start needs backfillNone: the automatic "
            "backfill's snapshot fixes its own start position (start the stream with "
            "mostRecentStartPosition, or create it with backfill none and start backfill "
            "jobs per object)")
    prefix = props["topic.prefix"]
    partition = None if first else _stored_partition(home)
    if kind == "mysql":
        return _mysql(strategy, home, partition, prefix, conn, first)
    if kind == "postgresql":
        return _postgres(strategy, props["slot.name"], home, partition, prefix, conn)
    if kind == "mongodb":
        return _mongodb(strategy, home, partition or {"server_id": prefix}, conn, first)
    if kind == "sqlserver":
        return _sqlserver(strategy, props["database.names"].split(",")[0].strip(), home,
                          partition, prefix, conn, first)
    raise CdcStrategyError(f"cdcStrategy: not supported for {kind} streams yet")


def _mysql(strategy: CdcStrategy, home: Path, partition: dict[str, Any] | None, prefix: str,
           conn: Any, first: bool) -> dict[str, str]:
    from headwater.connectors.mysql.connection import binlog_status_statement

    with conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        logs = [(str(r[0]), int(r[1])) for r in cur.fetchall()]
        cur.execute("SELECT VERSION()")
        cur.execute(binlog_status_statement(str(cur.fetchone()[0])))
        status = cur.fetchone()
    if not logs or status is None:
        raise CdcStrategyError("cdcStrategy: the server has no binary logs (SHOW BINARY LOGS)")
    if strategy.kind == MOST_RECENT:
        file, pos = str(status[0]), int(status[1])
    elif strategy.kind == NEXT_AVAILABLE:
        if first:
            # The connector's own start from the oldest binlog, schema history from its DDL.
            return {"snapshot.mode": "never"}
        file, pos = logs[0][0], 4
    elif strategy.position_kind == "mysqlGtidPosition":
        assert strategy.position is not None
        return _mysql_gtids(gtid_set(strategy.position["gtidSet"]), home, partition, prefix,
                            conn, logs, first)
    else:
        assert strategy.position is not None
        file = str(strategy.position["logFile"])
        try:
            pos = int(strategy.position["logPosition"])
        except (TypeError, ValueError):
            raise CdcStrategyError("cdcStrategy: mysqlLogPosition.logPosition must be an "
                                   "integer") from None
        sizes = dict(logs)
        where = f"mysqlLogPosition {{logFile: {file}, logPosition: {pos}}}"
        if file not in sizes:
            raise StartPositionUnavailable(
                where, f"binary log {file} is not on the server (oldest {logs[0][0]}, newest "
                f"{logs[-1][0]}; SHOW BINARY LOGS)")
        if pos < 4 or pos > sizes[file]:
            raise StartPositionUnavailable(
                where, f"position {pos} is outside binary log {file} (4 to {sizes[file]})")
    _write_offset(home, partition, {"file": file, "pos": pos, "snapshot_completed": True},
                  prefix)
    # A first start has no schema history: rebuild it from the current schema (recovery).
    return {"snapshot.mode": "recovery"} if first else {}


def _mysql_gtids(wanted: GtidSet, home: Path, partition: dict[str, Any] | None, prefix: str,
                 conn: Any, logs: list[tuple[str, int]], first: bool) -> dict[str, str]:
    """MariaDB: the set as the offset's `gtids` (the capture starts with it as
    @slave_connect_state), with the file and position where the server will start."""
    from headwater.connectors.mysql.gtid_start import GtidUnavailable, mariadb_start

    where = f"mysqlGtidPosition {{gtidSet: {wanted.text}}}"
    with conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        mariadb = "mariadb" in str(cur.fetchone()[0]).lower()
        if not mariadb:
            raise CdcStrategyError(
                f"cdcStrategy: {where}: starting from a GTID set on a MySQL server is not "
                "supported yet (Headwater's binlog reader starts from GTIDs on MariaDB "
                "only); give a mysqlLogPosition {logFile, logPosition}")
        if wanted.flavour != "mariadb":
            raise CdcStrategyError(
                f"cdcStrategy: {where}: a MySQL GTID set (uuid:interval), but the server is "
                "MariaDB: give its GTID position, one domain-server-sequence per domain, as "
                "@@gtid_binlog_pos prints it (e.g. 0-1-42)")
        try:
            file, pos = mariadb_start(cur, wanted, logs)
        except GtidUnavailable as exc:
            raise StartPositionUnavailable(where, str(exc)) from None
    _write_offset(home, partition, {"file": file, "pos": pos, "gtids": wanted.text,
                                    "snapshot_completed": True}, prefix)
    return {"snapshot.mode": "recovery"} if first else {}


def _postgres(strategy: CdcStrategy, slot_name: str, home: Path,
              partition: dict[str, Any] | None, prefix: str, conn: Any) -> dict[str, str]:
    from headwater.connectors.postgres.connection import VISIBLE_WAL_POSITION_SQL
    from headwater.connectors.postgres.pgoutput import format_lsn, parse_lsn

    cur = conn.cursor()
    cur.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE "
                "slot_name = %s", (slot_name,))
    row = cur.fetchone()
    cur.execute(f"SELECT {VISIBLE_WAL_POSITION_SQL}")
    current = parse_lsn(str(cur.fetchone()[0]))
    confirmed = parse_lsn(str(row[0])) if row and row[0] else None
    if strategy.kind == MOST_RECENT:
        lsn = current
    elif strategy.kind == NEXT_AVAILABLE:
        if confirmed is None:
            return {}  # no slot yet: the slot the start creates is the oldest there is
        lsn = confirmed
    else:
        assert strategy.position is not None
        text = str(strategy.position["lsn"])
        where = f"postgresqlLsnPosition {{lsn: {text}}}"
        try:
            lsn = parse_lsn(text)
        except (ValueError, IndexError):
            raise CdcStrategyError(f"cdcStrategy: {where}: not an LSN (write it as "
                                   "XXXXXXXX/XXXXXXXX)") from None
        if confirmed is None:
            raise StartPositionUnavailable(
                where, f"replication slot {slot_name} does not exist, so no WAL before its "
                "creation is kept for the stream")
        if lsn < confirmed:
            raise StartPositionUnavailable(
                where, f"it is behind replication slot {slot_name}'s confirmed position "
                f"{format_lsn(confirmed)}; the changes before that are no longer kept")
        if lsn > current:
            raise StartPositionUnavailable(
                where, f"it is ahead of the server's current WAL position {format_lsn(current)}")
    # The server may send transactions from the slot's confirmed position on, whatever the
    # requested LSN (Debezium skips those too): `lsn_commit` makes the streaming source's
    # restart rule skip every transaction that committed before the position.
    _write_offset(home, partition, {"lsn": lsn, "lsn_commit": lsn, "tx_index": 0,
                                    "snapshot_completed": True}, prefix)
    return {}


def _iso(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _mongodb(strategy: CdcStrategy, home: Path, partition: dict[str, Any], conn: Any,
             first: bool) -> dict[str, str]:
    """MongoDB: the start as an operation time in the offset (`sec`, `ord`, no resume token),
    where the connector starts its change stream (startAtOperationTime), as Debezium does
    with such an offset.  `conn` is a MongoClient."""
    from bson.timestamp import Timestamp
    from pymongo import errors

    from headwater.connectors.mongodb.position import (
        RESUME_TOKEN,
        offset_time,
        token_from_offset,
        token_time,
    )
    from headwater.engine.offsets import read_offset_file

    try:
        hello = conn.admin.command("hello")
        oldest_doc = conn.local["oplog.rs"].find({}, {"ts": 1}).sort("$natural", 1).limit(1)
        oldest_doc = next(iter(oldest_doc), None)
    except errors.PyMongoError as exc:
        raise CdcStrategyError(f"cdcStrategy {strategy.kind}: cannot read the oldest entry of "
                               f"the oplog (local.oplog.rs) to check the position: {exc}"
                               ) from None
    if oldest_doc is None or not isinstance(oldest_doc.get("ts"), Timestamp):
        raise CdcStrategyError(f"cdcStrategy {strategy.kind}: the server has no oplog "
                               "(local.oplog.rs is empty or absent): change streams need a "
                               "replica set member")
    oldest: Timestamp = oldest_doc["ts"]
    if strategy.kind == MOST_RECENT:
        # Every operation after the cluster time the server has reached now.
        now = (hello.get("$clusterTime") or {}).get("clusterTime") or hello.get("operationTime")
        if not isinstance(now, Timestamp):
            raise CdcStrategyError("cdcStrategy mostRecentStartPosition: the server reports "
                                   "no cluster time (hello): not a replica set member?")
        at = (Timestamp(now.time, now.inc + 1) if now.inc < 0xFFFFFFFF
              else Timestamp(now.time + 1, 0))
    elif strategy.kind == NEXT_AVAILABLE:
        stored = None if first else read_offset_file(home / OFFSETS_FILE)
        offset = stored.get("offset") if stored else None
        if isinstance(offset, Mapping):
            # The stored position (a resume token's cluster time, or an operation time),
            # if the oplog still has it.
            token, stored_at = offset.get(RESUME_TOKEN), offset_time(offset)
            if token:
                try:
                    stored_at = Timestamp(*token_time(token_from_offset(str(token))))
                except ValueError as exc:
                    raise CdcStrategyError(f"cdcStrategy nextAvailableStartPosition: the "
                                           f"stored resume token: {exc}") from None
            if stored_at is not None and stored_at >= oldest:
                return {}
        at = oldest  # the oldest change the oplog has
    else:
        assert strategy.position is not None
        text = strategy.position["startTime"]
        seconds, _nanos = start_time(text)
        where = f"mongodbChangeStreamPosition {{startTime: {text}}}"
        clock = hello.get("localTime")
        server_now = (int(clock.replace(tzinfo=dt.UTC).timestamp())
                      if isinstance(clock, dt.datetime) else None)
        if server_now is not None and seconds > server_now:
            raise StartPositionUnavailable(
                where, f"it is in the future: the server's clock says {_iso(server_now)}")
        if seconds < oldest.time:
            raise StartPositionUnavailable(
                where, f"it is before the oplog's oldest entry ({_iso(oldest.time)}, "
                "local.oplog.rs); the changes before that are no longer kept")
        # An operation time counts seconds: the start is the whole second the time is in
        # (changes earlier in that second are included rather than any later one missed).
        at = Timestamp(seconds, 0)
    _write_offset(home, partition, {"sec": at.time, "ord": at.inc, "snapshot_completed": True},
                  str(partition.get("server_id", "")))
    return {}


def _sqlserver(strategy: CdcStrategy, database: str, home: Path,
               partition: dict[str, Any] | None, prefix: str, conn: Any, first: bool
               ) -> dict[str, str]:
    """SQL Server: the range the capture instances hold is MIN(start_lsn) of
    cdc.change_tables (what Debezium's validateLogPosition checks a stored offset against;
    cleanup moves it) to sys.fn_cdc_get_max_lsn().  The position is written as the
    connector's offset (`commit_lsn`, `change_lsn`, `event_serial_no`, per database): a
    commit LSN without a change LSN means "that transaction is done", so the capture reads
    the transactions committed after it, and a start at LSN L stores the LSN just before L.
    A first start has no schema history: `snapshot.mode=recovery` records the current
    schema at the position (as MySQL's does)."""
    from headwater.connectors.sqlserver import queries
    from headwater.connectors.sqlserver.lsn import LSN_BYTES, lsn_text
    from headwater.relational.changetables.streaming import scalar

    raw_min = scalar(conn, queries.with_db(queries.GET_MIN_LSN_FROM_ALL_CHANGE_TABLES,
                                           database))
    raw_max = scalar(conn, queries.with_db(queries.GET_MAX_LSN, database))
    if raw_min is None or raw_max is None:
        raise CdcStrategyError(
            f"cdcStrategy {strategy.kind}: database {database} has no capture instance "
            "(cdc.change_tables is empty): enable change data capture for its tables "
            "(sys.sp_cdc_enable_table)")
    oldest, newest = bytes(raw_min), bytes(raw_max)

    def before(lsn: bytes) -> str:
        value = max(int.from_bytes(lsn, "big") - 1, 0)
        return str(lsn_text(value.to_bytes(LSN_BYTES, "big")))

    if strategy.kind == MOST_RECENT:
        commit = str(lsn_text(newest))  # everything committed up to now is behind
    elif strategy.kind == NEXT_AVAILABLE:
        commit = before(oldest)  # the oldest change the change tables still hold
    else:
        assert strategy.position is not None
        text = str(strategy.position["lsn"])
        lsn = sqlserver_lsn(text)
        where = f"sqlServerLsnPosition {{lsn: {text}}}"
        if lsn < oldest:
            raise StartPositionUnavailable(
                where, f"it is before the oldest LSN the capture instances of database "
                f"{database} hold ({lsn_text(oldest)}, MIN(start_lsn) of cdc.change_tables); "
                "the changes before that were cleaned up")
        if lsn > newest:
            raise StartPositionUnavailable(
                where, f"it is after the newest LSN of database {database} "
                f"({lsn_text(newest)}, sys.fn_cdc_get_max_lsn())")
        commit = before(lsn)
    _write_offset(home, partition, {"snapshot_completed": True, "databases": {
        database: {"commit_lsn": commit, "change_lsn": None, "event_serial_no": None}}},
        prefix)
    return {"snapshot.mode": "recovery"} if first else {}


def save_override(data_dir: Path, name: str, props: Mapping[str, str]) -> None:
    path = stream_dir(data_dir, name) / OVERRIDE_FILE
    if props:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(orjson.dumps(dict(props)))
    else:
        path.unlink(missing_ok=True)


def load_override(data_dir: Path, name: str) -> dict[str, str]:
    path = stream_dir(data_dir, name) / OVERRIDE_FILE
    if not path.exists():
        return {}
    return {str(k): str(v) for k, v in orjson.loads(path.read_bytes()).items()}
