"""Datastream's per-object backfill jobs: their states, triggers, times and errors.

Why a table of its own beside the signals (backfill.py): a signal only asks; Datastream's
StreamObject.backfillJob says what became of the ask (NOT_STARTED, PENDING, ACTIVE,
STOPPED, FAILED, COMPLETED, UNSUPPORTED), with `trigger` AUTOMATIC or MANUAL,
`lastStartTime`, `lastEndTime` and `errors`.  Requests (start, stop) set PENDING and STOPPED
here; the stream's worker follows its capture's incremental snapshot (the metrics'
`incremental_tables`) and moves a job to ACTIVE, COMPLETED, STOPPED or FAILED.  A job is
checked before it is asked for: a table without a primary key cannot be backfilled in chunks
(Debezium's incremental snapshots need a key) and is UNSUPPORTED, and so is a MongoDB view or
time series collection (no change stream to capture it, no `_id` index to chunk it by); a
filter the source refuses is an error naming the object and the filter, and nothing is
queued.  A MongoDB stream's backfill also needs `signal.data.collection`: the MongoDB
connector writes its incremental snapshots' watermarks there (it has no read-only variant).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import orjson

from headwater.config.connector_common import NameFilter
from headwater.streams.backfill import start_backfill, stop_backfill
from headwater.streams.catalog import Catalog, CatalogError, now_ms
from headwater.streams.model import ObjectRef, StreamSpec
from headwater.streams.profiles import Profile, source_kind

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS backfill_jobs (
  stream TEXT NOT NULL, object TEXT NOT NULL, state TEXT NOT NULL, trig TEXT NOT NULL,
  filter TEXT, last_start_ms INTEGER, last_end_ms INTEGER, errors TEXT NOT NULL,
  PRIMARY KEY (stream, object));
"""


class JobState(StrEnum):
    NOT_STARTED = "NOT_STARTED"
    PENDING = "PENDING"
    ACTIVE = "ACTIVE"
    STOPPED = "STOPPED"  # Datastream: the next run starts from the beginning
    FAILED = "FAILED"
    COMPLETED = "COMPLETED"
    UNSUPPORTED = "UNSUPPORTED"


AUTOMATIC: Final = "AUTOMATIC"
MANUAL: Final = "MANUAL"
# What the capture reports may move a job that is still waiting for, or in, its run.
_FOLLOWS: Final = frozenset({JobState.PENDING, JobState.ACTIVE})


class BackfillError(ValueError):
    """A backfill request the source or the stream refuses; the message names the object."""


@dataclass(frozen=True, slots=True)
class BackfillJob:
    obj: str
    state: JobState
    trigger: str
    filter: str | None
    last_start_ms: int | None
    last_end_ms: int | None
    errors: list[dict[str, Any]]

    def as_json(self) -> dict[str, Any]:
        """Datastream's StreamObject with its BackfillJob (times as RFC 3339)."""
        job: dict[str, Any] = {"state": self.state.value, "trigger": self.trigger}
        if self.last_start_ms:
            job["lastStartTime"] = _iso(self.last_start_ms)
        if self.last_end_ms:
            job["lastEndTime"] = _iso(self.last_end_ms)
        if self.filter:
            job["filter"] = self.filter  # Headwater: the partial backfill's WHERE
        job["errors"] = self.errors
        return {"displayName": self.obj, "backfillJob": job}


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def _error(reason: str, message: str, details: Mapping[str, str]) -> dict[str, Any]:
    import uuid

    return {"reason": reason, "errorUuid": str(uuid.uuid4()), "message": message,
            "errorTime": _iso(now_ms()), "details": dict(details)}


