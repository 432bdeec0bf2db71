"""The fault harness's per-source parts, behind one interface (`Source`, `SourceTrial`).

The trial itself (workload thread, capture and pipeline processes, the faults, the checks) is
the same for every source and lives in harness.py; what differs is here: how the server starts
and restarts, the table (or collection) and its random workload, the connector's properties,
how a topic record and a target row map to `(id, (v, n))`, how the replication connection is
cut, and what the source acknowledged (for the topic-damage check).

Every source holds one table `t`/collection `c` of rows `(id, v, n)`: the harness compares
`{id: (v, n)}` of the source with the topic replay and the Delta target.
"""

from __future__ import annotations

import contextlib
import json
import random
from pathlib import Path
from typing import Any

from headwater.testing.localmariadb import LocalMariaDB
from headwater.testing.localmongo import LocalMongo
from headwater.testing.localpg import LocalPostgres, wait_for

Row = tuple[int, tuple[Any, ...]]


class Ids:
    """The workload's keys: the initial rows 1..initial, then new ones from `first_new` on
    (a key change moves a row there too)."""

    def __init__(self, initial: int, first_new: int) -> None:
        self.initial = initial
        self.first_new = first_new
        self.last = first_new

    def new(self) -> int:
        self.last += 1
        return self.last

    def any(self, rng: random.Random) -> int:
        """A key that may exist, uniform over both ranges (the row at or after it is used)."""
        k = rng.randrange(self.initial + self.last - self.first_new)
        return k + 1 if k < self.initial else self.first_new + 1 + k - self.initial

# Every source's kinds; the trial dispatches on the kind (harness.py `_Trial`).
COMMON_FAULTS = (
    "capture-kill9-snapshot",
    "capture-kill9-stream",
    "capture-sigterm",
    "pipeline-kill9",
    "db-restart-fast",
    "db-restart-immediate",
)


def _lsn(text: str) -> int:
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


class SourceTrial:
    """One trial's database on a source: created by `Source.trial`, dropped by `cleanup`."""

    topic: str
    target_parts: tuple[str, str]  # under headwater.pipeline.delta.path

    def setup(self, rows: int) -> None:
        raise NotImplementedError

    def properties(self, prefix: str, trial_dir: Path) -> dict[str, Any]:
        raise NotImplementedError

    def source(self) -> dict[int, tuple[Any, ...]]:
        raise NotImplementedError

    def replay_row(self, key: Any, row: dict[str, Any]) -> Row:
        raise NotImplementedError

    def target_row(self, row: dict[str, Any]) -> Row:
        raise NotImplementedError

    # The workload (run by the harness's Writer thread).
    def connect(self) -> Any:
        raise NotImplementedError

    def transient(self, exc: BaseException) -> bool:
        """An error of a server going away (the writer reconnects), not a workload bug."""
        raise NotImplementedError

    def transaction(self, conn: Any, rng: random.Random, ids: Ids) -> None:
        raise NotImplementedError

    def close(self, conn: Any) -> None:
        with contextlib.suppress(Exception):
            conn.close()

    def cut_connection(self) -> int:
        """Cuts the capture's replication (walsender, binlog dump, change stream) connection
        from the server's side; returns how many were cut."""
        raise NotImplementedError

    def acknowledged_check(self, removed: dict[str, Any]) -> str | None:
        """After a record was removed from the topic (and the capture stopped): a problem if
        the source was NOT yet told the record was durable (then a repair and restart would
        bring it back, and the harness's claim that it cannot would be untested)."""
        return None

    def cleanup(self) -> None:
        raise NotImplementedError


class Source:
    """One server for a module of trials (restarted by some faults)."""

    name: str
    faults: tuple[str, ...]
    # The CI short form's kinds (the others run in the long form only).
    ci_faults: tuple[str, ...]
    validates: bool  # `headwater validate` reads this source
    initial_rows: int

    def start(self) -> None:
        raise NotImplementedError

    def stop(self, mode: str) -> None:
        """`fast`: a clean shutdown; `immediate`: without one (PostgreSQL's immediate mode,
        kill -9 of mariadbd or mongod)."""
        raise NotImplementedError

    def restart_after_stop(self) -> None:
        raise NotImplementedError

    def cleanup(self) -> None:
        raise NotImplementedError

    def trial(self, n: int) -> SourceTrial:
        raise NotImplementedError