class BackfillJobs:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        with catalog.transaction() as db:
            db.execute(_SCHEMA)

    # -- reads ---------------------------------------------------------------------------
    def jobs(self, stream: str) -> list[BackfillJob]:
        self.catalog.stream(stream)
        with self.catalog.transaction() as db:
            rows = db.execute("SELECT object, state, trig, filter, last_start_ms, last_end_ms,"
                              " errors FROM backfill_jobs WHERE stream=? ORDER BY object",
                              (stream,)).fetchall()
        return [BackfillJob(r[0], JobState(r[1]), r[2], r[3], r[4], r[5], orjson.loads(r[6]))
                for r in rows]

    def job(self, stream: str, obj: ObjectRef) -> BackfillJob:
        name = obj.table_name()
        for j in self.jobs(stream):
            if j.obj == name:
                return j
        return BackfillJob(name, JobState.NOT_STARTED, MANUAL, None, None, None, [])

    def objects(self, stream: str, tables: list[str]) -> list[BackfillJob]:
        """Every object of the stream (`tables`, from the source), NOT_STARTED where no
        backfill was ever asked for."""
        known = {j.obj: j for j in self.jobs(stream)}
        return [known.get(t) or BackfillJob(t, JobState.NOT_STARTED, MANUAL, None, None, None,
                                            []) for t in sorted(set(tables) | set(known))]

    def forget(self, stream: str) -> None:
        """Drops a deleted stream's jobs (a new stream of that name starts with none)."""
        with self.catalog.transaction() as db:
            db.execute("DELETE FROM backfill_jobs WHERE stream=?", (stream,))

    # -- writes --------------------------------------------------------------------------
    def _put(self, stream: str, job: BackfillJob) -> BackfillJob:
        """Stores the job; a change of state goes into the stream's history too (action
        `backfill_job`, the object as detail), so a short ACTIVE is still on record."""
        with self.catalog.transaction() as db:
            row = db.execute("SELECT state FROM backfill_jobs WHERE stream=? AND object=?",
                             (stream, job.obj)).fetchone()
            before = row[0] if row else JobState.NOT_STARTED.value
            if before != job.state.value or job.state is JobState.PENDING:
                db.execute("INSERT INTO state_history (stream, time_ms, from_state, to_state, "
                           "action, detail) VALUES (?,?,?,?,?,?)",
                           (stream, now_ms(), before, job.state.value, "backfill_job",
                            job.obj))
            db.execute("INSERT OR REPLACE INTO backfill_jobs VALUES (?,?,?,?,?,?,?,?)",
                       (stream, job.obj, job.state.value, job.trigger, job.filter,
                        job.last_start_ms, job.last_end_ms, orjson.dumps(job.errors).decode()))
        return job

    def start(self, stream: str, obj: ObjectRef, where: str | None = None, *,
              trigger: str = MANUAL) -> BackfillJob:
        """Datastream's StartBackfillJob: checks the object and the filter on the source,
        then queues the backfill (PENDING until the capture runs it)."""
        rec = self.catalog.stream(stream)
        name = obj.table_name()
        source = self.catalog.profile(rec.spec.source_profile, "source")
        kind = source_kind(source.kind).name
        try:
            admitted = captures(rec.spec, kind).admits(name)
        except ValueError as exc:  # lists the connector would refuse (the stream cannot run)
            raise BackfillError(f"backfill of {name}: stream {stream!r}: {exc}") from None
        if not admitted:
            # Datastream refuses an object that is not part of the stream (the PostgreSQL
            # capture would backfill it into a topic of its own; MySQL's and MongoDB's fail
            # the job as not captured).
            if rec.spec.include and not _listed(rec.spec.include, obj):
                raise BackfillError(
                    f"backfill of {name}: the object is not part of stream {stream!r} (its "
                    "include list: " + ", ".join(str(r) for r in rec.spec.include) + ")")
            raise BackfillError(f"backfill of {name}: the object is excluded from stream "
                                f"{stream!r}")
        signal_collection = (rec.spec.properties.get("signal.data.collection")
                             or source.properties.get("signal.data.collection"))
        if kind in _WATERMARK_TABLES and not signal_collection:  # said before connecting
            label, form, where_kept = _WATERMARK_TABLES[kind]
            raise BackfillError(
                f"backfill of {name}: a {label} stream's backfill needs "
                f"signal.data.collection={form} (streams create -p ...), {where_kept}")
        from headwater.streams.sources import connect

        try:
            conn = connect(source)
        except Exception as exc:  # unreachable or refusing: nothing is queued unchecked
            raise BackfillError(f"backfill of {name}: cannot check the object on the source "
                                f"({type(exc).__name__}: {' '.join(str(exc).split())})"
                                ) from None
        try:
            database = source.properties.get("database.names", "").split(",")[0].strip()
            unsupported = check_object(conn, kind, obj, where, database)
        finally:
            conn.close()
        t = now_ms()
        if unsupported is not None:
            msg = f"backfill of {name}: {unsupported}"
            self._put(stream, BackfillJob(name, JobState.UNSUPPORTED, trigger, where, t, t,
                                          [_error("UNSUPPORTED", msg, {"object": name})]))
            raise BackfillError(msg)
        start_backfill(self.catalog.root, stream, obj, where, _signal_database(source))
        return self._put(stream, BackfillJob(name, JobState.PENDING, trigger, where or None,
                                             t, None, []))

    def stop(self, stream: str, obj: ObjectRef) -> BackfillJob:
        """Datastream's StopBackfillJob: the next run starts from the beginning."""
        job = self.job(stream, obj)
        if job.state in (JobState.NOT_STARTED, JobState.UNSUPPORTED):
            raise BackfillError(f"backfill of {job.obj} is {job.state.value}: nothing to stop")
        rec = self.catalog.stream(stream)
        stop_backfill(self.catalog.root, stream, obj, _signal_database(
            self.catalog.profile(rec.spec.source_profile, "source")))
        return self._put(stream, BackfillJob(job.obj, JobState.STOPPED, job.trigger,
                                             job.filter, job.last_start_ms, now_ms(),
                                             job.errors))

    def record(self, stream: str, name: str, state: JobState, trigger: str) -> None:
        """An automatic backfill's progress (the initial snapshot's tables)."""
        job = next((j for j in self.jobs(stream) if j.obj == name), None)
        t = now_ms()
        start = job.last_start_ms if job is not None and job.last_start_ms else t
        self._put(stream, BackfillJob(name, state, trigger, None, start,
                                      None if state is JobState.ACTIVE else t,
                                      job.errors if job is not None else []))

    def follow(self, stream: str, reported: Mapping[str, tuple[str, int, str]]) -> None:
        """Moves PENDING/ACTIVE jobs by what the capture reported after they started."""
        for job in self.jobs(stream):
            if job.state not in _FOLLOWS:
                continue
            seen = reported.get(job.obj) or next(
                (v for k, v in reported.items() if k.endswith("." + job.obj)), None)
            if seen is None or seen[1] < (job.last_start_ms or 0):
                continue
            state, at, message = JobState(seen[0]), seen[1], seen[2]
            if state is job.state:
                continue
            errors = job.errors + ([_error("BACKFILL_FAILED", message, {"object": job.obj})]
                                   if state is JobState.FAILED else [])
            end = at if state is not JobState.ACTIVE else None
            self._put(stream, BackfillJob(job.obj, state, job.trigger, job.filter,
                                          job.last_start_ms, end, errors))