class KillableServerSource(Source):
    """A server whose immediate stop is a kill -9 (MariaDB's and MongoDB's test servers):
    the same lifecycle for both, the server and trial types given by the subclass."""

    server_type: Any
    trial_type: Any

    def __init__(self) -> None:
        self.server = self.server_type()

    def start(self) -> None:
        self.server.start()

    def stop(self, mode: str) -> None:
        if mode == "immediate":
            self.server.kill()
        else:
            self.server.stop()

    def restart_after_stop(self) -> None:
        self.server.start()

    def cleanup(self) -> None:
        self.server.cleanup()

    def trial(self, n: int) -> SourceTrial:
        trial: SourceTrial = self.trial_type(self.server, n)
        return trial


# ---- PostgreSQL ------------------------------------------------------------------------------

class PostgresSource(Source):
    name = "postgres"
    faults: tuple[str, ...] = (*COMMON_FAULTS, "walsender-terminate", "topic-damage")
    ci_faults: tuple[str, ...] = faults
    validates = True
    initial_rows = 20_000

    def __init__(self) -> None:
        self.pg = LocalPostgres()

    def start(self) -> None:
        self.pg.start()

    def stop(self, mode: str) -> None:
        self.pg.stop(mode)

    def restart_after_stop(self) -> None:
        self.pg.start()

    def cleanup(self) -> None:
        self.pg.cleanup()

    def trial(self, n: int) -> SourceTrial:
        return PostgresTrial(self.pg, n)