def _signal_database(source: Profile) -> str | None:
    """The database a SQL Server stream's signals name tables with (None: other sources)."""
    if source_kind(source.kind).name != "sqlserver":
        return None
    return source.properties["database.names"].split(",")[0].strip()


def stream_tables(catalog: Catalog, stream: str) -> list[str]:
    """The source's tables the stream carries (its include/exclude lists, as the connector
    applies them: translate.object_filters' regular expressions)."""
    from headwater.streams.discover import discover

    rec = catalog.stream(stream)
    source = catalog.profile(rec.spec.source_profile, "source")
    doc = discover(source, 2)
    if "mongodbCluster" in doc:
        names = [f"{d['database']}.{c['collection']}"
                 for d in doc["mongodbCluster"]["databases"] for c in d.get("collections", [])]
    else:
        names = [f"{c.get('schema', c.get('database'))}.{t['table']}"
                 for rdbms in doc.values() for cs in rdbms.values() for c in cs
                 for k, ts in c.items() if k.lower().endswith("tables") for t in ts]
    admitted = captures(rec.spec, source_kind(source.kind).name)
    return [n for n in names if admitted.admits(n)]


def _listed(refs: tuple[ObjectRef, ...], obj: ObjectRef) -> bool:
    """Whether an include list names the table or its schema/database (case-insensitive,
    as the connector's filters)."""
    assert obj.table is not None
    return any(r.container.lower() == obj.container.lower()
               and (r.table is None or r.table.lower() == obj.table.lower()) for r in refs)


def captures(spec: StreamSpec, kind: str) -> NameFilter:
    """Which `<schema|database>.<table|collection>` names the stream captures: its
    include/exclude lists as translated for the connector, read by the connector's own
    filter (whole names, case-insensitive)."""
    from headwater.streams.translate import collection_filters, object_filters

    props = collection_filters(spec) if kind == "mongodb" else object_filters(spec)
    prefix = "collection" if kind == "mongodb" else "table"
    return NameFilter([x for x in props.get(f"{prefix}.include.list", "").split(",") if x],
                      [x for x in props.get(f"{prefix}.exclude.list", "").split(",") if x])


# Sources whose incremental snapshots write watermarks (no read-only variant): the property
# form, and where the watermarks go.
_WATERMARK_TABLES: Final = {
    "mongodb": ("MongoDB", "<db>.<collection>", "where the connector writes its watermarks"),
    "sqlserver": ("SQL Server", "<database>.<schema>.<table>",
                  "a table with CDC enabled where the connector writes its watermarks (the "
                  "change-table connectors refuse read.only)"),
}


def check_object(conn: Any, kind: str, obj: ObjectRef, where: str | None,
                 database: str = "") -> str | None:
    """Why the object cannot be backfilled (UNSUPPORTED), or None when it can; BackfillError
    when it does not exist or the source refuses the filter (run read-only, returning no
    rows)."""
    name = obj.table_name()
    assert obj.table is not None
    if kind == "mongodb":
        return _check_collection(conn, name, obj.container, obj.table, where)
    if kind == "sqlserver":
        return _check_sqlserver(conn, database, name, obj.container, obj.table, where)
    if kind == "postgresql":
        table = f'"{obj.container.replace(chr(34), chr(34) * 2)}"."' \
                f'{obj.table.replace(chr(34), chr(34) * 2)}"'
        key_sql = ("SELECT count(*) FROM pg_index WHERE indrelid = to_regclass(%s) AND "
                   "indisprimary")
        exists_sql = "SELECT to_regclass(%s) IS NOT NULL"
    elif kind == "mysql":
        table = f"`{obj.container.replace('`', '``')}`.`{obj.table.replace('`', '``')}`"
        key_sql = exists_sql = ""
    else:
        raise BackfillError(f"backfill of {name}: not supported for {kind} streams here")
    cur = conn.cursor()
    try:
        if kind == "postgresql":
            cur.execute(exists_sql, (table,))
            if not cur.fetchone()[0]:
                raise BackfillError(f"backfill of {name}: no such table on the source")
            cur.execute(key_sql, (table,))
            has_key = int(cur.fetchone()[0]) > 0
        else:
            cur.execute("SELECT count(*), sum(constraint_type = 'PRIMARY KEY') FROM "
                        "information_schema.tables t LEFT JOIN "
                        "information_schema.table_constraints c USING (table_schema, "
                        "table_name) WHERE t.table_schema=%s AND t.table_name=%s",
                        (obj.container, obj.table))
            count, keys = cur.fetchone()
            if not count:
                raise BackfillError(f"backfill of {name}: no such table on the source")
            has_key = bool(keys)
        if where:
            _check_filter(conn, cur, kind, name, table, where)
    finally:
        cur.close()
    return None if has_key else (
        "the table has no primary key, which a backfill in chunks needs")