class PostgresTrial(SourceTrial):
    def __init__(self, pg: LocalPostgres, n: int) -> None:
        import os

        self.pg = pg
        self.db = f"hw_fault_{os.getpid()}_{n}"
        self.slot = f"hw_fault_slot_{n}"
        self.target_parts = ("public", "t")
        self.pg.create_database(self.db)

    def sql(self, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
        conn = self.pg.connect(self.db)
        try:
            with conn.cursor() as cur:
                cur.execute(statement, params)
                return cur.fetchall() if cur.description else []
        finally:
            conn.close()

    def setup(self, rows: int) -> None:
        self.sql("CREATE TABLE t (id int PRIMARY KEY, v text, n int NOT NULL)")
        self.sql(f"INSERT INTO t SELECT g, 'init' || g, 0 FROM generate_series(1, {rows}) g")

    def properties(self, prefix: str, trial_dir: Path) -> dict[str, Any]:
        self.topic = f"{prefix}.public.t"
        return {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "database.hostname": "127.0.0.1",
            "database.port": str(self.pg.port),
            "database.user": self.pg.user,
            "database.password": "unused",
            "database.dbname": self.db,
            "plugin.name": "pgoutput",
            "slot.name": self.slot,
            "publication.name": f"pub_{self.slot}",
            "slot.retry.delay.ms": 300,
            "slot.max.retries": 60,
        }

    def source(self) -> dict[int, tuple[Any, ...]]:
        return {r[0]: (r[1], r[2]) for r in self.sql("SELECT id, v, n FROM t")}

    def replay_row(self, key: Any, row: dict[str, Any]) -> Row:
        return dict(key)["id"], (row["v"], row["n"])

    def target_row(self, row: dict[str, Any]) -> Row:
        return row["id"], (row["v"], row["n"])

    def connect(self) -> Any:
        return self.pg.connect(self.db, autocommit=False)

    def transient(self, exc: BaseException) -> bool:
        import psycopg2

        return isinstance(exc, psycopg2.OperationalError | psycopg2.InterfaceError)

    def transaction(self, conn: Any, rng: random.Random, ids: Ids) -> None:
        pick = "(SELECT id FROM t TABLESAMPLE SYSTEM (1) LIMIT 1)"
        with conn.cursor() as cur:
            for _ in range(rng.randint(1, 8)):
                r = rng.random()
                if r < 0.3:
                    new = ids.new()
                    cur.execute("INSERT INTO t VALUES (%s, %s, 0)", (new, f"new{new}"))
                elif r < 0.75:
                    cur.execute(f"UPDATE t SET n = n + 1, v = %s WHERE id = {pick}",
                                (f"u{rng.randrange(10**6)}",))
                elif r < 0.93:
                    cur.execute(f"DELETE FROM t WHERE id = {pick}")
                else:
                    cur.execute(f"UPDATE t SET id = %s WHERE id = {pick}", (ids.new(),))
        conn.commit()

    def cut_connection(self) -> int:
        return len(self.sql("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                            "WHERE slot_name = %s AND active_pid IS NOT NULL", (self.slot,)))

    def acknowledged_check(self, removed: dict[str, Any]) -> str | None:
        confirmed = self.sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                             "WHERE slot_name = %s", (self.slot,))[0][0]
        lsn = (removed["value"] or {}).get("payload", {}).get("source", {}).get("lsn")
        if lsn is not None and _lsn(confirmed) < int(lsn):
            return f"slot confirmed {confirmed}, not past the removed record (lsn {lsn})"
        return None

    def cleanup(self) -> None:
        with contextlib.suppress(Exception):
            wait_for(lambda: not self.sql(
                "SELECT 1 FROM pg_replication_slots WHERE slot_name = %s AND active",
                (self.slot,)), timeout=30, what="the slot released")
            self.sql("SELECT pg_drop_replication_slot(%s)", (self.slot,))
        with contextlib.suppress(Exception):
            conn = self.pg.connect()
            with conn.cursor() as cur:
                cur.execute(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')
            conn.close()


# ---- MariaDB ---------------------------------------------------------------------------------

class MariaDBSource(KillableServerSource):
    name = "mariadb"
    faults = (*COMMON_FAULTS, "binlog-kill", "topic-damage")
    ci_faults = faults
    validates = True
    initial_rows = 5_000
    server_type = LocalMariaDB


class MariaDBTrial(SourceTrial):
    def __init__(self, server: LocalMariaDB, n: int) -> None:
        import os

        self.server = server
        self.n = n
        self.db = f"hw_fault_{os.getpid()}_{n}"
        self.target_parts = (self.db, "t")
        self.x: str | None = None  # the DDL column now in the table
        self.next_x = 0
        self.ddl = 0  # DDL statements the workload ran
        server.create_database(self.db)

    def sql(self, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
        conn = self.server.connect(self.db)
        try:
            with conn.cursor() as cur:
                cur.execute(statement, params)
                return list(cur.fetchall()) if cur.description else []
        finally:
            conn.close()

    def setup(self, rows: int) -> None:
        self.sql("CREATE TABLE t (id int PRIMARY KEY, v varchar(64), n int NOT NULL)")
        # seq_1_to_N: MariaDB's Sequence engine
        self.sql(f"INSERT INTO t SELECT seq, CONCAT('init', seq), 0 FROM seq_1_to_{rows}")

    def properties(self, prefix: str, trial_dir: Path) -> dict[str, Any]:
        self.topic = f"{prefix}.{self.db}.t"
        return {
            "connector.class": "io.debezium.connector.mysql.MySqlConnector",
            "database.hostname": "127.0.0.1",
            "database.port": str(self.server.port),
            "database.user": self.server.user,
            "database.password": self.server.password,
            "database.server.id": str(6400 + self.n),
            "database.include.list": self.db,
            "schema.history.internal.file.filename": trial_dir / "history.jsonl",
            # reconnect soon after a cut binlog connection (Debezium's default waits 60 s)
            "connect.keep.alive.interval.ms": 300,
        }

    def source(self) -> dict[int, tuple[Any, ...]]:
        return {r[0]: (r[1], r[2]) for r in self.sql("SELECT id, v, n FROM t")}

    def replay_row(self, key: Any, row: dict[str, Any]) -> Row:
        return dict(key)["id"], (row["v"], row["n"])

    def target_row(self, row: dict[str, Any]) -> Row:
        return row["id"], (row["v"], row["n"])

    def connect(self) -> Any:
        conn = self.server.connect(self.db, autocommit=False)
        # Which DDL column is there now (an ALTER a restart cut may or may not have happened:
        # MariaDB's DDL is atomic, the catalog says which).
        with conn.cursor() as cur:
            cur.execute("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE "
                        "TABLE_SCHEMA = %s AND TABLE_NAME = 't' AND COLUMN_NAME LIKE 'x%%'",
                        (self.db,))
            row = cur.fetchone()
            self.x = row[0] if row else None
        conn.commit()
        return conn

    def transient(self, exc: BaseException) -> bool:
        import pymysql  # type: ignore[import-untyped]

        return isinstance(exc, pymysql.err.OperationalError | pymysql.err.InterfaceError)

    # One transaction in DDL_RATE is a DDL statement instead: a column `x<k> int` added (then
    # written by updates) or dropped, mid-workload, so the capture's schema history (kept in
    # schema.history.internal.file.filename, read back after every restart) and the
    # pipeline's schema evolution (a new column added to the target; a dropped one stays,
    # null in rows written afterwards: docs/pipeline.md) run under the faults.  Every ADD
    # takes a new name: a column dropped and added again under the same name comes back NULL
    # in the source with no row event, while the target kept the old values (no CDC can
    # see that; a re-snapshot is the cure).  The row checks compare (v, n); `headwater
    # validate` compares every source column, the current x<k> included.
    DDL_RATE = 0.005

    def transaction(self, conn: Any, rng: random.Random, ids: Ids) -> None:
        if rng.random() < self.DDL_RATE:
            with conn.cursor() as cur:  # (DDL commits implicitly)
                if self.x is not None:
                    cur.execute(f"ALTER TABLE t DROP COLUMN IF EXISTS {self.x}")
                    self.x = None
                else:
                    self.next_x += 1
                    cur.execute(f"ALTER TABLE t ADD COLUMN IF NOT EXISTS x{self.next_x} int")
                    self.x = f"x{self.next_x}"
            self.ddl += 1
            return
        # MariaDB refuses a subquery on the updated table: pick the row first.
        pick = "SELECT id FROM t WHERE id >= %s ORDER BY id LIMIT 1"
        with conn.cursor() as cur:
            for _ in range(rng.randint(1, 8)):
                r = rng.random()
                if r < 0.3:
                    new = ids.new()
                    cur.execute("INSERT INTO t (id, v, n) VALUES (%s, %s, 0)",
                                (new, f"new{new}"))
                    continue
                cur.execute(pick, (ids.any(rng),))
                row = cur.fetchone()
                if row is None:
                    continue
                if r < 0.75 and self.x is not None:
                    cur.execute(f"UPDATE t SET n = n + 1, v = %s, {self.x} = %s WHERE id = %s",
                                (f"u{rng.randrange(10**6)}", rng.randrange(1000), row[0]))
                elif r < 0.75:
                    cur.execute("UPDATE t SET n = n + 1, v = %s WHERE id = %s",
                                (f"u{rng.randrange(10**6)}", row[0]))
                elif r < 0.93:
                    cur.execute("DELETE FROM t WHERE id = %s", (row[0],))
                else:
                    cur.execute("UPDATE t SET id = %s WHERE id = %s", (ids.new(), row[0]))
        conn.commit()

    def cut_connection(self) -> int:
        threads = self.sql("SELECT ID FROM information_schema.PROCESSLIST "
                           "WHERE COMMAND LIKE 'Binlog Dump%%'")
        for (thread,) in threads:
            with contextlib.suppress(Exception):
                self.sql(f"KILL {int(thread)}")
        return len(threads)

    def cleanup(self) -> None:
        with contextlib.suppress(Exception):
            self.sql(f"DROP DATABASE IF EXISTS `{self.db}`")


# ---- MongoDB ---------------------------------------------------------------------------------

class MongoSource(KillableServerSource):
    name = "mongodb"
    faults = (*COMMON_FAULTS, "change-stream-kill", "topic-damage")
    ci_faults = faults
    validates = True
    initial_rows = 5_000
    server_type = LocalMongo


class MongoTrial(SourceTrial):
    def __init__(self, server: LocalMongo, n: int) -> None:
        import os

        self.server = server
        self.db = f"hw_fault_{os.getpid()}_{n}"
        self.target_parts = (self.db, "c")
        self.client = server.client(serverSelectionTimeoutMS=3000)

    def setup(self, rows: int) -> None:
        coll = self.client[self.db].c
        for start in range(1, rows + 1, 5000):
            coll.insert_many([{"_id": i, "v": f"init{i}", "n": 0}
                              for i in range(start, min(rows, start + 4999) + 1)])

    def properties(self, prefix: str, trial_dir: Path) -> dict[str, Any]:
        self.topic = f"{prefix}.{self.db}.c"
        return {
            "connector.class": "io.debezium.connector.mongodb.MongoDbConnector",
            "mongodb.connection.string": self.server.connection_string,
            "database.include.list": self.db,
            "collection.include.list": f"{self.db}\\.c",
            "capture.mode": "change_streams_update_full",
            "cursor.max.await.time.ms": 100,
        }

    def source(self) -> dict[int, tuple[Any, ...]]:
        return {d["_id"]: (d["v"], d["n"]) for d in self.client[self.db].c.find()}

    def replay_row(self, key: Any, row: Any) -> Row:
        # `after` is null in an update whose full-document lookup found the document deleted
        # (change_streams_update_full, as Debezium): its delete follows in the topic, but a
        # replay taken before the capture read it holds the null; it differs from the source.
        doc = json.loads(row) if isinstance(row, str) else row
        if doc is None:
            return json.loads(dict(key)["id"]), (None, None)
        return json.loads(dict(key)["id"]), (doc["v"], doc["n"])

    def target_row(self, row: dict[str, Any]) -> Row:
        return row["_id"], (row["v"], row["n"])

    def connect(self) -> Any:
        return self.client

    def transient(self, exc: BaseException) -> bool:
        import pymongo.errors

        return isinstance(exc, pymongo.errors.PyMongoError)

    def close(self, conn: Any) -> None:
        pass  # the trial's client, closed by cleanup

    def transaction(self, conn: Any, rng: random.Random, ids: Ids) -> None:
        coll = conn[self.db].c

        def one(session: Any) -> None:
            r = rng.random()
            if r < 0.3:
                new = ids.new()
                coll.insert_one({"_id": new, "v": f"new{new}", "n": 0}, session=session)
                return
            doc = coll.find_one({"_id": {"$gte": ids.any(rng)}}, {"_id": 1},
                                session=session)
            if doc is None:
                return
            if r < 0.8:
                coll.update_one({"_id": doc["_id"]}, {"$inc": {"n": 1}, "$set": {
                    "v": f"u{rng.randrange(10**6)}"}}, session=session)
            else:
                coll.delete_one({"_id": doc["_id"]}, session=session)

        if rng.random() < 0.3:  # a multi-document transaction (no automatic retries)
            with conn.start_session() as session:
                session.start_transaction()
                try:
                    for _ in range(rng.randint(2, 5)):
                        one(session)
                except BaseException:
                    with contextlib.suppress(Exception):
                        session.abort_transaction()
                    raise
                session.commit_transaction()
        else:
            one(None)

    def cut_connection(self) -> int:
        """Kills the change stream's cursor (`killCursors`): the capture's next getMore fails,
        and the stream must resume after its last token without losing or repeating events."""
        admin = self.client.admin
        cursors = list(admin.aggregate([
            {"$currentOp": {"allUsers": True, "idleCursors": True}},
            {"$match": {"cursor.originatingCommand.pipeline.0.$changeStream": {
                "$exists": True}}},
        ]))
        cut = 0
        for op in cursors:
            db_name, _, coll = str(op["ns"]).partition(".")
            with contextlib.suppress(Exception):
                self.client[db_name].command("killCursors", coll,
                                             cursors=[op["cursor"]["cursorId"]])
                cut += 1
        return cut

    def cleanup(self) -> None:
        with contextlib.suppress(Exception):
            self.client.drop_database(self.db)
        self.client.close()


# (the trial classes come after their sources)
MariaDBSource.trial_type = MariaDBTrial
MongoSource.trial_type = MongoTrial

# ---- SQL Server and Db2: EMULATIONS on PostgreSQL ---------------------------------------------

class EmulatedSource(PostgresSource):
    """SQL Server's or Db2's change tables EMULATED on PostgreSQL
    (headwater.testing.sqlserver_emulation / db2_emulation, reached through the connectors'
    `headwater.sqlserver.driver` / `headwater.db2.driver`), not a live server: the connector's
    snapshot, change-table polling, offsets and restarts are its own, the server under it is
    PostgreSQL (its restarts are PostgreSQL's; there is no replication connection to cut).
    `headwater validate` does not read these connectors' sources; the replay and the target
    are compared with the emulated table.  The server's life cycle is PostgresSource's."""

    faults = COMMON_FAULTS
    # 10-40 s a trial (test_faults_sqlserver.py, test_faults_db2.py)
    ci_faults: tuple[str, ...] = COMMON_FAULTS
    validates = False
    initial_rows = 5_000
    trial_type: Any

    def __init__(self) -> None:
        # Durable commits, as SQL Server's and Db2's are before anyone sees them: with the
        # test servers' synchronous_commit=off a commit is visible before its WAL is written,
        # the connector's poll reads it, and an immediate shutdown then loses it from the
        # source (seed 301016: 6 "phantom" rows, a transaction the server had forgotten).
        # (Logical decoding never sees such a commit: it reads flushed WAL only.)
        self.pg = LocalPostgres(settings={"synchronous_commit": "on"})

    def trial(self, n: int) -> SourceTrial:
        trial: SourceTrial = self.trial_type(self.pg, n)
        return trial


class EmulatedTrial(SourceTrial):
    """One emulated database: the table `t (id, v, n)` written directly in PostgreSQL (the
    emulation's triggers fill its change tables), in the names the emulated server gives it
    (`table` and `id`, `v`, `n` quoted as PostgreSQL holds them)."""

    table: str
    names: tuple[str, str, str]

    def __init__(self, pg: LocalPostgres, n: int) -> None:
        import os

        self.pg = pg
        # (short: the Db2 emulation keeps the database name in a CHAR(18) column)
        self.db = f"hwfe{os.getpid() % 10000}_{n}"
        pg.create_database(self.db)
        raw = pg.connect(self.db)
        try:
            self.install(raw)
        finally:
            raw.close()

    def install(self, raw: Any) -> None:
        raise NotImplementedError

    def create(self) -> None:
        """The table, through the emulated server's SQL."""
        raise NotImplementedError

    def enable(self) -> None:
        """Change capture on for the table (after its initial rows)."""
        raise NotImplementedError

    def sql(self, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
        conn = self.pg.connect(self.db)
        try:
            with conn.cursor() as cur:
                cur.execute(statement, params)
                return cur.fetchall() if cur.description else []
        finally:
            conn.close()

    def setup(self, rows: int) -> None:
        self.create()
        i, v, n = self.names
        self.sql(f"INSERT INTO {self.table} ({i}, {v}, {n}) SELECT g, 'init' || g, 0 "
                 f"FROM generate_series(1, {rows}) g")
        self.enable()

    def source(self) -> dict[int, tuple[Any, ...]]:
        i, v, n = self.names
        return {r[0]: (r[1], r[2]) for r in self.sql(f"SELECT {i}, {v}, {n} FROM {self.table}")}

    def _field(self, row: dict[str, Any], name: str) -> Any:
        return row[name.strip('"')]

    def replay_row(self, key: Any, row: dict[str, Any]) -> Row:
        i, v, n = self.names
        return dict(key)[i.strip('"')], (self._field(row, v), self._field(row, n))

    def target_row(self, row: dict[str, Any]) -> Row:
        i, v, n = self.names
        return self._field(row, i), (self._field(row, v), self._field(row, n))

    def connect(self) -> Any:
        return self.pg.connect(self.db, autocommit=False)

    def transient(self, exc: BaseException) -> bool:
        import psycopg2

        return isinstance(exc, psycopg2.OperationalError | psycopg2.InterfaceError)

    def transaction(self, conn: Any, rng: random.Random, ids: Ids) -> None:
        """Inserts, updates and deletes (no key changes: the change-table scenario's
        workload, tests/changetables/kill9.py, has none either)."""
        i, v, n = self.names
        pick = f"(SELECT {i} FROM {self.table} TABLESAMPLE SYSTEM (1) LIMIT 1)"
        with conn.cursor() as cur:
            for _ in range(rng.randint(1, 8)):
                r = rng.random()
                if r < 0.3:
                    new = ids.new()
                    cur.execute(f"INSERT INTO {self.table} ({i}, {v}, {n}) VALUES (%s, %s, 0)",
                                (new, f"new{new}"))
                elif r < 0.8:
                    cur.execute(f"UPDATE {self.table} SET {n} = {n} + 1, {v} = %s "
                                f"WHERE {i} = {pick}", (f"u{rng.randrange(10**6)}",))
                else:
                    cur.execute(f"DELETE FROM {self.table} WHERE {i} = {pick}")
        conn.commit()

    def cut_connection(self) -> int:
        raise NotImplementedError("an emulated source has no replication connection")

    def cleanup(self) -> None:
        with contextlib.suppress(Exception):
            conn = self.pg.connect()
            with conn.cursor() as cur:
                cur.execute(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')
            conn.close()


class SqlServerEmulatedTrial(EmulatedTrial):
    table = "dbo.t"
    names = ("id", "v", "n")
    target_parts = ("dbo", "t")

    def install(self, raw: Any) -> None:
        from headwater.testing.sqlserver_emulation import dbapi

        dbapi.install(raw)

    def _tsql(self, statement: str) -> None:
        from tests.sqlserver.conftest import tsql

        tsql({"server": "127.0.0.1", "port": self.pg.port, "user": self.pg.user,
              "database": self.db}, statement)

    def create(self) -> None:
        self._tsql("CREATE TABLE dbo.t (id INT NOT NULL PRIMARY KEY, v NVARCHAR(40) NULL, "
                   "n INT NOT NULL)")

    def enable(self) -> None:
        self.sql("SELECT sys.sp_cdc_enable_table(%s, %s, %s)", ("dbo", "t", None))

    def properties(self, prefix: str, trial_dir: Path) -> dict[str, Any]:
        self.topic = f"{prefix}.dbo.t"
        return {
            "connector.class": "sqlserver",
            "database.hostname": "127.0.0.1",
            "database.port": str(self.pg.port),
            "database.user": self.pg.user,
            "database.names": self.db,
            "database.encrypt": "false",
            "headwater.sqlserver.driver": "headwater.testing.sqlserver_emulation.dbapi",
            "schema.history.internal.file.filename": trial_dir / "history.jsonl",
        }


class Db2EmulatedTrial(EmulatedTrial):
    table = '"DB2INST1"."T"'
    names = ('"ID"', '"V"', '"N"')
    target_parts = ("DB2INST1", "T")

    def install(self, raw: Any) -> None:
        from headwater.testing.db2_emulation import dbapi

        dbapi.install(raw)

    def _db2(self, *statements: str) -> None:
        from tests.db2.conftest import sql

        sql({"database": self.db, "host": "127.0.0.1", "port": self.pg.port,
             "user": self.pg.user}, *statements)

    def create(self) -> None:
        self._db2("CREATE SCHEMA db2inst1",
                  "CREATE TABLE db2inst1.t (id INTEGER NOT NULL PRIMARY KEY, v VARCHAR(40), "
                  "n INTEGER NOT NULL)")

    def enable(self) -> None:
        self._db2("SELECT ASNCDC.ADDTABLE('DB2INST1', 'T')")

    def properties(self, prefix: str, trial_dir: Path) -> dict[str, Any]:
        self.topic = f"{prefix}.DB2INST1.T"
        return {
            "connector.class": "db2",
            "database.hostname": "127.0.0.1",
            "database.port": str(self.pg.port),
            "database.user": self.pg.user,
            "database.dbname": self.db,
            "headwater.db2.driver": "headwater.testing.db2_emulation.dbapi",
            "schema.history.internal.file.filename": trial_dir / "history.jsonl",
        }


class SqlServerEmulatedSource(EmulatedSource):
    name = "sqlserver-emulation"
    trial_type = SqlServerEmulatedTrial


class Db2EmulatedSource(EmulatedSource):
    name = "db2-emulation"
    trial_type = Db2EmulatedTrial


SOURCES: dict[str, type[Source]] = {
    "postgres": PostgresSource,
    "mariadb": MariaDBSource,
    "mongodb": MongoSource,
    # EMULATIONS on PostgreSQL, not live servers (EmulatedSource)
    "sqlserver-emulation": SqlServerEmulatedSource,
    "db2-emulation": Db2EmulatedSource,
}