def _check_collection(client: Any, name: str, database: str, collection: str,
                      where: str | None) -> str | None:
    """MongoDB: the collection exists and is a plain collection (a view or a time series
    collection has no change stream and no `_id` index the chunks follow); the filter is a
    query document (the connector's own parser) that the server accepts."""
    from pymongo import errors

    from headwater.connectors.mongodb.query_json import FilterError, parse_filter

    found = list(client[database].list_collections(filter={"name": collection}))
    if not found:
        raise BackfillError(f"backfill of {name}: no such collection on the source")
    kind = found[0].get("type", "collection")
    if kind != "collection":
        return (f"a MongoDB {kind} cannot be backfilled: it has no change stream and no _id "
                "index to read it in chunks by")
    if where:
        try:
            query = parse_filter(where)
            with client[database][collection].find(query, {"_id": 1}, limit=1) as cursor:
                next(cursor, None)  # the server parses the query on the first batch
        except (FilterError, errors.PyMongoError) as exc:
            detail = " ".join(str(exc).split())
            raise BackfillError(f"backfill of {name}: filter {where!r} is not valid on the "
                                f"source: {detail}") from None
    return None


def _check_sqlserver(conn: Any, database: str, name: str, schema: str, table: str,
                     where: str | None) -> str | None:
    """SQL Server: the table exists and has a capture instance (the connector snapshots
    captured tables only), through the connector's own catalog queries; the filter is run
    with TOP 0."""
    from headwater.connectors.sqlserver import queries

    def rows(sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        cur = conn.cursor()
        try:
            cur.execute(queries.with_db(sql, database), params)
            return [tuple(r) for r in cur.fetchall()]
        finally:
            cur.close()

    if (schema, table) not in {(str(s), str(t)) for s, t in rows(queries.GET_TABLES)}:
        raise BackfillError(f"backfill of {name}: no such table on the source")
    if not any((str(r[0]), str(r[1])) == (schema, table)
               for r in rows(queries.GET_CHANGE_TABLES, (database, database))):
        raise BackfillError(f"backfill of {name}: the table has no capture instance; enable "
                            "change data capture for it (sys.sp_cdc_enable_table)")
    has_key = any((str(s), str(t)) == (schema, table)
                  for s, t, _c in rows(queries.GET_PRIMARY_KEYS))
    if where:
        quoted = f"{queries.quote(schema)}.{queries.quote(table)}"
        try:
            rows(f"SELECT TOP 0 1 FROM #db.{quoted} WHERE ({where})")
        except Exception as exc:
            detail = " ".join(str(exc).split())
            raise BackfillError(f"backfill of {name}: filter {where!r} is not valid on the "
                                f"source: {detail}") from None
    return None if has_key else (
        "the table has no primary key, which a backfill in chunks needs")


def _check_filter(conn: Any, cur: Any, kind: str, name: str, table: str, where: str) -> None:
    begin = "BEGIN READ ONLY" if kind == "postgresql" else "START TRANSACTION READ ONLY"
    cur.execute(begin)
    try:
        cur.execute(f"SELECT 1 FROM {table} WHERE ({where}) LIMIT 0")
    except Exception as exc:
        detail = " ".join(str(exc).split())
        raise BackfillError(f"backfill of {name}: filter {where!r} is not valid on the "
                            f"source: {detail}") from None
    finally:
        cur.execute("ROLLBACK")


__all__ = ["AUTOMATIC", "MANUAL", "BackfillError", "BackfillJob", "BackfillJobs",
           "CatalogError", "JobState", "check_object"]
