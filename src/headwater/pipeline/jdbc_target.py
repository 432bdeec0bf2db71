"""Materializes change topics into tables of a JDBC database (PostgreSQL, MariaDB), exactly once.

Per batch and table, in named steps that the logs echo:

1. *stage*: the rows to apply (SCD1: the net change per key; SCD2: the rebuilt versions of the
   keys the batch touches; changelog: every event) go to a staging table
   `_hw_stg_<hash of pipeline and table>_<batch>`, created with Headwater's own DDL and written
   by Spark's JDBC writer (Debian's driver jars, see `jdbc_jars`);
2. *merge*: one transaction on a direct connection (psycopg2, PyMySQL) locks the table's row of
   `_headwater_progress (pipeline_id, table_name, batch_id)` and stops there if the batch is
   already applied; otherwise it creates or widens the target table (new columns are added),
   applies the staged rows, updates the remembered deletes and truncates in `_headwater_state`,
   records the batch in the progress row, drops the staging table and commits.

Semantics are the Delta target's (`delta_target`): every row carries `__hw_sequence`, the
sequence of the event that last wrote it, compared as text, so an older event never overwrites
a newer one; a delete or truncate is remembered with its sequence so an older upsert arriving
later does not resurrect the row; columns whose value the source did not send (unchanged TOAST)
keep the target's value.  SCD2 rebuilds each touched key's history with `scd2.rebuild`.

Exactly once: the progress row commits in the same transaction as the changes, so a crash at
any point leaves either nothing of the batch or all of it, and Spark's replay of the batch after
a restart finds it applied and skips it.  MariaDB commits DDL implicitly, so there the CREATE /
ALTER of the target runs just before the transaction (idempotent: IF NOT EXISTS; a crash after
it leaves a new, empty column that the clean run would have added too) and the staging table
is dropped just after it (a leftover is replaced by the replay, or dropped when it is skipped).

The target table is `<schema>.<source table>` (PostgreSQL: `headwater.pipeline.jdbc.schema` or
`public`; MariaDB: that or the URL's database): two source schemas with a table of the same
name need two pipelines with different target schemas.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from headwater.pipeline.columnar import CHANGELOG_META, changelog_table
from headwater.pipeline.config import PipelineConfig
from headwater.pipeline.decode import ChangeEvent, TableChanges
from headwater.pipeline.delta_target import EVOLUTION_MODES, SchemaEvolutionError
from headwater.pipeline.jdbc_dialect import (
    DIALECTS,
    END,
    FLAG,
    KEY,
    KEY_HASH,
    OP,
    PROGRESS,
    SEQ,
    START,
    STATE,
    Dialect,
    parse_jdbc_url,
    repr_column,
    repr_type,
    repr_value,
)
from headwater.pipeline.net import KeylessTableError, NetChange
from headwater.pipeline.scd2 import Point, Version, rebuild

log = logging.getLogger("headwater.pipeline.jdbc")

JARS = (("libpostgresql-jdbc-java", "postgresql.jar"),
        ("libmariadb-java", "mariadb-java-client.jar"))
_CHUNK = 500  # keys per lookup query

Columns = list[tuple[str, pa.DataType]]
# (column, its new SQL type, rows of key and source values) -> the column's new values
Recompute = Callable[[str, str, list[tuple[Any, ...]]], list[Any]]


class JdbcDriverMissingError(RuntimeError):
    pass


@functools.cache
def _dpkg_jar(package: str, name: str) -> str | None:
    if not shutil.which("dpkg"):
        return None
    out = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, check=False)
    jars = [line for line in out.stdout.splitlines()
            if line.startswith("/usr/share/java/") and line.endswith(".jar")]
    exact = [j for j in jars if j.endswith("/" + name)]
    found = exact or sorted(jars, key=len)
    return found[0] if found else None


def jdbc_jars() -> list[str]:
    """The installed JDBC driver jars of Debian's `libpostgresql-jdbc-java` and
    `libmariadb-java` (for `spark.jars`); empty when neither is installed."""
    out = []
    for package, name in JARS:
        path = Path("/usr/share/java") / name
        found = str(path) if path.exists() else _dpkg_jar(package, name)
        if found:
            out.append(found)
    return out


def require_driver(spark: Any, dialect: Dialect) -> None:
    """Raises JdbcDriverMissingError unless the session's JVM can load the dialect's driver."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:  # Spark Connect: the server's class path decides
        return
    try:
        jvm.org.apache.spark.util.Utils.classForName(dialect.driver_class, True, False)
    except Exception as exc:
        if "ClassNotFoundException" not in str(exc):
            raise
        jars = jdbc_jars()
        how = (f"spark.jars={','.join(jars)}" if jars else
               "spark.jars pointing at the jars of Debian's libpostgresql-jdbc-java and "
               "libmariadb-java (apt-get install them first)")
        raise JdbcDriverMissingError(
            f"the Spark session cannot load the JDBC driver {dialect.driver_class} (Debian "
            f"package {dialect.debian_package}): start Spark with {how}, e.g. "
            "SparkSession.builder.config('spark.jars', ','.join("
            "headwater.pipeline.jdbc_target.jdbc_jars())); the jars must be given when the "
            "JVM starts, a later session in the same process does not load them"
        ) from None


def _key_json(key: tuple[Any, ...]) -> str:
    return orjson.dumps(list(key), default=str).decode()


def _key_hash(key_json: str) -> str:
    return hashlib.sha1(key_json.encode()).hexdigest()


class JdbcTarget:
    """The `Target` of `headwater.pipeline.target=jdbc` (see the module docstring)."""

    def __init__(self, cfg: PipelineConfig, spark: Any = None) -> None:
        if not cfg.jdbc_url:
            raise ValueError("headwater.pipeline.jdbc.url is required for the JDBC target")
        self.location = parse_jdbc_url(cfg.jdbc_url)
        self.dialect: Dialect = DIALECTS[self.location.dialect]
        self.user = cfg.jdbc_user or self.location.params.get("user")
        self._password = (cfg.jdbc_password.reveal() if cfg.jdbc_password is not None
                          else self.location.params.get("password"))
        if self.location.dialect == "postgresql":
            schema = cfg.jdbc_schema or self.location.params.get("currentSchema") or "public"
        else:
            schema = cfg.jdbc_schema or self.location.database or ""
            if not schema:
                raise ValueError(f"{cfg.jdbc_url}: name the database in the URL (jdbc:mysql:"
                                 "//host:3306/db) or set headwater.pipeline.jdbc.schema")
        self.schema = schema
        self.pipeline_id = cfg.pipeline_id or f"headwater-{cfg.topic_prefix}"
        if cfg.schema_evolution not in EVOLUTION_MODES:
            raise ValueError(f"schema evolution mode {cfg.schema_evolution!r} is not one of "
                             f"{', '.join(EVOLUTION_MODES)}")
        self.schema_evolution = cfg.schema_evolution
        self.spark = spark
        if spark is not None:
            require_driver(spark, self.dialect)
        self._sources: dict[str, str | None] = {}
        with self._connection() as conn, conn.cursor() as cur:
            for statement in self.dialect.bookkeeping_ddl(self.schema):
                cur.execute(statement)
            conn.commit()

    # -- plumbing -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _connection(self) -> Iterator[Any]:
        conn = self.dialect.connect(self.location, self.user, self._password)
        try:
            yield conn
        finally:
            with contextlib.suppress(Exception):
                conn.rollback()
            conn.close()

    def _fault(self, point: str) -> None:
        """A seam for crash tests: called at "staged" (staging written, nothing merged),
        "merged" (inside the transaction, before the commit) and "committed"."""

    def _t(self, name: str) -> str:
        return self.dialect.table(self.schema, name)

    def table_name(self, changes: TableChanges) -> str:
        """The target table of a topic (unqualified; it lives in `self.schema`): a flow's
        target (its last path component), else the source table's name."""
        if changes.target is not None:
            return str(changes.target).strip("/").rsplit("/", 1)[-1]
        name = changes.table_name or changes.topic
        seen = self._sources.setdefault(name, changes.schema_name)
        if seen != changes.schema_name:
            raise ValueError(
                f"tables {seen}.{name} and {changes.schema_name}.{name} would both go to "
                f"{self.schema}.{name}: materialize them with two pipelines whose "
                "headwater.pipeline.jdbc.schema differ")
        return name

    def _qualified(self, name: str) -> str:
        return f"{self.schema}.{name}"

    def staging_name(self, name: str, batch_id: int) -> str:
        digest = hashlib.sha1(f"{self.pipeline_id}|{self._qualified(name)}".encode()).hexdigest()
        return f"_hw_stg_{digest[:12]}_{batch_id}"

    def _applied(self, conn: Any, name: str, batch_id: int, lock: bool = False) -> bool:
        sql = (self.dialect.lock_progress if lock else self.dialect.read_progress)(
            self._t(PROGRESS))
        with conn.cursor() as cur:
            cur.execute(sql, (self.pipeline_id, self._qualified(name)))
            row = cur.fetchone()
        return row is not None and int(row[0]) >= batch_id

    def _skip(self, conn: Any, name: str, batch_id: int) -> bool:
        """True when the batch is applied already (then a staging table left by a crash
        after the commit, which MariaDB drops only then, is dropped)."""
        if not self._applied(conn, name, batch_id):
            return False
        log.info("batch %d already applied to %s.%s: skipped", batch_id, self.schema, name)
        conn.commit()
        if not self.dialect.transactional_ddl:
            self._drop_staging(conn, self.staging_name(name, batch_id))
        return True

    def _columns(self, cur: Any, name: str) -> dict[str, str]:
        """The target table's columns and their declared types (empty: no table yet)."""
        cur.execute(self.dialect.columns_query, (self.schema, name))
        return {str(r[0]): str(r[1]) for r in cur.fetchall()}

    def _evolve(self, conn: Any, name: str, columns: Columns,
                keys: Sequence[str]) -> Columns:
        """The batch's columns the target takes, per `headwater.pipeline.schema.evolution`
        (as the Delta target: new columns are added, left out or refused; a changed type is
        always refused; columns dropped at the source stay, NULL in rows written later)."""
        with conn.cursor() as cur:
            existing = self._columns(cur, name)
        conn.commit()
        if not existing:
            return columns
        where = f"{self.schema}.{name}"
        for n, sql, _ in self._defs(columns, keys):
            old = existing.get(n)
            if old is not None and not self.dialect.same_type(old, sql):
                raise SchemaEvolutionError(
                    f"{where}: column {n!r} changed type from {old} to {sql} at the source; "
                    "migrate the target table (or re-create it and re-run the pipeline from a "
                    "new checkpoint)")
        new = [n for n, _ in columns if n not in existing]
        if not new or self.schema_evolution == "evolve":
            return columns
        if self.schema_evolution == "fail":
            raise SchemaEvolutionError(
                f"{where}: the source added column(s) {', '.join(new)} and "
                "headwater.pipeline.schema.evolution=fail")
        return [(n, t) for n, t in columns if n in existing]

    def _defs(self, columns: Columns, keys: Sequence[str],
              staging: bool = False) -> list[tuple[str, str, bool]]:
        d = self.dialect
        key_len = d.key_lengths([t for n, t in columns if n in keys])
        out = []
        for n, t in columns:
            length = key_len if n in keys else None
            sql = d.stage_type(repr_type(t), length) if staging else d.column_type(t, length)
            out.append((n, sql, n in keys and not staging))
        return out

    def _ensure_table(self, cur: Any, name: str, defs: list[tuple[str, str, bool]],
                      primary_key: Sequence[str]) -> None:
        existing = set(self._columns(cur, name))
        if not existing:
            cur.execute(self.dialect.create_table(self._t(name), defs, primary_key))
            log.info("created %s.%s", self.schema, name)
            return
        for n, sql, _ in defs:
            if n not in existing:
                cur.execute(self.dialect.add_column(self._t(name), n, sql))
                log.info("added column %s to %s.%s", n, self.schema, name)

    def _stage(self, conn: Any, staging: str, table: pa.Table,
               defs: list[tuple[str, str, bool]]) -> None:
        """Step "stage": a fresh staging table, filled by Spark's JDBC writer."""
        d = self.dialect
        with conn.cursor() as cur:
            cur.execute(d.drop_table(self._t(staging)))
            cur.execute(d.create_table(self._t(staging), defs, ()))
        conn.commit()
        if table.num_rows == 0:
            return
        spark = self.spark
        if spark is None:
            from pyspark.sql import SparkSession

            spark = self.spark = SparkSession.getActiveSession()
            if spark is None:
                raise RuntimeError("the JDBC target stages with Spark: no active SparkSession")
            require_driver(spark, d)
        staged = pa.Table.from_arrays([d.stage_array(c) for c in table.columns],
                                      names=table.column_names)
        props = {"driver": d.driver_class, "batchsize": "5000", **d.spark_options}
        if self.user:
            props["user"] = self.user
        if self._password:
            props["password"] = self._password
        # "append" to the table created above: with "overwrite" Spark may drop and recreate
        # it with its own type mapping (collations, timestamp types) instead of ours.
        started = time.monotonic()
        spark.createDataFrame(staged).write.jdbc(
            self.location.spark_url, self._t(staging), mode="append", properties=props)
        log.debug("staged %d rows in %s in %.2fs", table.num_rows, staging,
                  time.monotonic() - started)

    def _drop_staging(self, conn: Any, staging: str) -> None:
        with conn.cursor() as cur:
            cur.execute(self.dialect.drop_table(self._t(staging)))
        conn.commit()

    def _begin(self, conn: Any, name: str, batch_id: int, staging: str | None,
               defs: list[tuple[str, str, bool]], primary_key: Sequence[str]) -> bool:
        """Step "merge", its start: locks the progress row; False when the batch is applied
        (by a run that got there first: then the staging table is dropped)."""
        if self._applied(conn, name, batch_id, lock=True):
            log.info("batch %d already applied to %s.%s: skipped", batch_id, self.schema, name)
            conn.commit()
            if staging is not None:
                self._drop_staging(conn, staging)
            return False
        if self.dialect.transactional_ddl:
            with conn.cursor() as cur:
                self._ensure_table(cur, name, defs, primary_key)
        return True

    def _finish(self, conn: Any, name: str, batch_id: int, staging: str | None) -> None:
        """Step "merge", its end: progress row, staging dropped, commit."""
        d = self.dialect
        with conn.cursor() as cur:
            cur.execute(d.upsert_progress(self._t(PROGRESS)),
                        (self.pipeline_id, self._qualified(name), batch_id))
            if staging is not None and d.transactional_ddl:
                cur.execute(d.drop_table(self._t(staging)))
        self._fault("merged")
        conn.commit()
        self._fault("committed")
        if staging is not None and not d.transactional_ddl:
            self._drop_staging(conn, staging)

    def _prepare(self, conn: Any, name: str, defs: list[tuple[str, str, bool]],
                 primary_key: Sequence[str]) -> None:
        """MariaDB: the target's DDL, before the transaction (DDL would commit it)."""
        if not self.dialect.transactional_ddl:
            with conn.cursor() as cur:
                self._ensure_table(cur, name, defs, primary_key)
            conn.commit()
        else:
            conn.commit()  # ends the read-only transaction of the progress check

    def _truncate_floor(self, cur: Any, name: str) -> str | None:
        cur.execute(f"SELECT {self.dialect.q(SEQ)} FROM {self._t(STATE)} WHERE table_name = %s "
                    "AND kind = 'truncate' AND key_hash = '' AND slot = ''",
                    (self._qualified(name),))
        row = cur.fetchone()
        return None if row is None else str(row[0])

    def _save_state_rows(self, cur: Any, rows: Sequence[tuple[str, str, str, str | None, str]],
                         name: str) -> None:
        """(kind, key_hash, slot, key_json, sequence) rows into the state table."""
        for i in range(0, len(rows), _CHUNK):
            chunk = rows[i:i + _CHUNK]
            one = "SELECT %s AS t, %s AS k, %s AS h, %s AS sl, %s AS j, %s AS q"
            select = " UNION ALL ".join([one] * len(chunk))
            params = [p for r in chunk for p in (self._qualified(name), *r)]
            cur.execute(self.dialect.upsert_state(
                self._t(STATE), f"SELECT * FROM ({select}) AS v"), params)

    # -- SCD type 1 ----------------------------------------------------------------------------
    def apply_scd1(
        self, changes: TableChanges, net: list[NetChange], truncate: str | None, batch_id: int
    ) -> None:
        name = self.table_name(changes)
        d = self.dialect
        keys = changes.key_columns
        with self._connection() as conn:
            if self._skip(conn, name, batch_id):
                return
            columns = self._evolve(conn, name, [(c.name, c.type.arrow)
                                                for c in changes.column_list], keys)
            keyspec = [(k, t) for k, t in columns if k in keys]
            types = dict(columns)
            toast = sorted({c for n in net for c in n.unavailable if c in types})
            flags = {c: f"{FLAG}{i}" for i, c in enumerate(toast)}
            defs = [*self._defs(columns, keys), (SEQ, d.seq_type, True)]
            self._prepare(conn, name, defs, keys)
            staging = self.staging_name(name, batch_id)
            table = self._scd1_table(net, columns, keys, toast)
            stage_defs = [*self._defs(columns, keys, staging=True), (SEQ, d.seq_type, False),
                          (OP, d.short_text, False), (KEY, d.column_type(pa.string()), False),
                          (KEY_HASH, d.short_text, False),
                          *((flags[c], d.column_type(pa.bool_()), False) for c in toast)]
            self._stage(conn, staging, table, stage_defs)
            self._fault("staged")
            if not self._begin(conn, name, batch_id, staging, defs, keys):
                return
            target, stg, state = self._t(name), self._t(staging), self._t(STATE)
            with conn.cursor() as cur:
                floor = self._truncate_floor(cur, name)
                if truncate is not None:
                    floor = max(floor or "", truncate)
                    cur.execute(d.delete_below(target), (truncate,))
                if floor is not None:
                    cur.execute(d.drop_staged_below(stg), (floor,))
                cur.execute(d.drop_staged_deleted(stg, state), (self._qualified(name),))
                if toast:
                    cur.execute(d.fill_unavailable(stg, target, keyspec,
                                                   [(c, flags[c], types[c]) for c in toast]))
                cur.execute(d.upsert_newer(target, stg, columns, keys))
                upserted = cur.rowcount
                cur.execute(d.delete_older(target, stg, keyspec))
                deleted = cur.rowcount
                cur.execute(d.upsert_state(
                    state, f"SELECT %s, 'delete', s.{d.q(KEY_HASH)}, '', s.{d.q(KEY)}, "
                           f"s.{d.q(SEQ)} FROM {stg} AS s WHERE s.{d.q(OP)} = 'd'"),
                    (self._qualified(name),))
                if truncate is not None:
                    self._save_state_rows(cur, [("truncate", "", "", None, truncate)], name)
            log.debug("batch %d: %s.%s: %d upserted, %d deleted", batch_id, self.schema, name,
                      upserted, deleted)
            self._finish(conn, name, batch_id, staging)

    @staticmethod
    def _scd1_table(net: list[NetChange], columns: Columns, keys: tuple[str, ...],
                    toast: list[str]) -> pa.Table:
        data: dict[str, list[Any]] = {n: [] for n, _ in columns}
        seqs, ops, key_json, key_hash = [], [], [], []
        flags: dict[str, list[bool]] = {c: [] for c in toast}
        nested = [(n, t) for n, t in columns if repr_type(t) != t]
        for n in net:
            row = n.row
            if row is None:  # delete: only the key is known
                for c, _ in columns:
                    data[c].append(None)
                for k, v in zip(keys, n.key, strict=True):
                    data[k][-1] = v
            else:
                for c, _ in columns:
                    data[c].append(row.get(c))
                for c, t in nested:
                    data[c][-1] = repr_value(data[c][-1], t)
            seqs.append(n.sequence)
            ops.append("d" if n.delete else "u")
            kj = _key_json(n.key)
            key_json.append(kj)
            key_hash.append(_key_hash(kj))
            for c in toast:
                flags[c].append(c in n.unavailable)
        arrays = [pa.array(data[n], repr_type(t)) for n, t in columns]
        names = [n for n, _ in columns]
        for extra, values in ((SEQ, seqs), (OP, ops), (KEY, key_json), (KEY_HASH, key_hash)):
            arrays.append(pa.array(values, pa.string()))
            names.append(extra)
        for i, c in enumerate(toast):
            arrays.append(pa.array(flags[c], pa.bool_()))
            names.append(f"{FLAG}{i}")
        return pa.Table.from_arrays(arrays, names=names)

    # -- SCD type 2 ----------------------------------------------------------------------------
    def apply_scd2(
        self, changes: TableChanges, events: list[ChangeEvent], truncate: str | None,
        batch_id: int, tracked: frozenset[str] | None = None,
    ) -> None:
        name = self.table_name(changes)
        keys = changes.key_columns
        if not keys and any(e.op != "t" and e.key is None for e in events):
            raise KeylessTableError(
                f"table {changes.schema_name}.{changes.table_name} has no key: SCD2 needs one "
                "(set message.key.columns on the connector, or use the changelog mode)")
        with self._connection() as conn:
            if self._skip(conn, name, batch_id):
                return
            columns = self._evolve(conn, name, [(c.name, c.type.arrow)
                                                for c in changes.column_list], keys)
            tracked = tracked if tracked is not None else frozenset(n for n, _ in columns)
            points = self._points(events, columns)
            self._prepare(conn, name, *self._versions_table(columns, keys))
            with conn.cursor() as cur:
                floor = self._truncate_floor(cur, name)
            if truncate is not None:
                floor = max(floor or "", truncate)
            rebuilt: list[dict[str, Any]] = []
            if points:
                existing = self._history(conn, name, columns, keys, list(points))
                remembered = self._remembered(conn, name, list(points), "scd2_delete")
                for key, pts in points.items():
                    all_points = [*(Point(s, True, None) for s in remembered.get(key, ())),
                                  *pts]
                    for v in rebuild(existing.get(key, []), all_points, tracked, floor):
                        rebuilt.append({**v.row, **dict(zip(keys, key, strict=True)),
                                        START: v.start, END: v.end})
            conn.commit()
            deletes = [(e.key, e.sequence) for e in events if e.op == "d" and e.key is not None]
            self.write_versions(conn, name, batch_id, columns, keys, rebuilt if points else None,
                                deletes, truncate)

    def apply_versions(self, changes: TableChanges, rebuilt: list[dict[str, Any]],
                       deletes: Sequence[tuple[tuple[Any, ...], str]], batch_id: int) -> None:
        """SCD2 for versions rebuilt by the caller (the document path, `documents.jdbc`):
        the same write as `apply_scd2`'s (`write_versions`)."""
        name = self.table_name(changes)
        with self._connection() as conn:
            if self._skip(conn, name, batch_id):
                return
            keys = changes.key_columns
            columns = self._evolve(conn, name, [(c.name, c.type.arrow)
                                                for c in changes.column_list], keys)
            self._prepare(conn, name, *self._versions_table(columns, keys))
            self.write_versions(conn, name, batch_id, columns, keys, rebuilt, deletes)

    def _versions_table(self, columns: Columns, keys: Sequence[str]
                        ) -> tuple[list[tuple[str, str, bool]], list[str]]:
        """An SCD2 table's column definitions and primary key."""
        d = self.dialect
        return ([*self._defs(columns, keys), (START, d.seq_type, True),
                 (END, d.seq_type, False)], [*keys, START])

    def write_versions(self, conn: Any, name: str, batch_id: int, columns: Columns,
                       keys: Sequence[str], rebuilt: list[dict[str, Any]] | None,
                       deletes: Sequence[tuple[tuple[Any, ...], str]],
                       truncate: str | None = None) -> None:
        """SCD2's write: the rebuilt versions of the keys a batch touches (`rebuilt`: rows of
        `columns` plus `__START_AT`/`__END_AT`; None: no key touched) replace those keys'
        stored versions, the batch's deletes are remembered, the truncate closes the open
        versions; steps "stage" and "merge" (see the module docstring), the table's DDL
        done by the caller (`_prepare`, `_versions_table`)."""
        d = self.dialect
        defs, pk = self._versions_table(columns, keys)
        staging: str | None = None
        if rebuilt is not None:
            schema = pa.schema([pa.field(n, repr_type(t)) for n, t in columns]
                               + [pa.field(START, pa.string()), pa.field(END, pa.string())])
            staging = self.staging_name(name, batch_id)
            self._stage(conn, staging, pa.Table.from_pylist(rebuilt, schema=schema), [
                *self._defs(columns, keys, staging=True), (START, d.seq_type, False),
                (END, d.seq_type, False)])
            self._fault("staged")
        if not self._begin(conn, name, batch_id, staging, defs, pk):
            return
        target = self._t(name)
        keyspec = [(k, t) for k, t in columns if k in keys]
        with conn.cursor() as cur:
            if truncate is not None:
                cur.execute(d.close_open_versions(target), (truncate, truncate))
            if staging is not None:
                stg = self._t(staging)
                cur.execute(d.upsert_versions(target, stg, columns, keys))
                cur.execute(d.delete_stale_versions(target, stg, keyspec))
            rows: list[tuple[str, str, str, str | None, str]] = []
            for key, seq in deletes:
                kj = _key_json(key)
                rows.append(("scd2_delete", _key_hash(kj), seq, kj, seq))
            if truncate is not None:
                rows.append(("truncate", "", "", None, truncate))
            self._save_state_rows(cur, rows, name)
        self._finish(conn, name, batch_id, staging)

    @staticmethod
    def _points(events: list[ChangeEvent], columns: Columns
                ) -> dict[tuple[Any, ...], list[Point]]:
        """Each key's events as history points, rows in the form the target stores."""
        nested = [(n, t) for n, t in columns if repr_type(t) != t]
        points: dict[tuple[Any, ...], list[Point]] = {}
        for e in events:
            if e.op == "t" or e.key is None:
                continue
            row = e.row
            if row is not None and nested:
                row = {**row, **{n: repr_value(row.get(n), t) for n, t in nested}}
            points.setdefault(e.key, []).append(
                Point(e.sequence, e.op == "d", row, e.unavailable))
        return points

    def _history(self, conn: Any, name: str, columns: Columns, keys: tuple[str, ...],
                 wanted: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], list[Version]]:
        """The stored versions of the wanted keys (columns the target has)."""
        d = self.dialect
        with conn.cursor() as cur:
            present = set(self._columns(cur, name))
        if not present:
            return {}
        cols = [(n, t) for n, t in columns if n in present]
        types = dict(cols)
        select = ", ".join([d.q(n) for n, _ in cols] + [d.q(START), d.q(END)])
        key_types = [types[k] for k in keys]
        out: dict[tuple[Any, ...], list[Version]] = {}
        for i in range(0, len(wanted), _CHUNK):
            chunk = wanted[i:i + _CHUNK]
            if len(keys) == 1:
                where = f"{d.q(keys[0])} IN ({', '.join(['%s'] * len(chunk))})"
            else:
                one = "(" + ", ".join(["%s"] * len(keys)) + ")"
                where = (f"({', '.join(d.q(k) for k in keys)}) IN "
                         f"({', '.join([one] * len(chunk))})")
            params = [d.param(v, t) for key in chunk for v, t in zip(key, key_types,
                                                                         strict=True)]
            with conn.cursor() as cur:
                cur.execute(f"SELECT {select} FROM {self._t(name)} WHERE {where}", params)
                fetched = cur.fetchall()
            for r in fetched:
                row = {n: d.from_db(v, t) for (n, t), v in zip(cols, r, strict=False)}
                key = tuple(row[k] for k in keys)
                end = r[len(cols) + 1]
                out.setdefault(key, []).append(
                    Version(str(r[len(cols)]), None if end is None else str(end), row))
        return out

    def _remembered(self, conn: Any, name: str, wanted: list[tuple[Any, ...]], kind: str
                    ) -> dict[tuple[Any, ...], list[str]]:
        """The remembered deletes (`kind`: "delete" of SCD1, "scd2_delete") of the keys."""
        by_hash = {_key_hash(_key_json(k)): k for k in wanted}
        hashes = list(by_hash)
        out: dict[tuple[Any, ...], list[str]] = {}
        for i in range(0, len(hashes), _CHUNK):
            chunk = hashes[i:i + _CHUNK]
            with conn.cursor() as cur:
                cur.execute(
                    f"SELECT key_hash, {self.dialect.q(SEQ)} FROM {self._t(STATE)} "
                    "WHERE table_name = %s AND kind = %s AND key_hash IN ("
                    + ", ".join(["%s"] * len(chunk)) + ")",
                    [self._qualified(name), kind, *chunk])
                for h, seq in cur.fetchall():
                    out.setdefault(by_hash[h], []).append(str(seq))
        return out

    # -- what the document path (`documents.jdbc`) reads and changes ----------------------------
    def applied(self, changes: TableChanges, batch_id: int) -> bool:
        """Whether the batch is applied to the table already."""
        with self._connection() as conn:
            return self._applied(conn, self.table_name(changes), batch_id)

    def remembered(self, changes: TableChanges, kind: str, keys: list[tuple[Any, ...]]
                   ) -> dict[tuple[Any, ...], list[str]]:
        """The remembered deletes (`kind` "delete" or "scd2_delete") of `keys`."""
        with self._connection() as conn:
            return self._remembered(conn, self.table_name(changes), keys, kind)

    def rows_where(self, changes: TableChanges, select: Sequence[str], column: str,
                   values: Sequence[Any]) -> list[tuple[Any, ...]]:
        """The `select` columns of the table's rows whose text column `column` is one of
        `values` (none: no table)."""
        name = self.table_name(changes)
        d = self.dialect
        out: list[tuple[Any, ...]] = []
        with self._connection() as conn:
            with conn.cursor() as cur:
                if not values or not self._columns(cur, name):
                    return []
            for i in range(0, len(values), _CHUNK):
                chunk = list(values[i:i + _CHUNK])
                with conn.cursor() as cur:
                    cur.execute(f"SELECT {', '.join(d.q(c) for c in select)} FROM {self._t(name)}"
                                f" WHERE {d.q(column)} IN ({', '.join(['%s'] * len(chunk))})",
                                chunk)
                    out += [tuple(r) for r in cur.fetchall()]
        return out

    def retype(self, changes: TableChanges, types: dict[str, str], key: Sequence[str],
               source: Sequence[str], compute: Recompute) -> None:
        """Changes the declared types of columns (`types`: column -> SQL type) and recomputes
        their values from the `source` columns (`compute(column, sql type, rows of key and
        source values)` -> the values).  Crash-safe: the retypes are first recorded as pending
        in `_headwater_state` (kind "retype"), since MariaDB's ALTER commits implicitly, and
        each one's pending row goes in the transaction that writes its values;
        `finish_retypes` completes whatever a crash left."""
        name = self.table_name(changes)
        with self._connection() as conn:
            with conn.cursor() as cur:
                self._save_state_rows(cur, [("retype", "", c, sql, "")
                                            for c, sql in types.items()], name)
            conn.commit()
        self.finish_retypes(changes, key, source, compute)

    def finish_retypes(self, changes: TableChanges, key: Sequence[str], source: Sequence[str],
                       compute: Recompute) -> None:
        """The pending retypes of the table (see `retype`), each in one transaction where the
        database allows (PostgreSQL; MariaDB: redone from its pending row after a crash)."""
        name = self.table_name(changes)
        d = self.dialect
        table, state = self._t(name), self._t(STATE)
        with self._connection() as conn:
            with conn.cursor() as cur:
                cur.execute(f"SELECT slot, key_json FROM {state} WHERE table_name = %s AND "
                            "kind = 'retype' AND key_hash = ''", (self._qualified(name),))
                pending = [(str(c), str(sql)) for c, sql in cur.fetchall()]
            conn.commit()
            for column, sql in pending:
                with conn.cursor() as cur:
                    for statement in d.retype_column(table, column, sql):
                        cur.execute(statement)
                    self._fault("retyped")
                    cur.execute(f"SELECT {', '.join(d.q(c) for c in (*key, *source))} "
                                f"FROM {table}")
                    rows = [tuple(r) for r in cur.fetchall()]
                    arrow = d.arrow_type(sql) or pa.string()
                    new = compute(column, sql, rows)
                    self._update_by_key(cur, table, column, sql, key, {
                        r[:len(key)]: d.param(v, arrow) for v, r in zip(new, rows, strict=True)})
                    cur.execute(f"DELETE FROM {state} WHERE table_name = %s AND kind = "
                                "'retype' AND key_hash = '' AND slot = %s",
                                (self._qualified(name), column))
                conn.commit()
                log.warning("%s.%s: column %s is now %s (%d rows recomputed)", self.schema,
                            name, column, sql, len(rows))

    def _update_by_key(self, cur: Any, table: str, column: str, sql: str, key: Sequence[str],
                       values: dict[tuple[Any, ...], Any]) -> None:
        """Sets `column` to each key's value: through a temporary table of the keys (their
        declared types copied from the table) and one joined UPDATE, so a changelog, whose
        rows have no index, is read once, not once per row.  (MariaDB commits at the ALTERs of
        the temporary table: before any change of this transaction.)"""
        d = self.dialect
        tmp = d.temp_table(self.schema, "_hw_retype")
        keys = ", ".join(d.q(k) for k in key)
        cur.execute(d.drop_temp.format(tmp))
        cur.execute(f"CREATE TEMPORARY TABLE {tmp} AS SELECT {keys} FROM {table} WHERE 1 = 0")
        cur.execute(f"ALTER TABLE {tmp} ADD COLUMN v {sql}")
        cur.execute(f"ALTER TABLE {tmp} ADD PRIMARY KEY ({keys})")
        items = list(values.items())
        one = "(" + ", ".join(["%s"] * (len(key) + 1)) + ")"
        for i in range(0, len(items), _CHUNK):
            chunk = items[i:i + _CHUNK]
            cur.execute(f"INSERT INTO {tmp} VALUES {', '.join([one] * len(chunk))}",
                        [p for k, v in chunk for p in (*k, v)])
        cur.execute(d.update_from(table, tmp, column, key))
        cur.execute(d.drop_temp.format(tmp))

    # -- what a batch without types (Datastream's JSON events) reads of the table ----------
    def column_types(self, changes: TableChanges) -> dict[str, pa.DataType]:
        """The table's column types (empty: no table yet) as the Arrow types the target
        writes them from (`Dialect.arrow_type`), which JSON columns keep where their values
        fit, as `DeltaTarget.column_types`."""
        name = self.table_name(changes)
        with self._connection() as conn, conn.cursor() as cur:
            declared = self._columns(cur, name)
        found = {n: self.dialect.arrow_type(sql) for n, sql in declared.items()}
        return {n: t for n, t in found.items() if t is not None}

    def column_values(self, changes: TableChanges, name: str) -> list[Any]:
        """Every value of the table's column `name` (none: no table, or no such column),
        e.g. the event ids a changelog holds already."""
        table = self.table_name(changes)
        with self._connection() as conn, conn.cursor() as cur:
            if name not in self._columns(cur, table):
                return []
            cur.execute(f"SELECT {self.dialect.q(name)} FROM {self._t(table)}")
            generic = pa.null()
            return [self.dialect.from_db(r[0], generic) for r in cur.fetchall()]

    # -- changelog -----------------------------------------------------------------------------
    def append_changelog(self, changes: TableChanges, batch_id: int) -> None:
        self.append_changelog_table(changes, changelog_table(changes), batch_id)

    def append_changelog_table(self, changes: TableChanges, table: pa.Table,
                               batch_id: int) -> None:
        """Appends a batch's changelog rows (`columnar.changelog_table`'s layout; Datastream's
        adds its `__hw_uuid`, a column of the table like the others)."""
        name = self.table_name(changes)
        d = self.dialect
        with self._connection() as conn:
            if self._skip(conn, name, batch_id):
                return
            data_cols = self._evolve(conn, name, [(c.name, c.type.arrow)
                                                  for c in changes.column_list], ())
            source = {c.name for c in changes.column_list}
            extra = [(f.name, f.type) for f in table.schema
                     if f.name not in source and f.name not in CHANGELOG_META.names]
            columns: Columns = [*((f.name, f.type) for f in CHANGELOG_META), *data_cols, *extra]
            defs = [(n, d.seq_type if n == SEQ else d.column_type(t), False)
                    for n, t in columns]
            self._prepare(conn, name, defs, ())
            staging = self.staging_name(name, batch_id)
            rows = pa.Table.from_arrays([repr_column(table.column(n), t) for n, t in columns],
                                        names=[n for n, _ in columns])
            self._stage(conn, staging, rows, self._defs(columns, (), staging=True))
            self._fault("staged")
            if not self._begin(conn, name, batch_id, staging, defs, ()):
                return
            with conn.cursor() as cur:
                cur.execute(d.insert_all(self._t(name), self._t(staging), columns))
            self._finish(conn, name, batch_id, staging)

    def changelog_since(self, changes: TableChanges, since: str, keys: Sequence[str]
                        ) -> pa.Table | None:
        """The changelog's rows from source position `since` on (`changelog_once`)."""
        name = self.table_name(changes)
        d = self.dialect
        with self._connection() as conn, conn.cursor() as cur:
            if not self._columns(cur, name):
                return None
            cur.execute(f"SELECT {', '.join(d.q(c) for c in (SEQ, '__op', *keys))} "
                        f"FROM {self._t(name)} WHERE {d.q(SEQ)} >= %s", (since,))
            rows = cur.fetchall()
        generic = pa.null()
        columns = list(zip(*rows, strict=True)) if rows else [()] * (2 + len(keys))
        return pa.table({SEQ: pa.array([str(v) for v in columns[0]], pa.string()),
                         "__op": pa.array([str(v) for v in columns[1]], pa.string()),
                         **{k: pa.array([d.from_db(v, generic) for v in columns[2 + i]])
                            for i, k in enumerate(keys)}})

    # -- reading -------------------------------------------------------------------------------
    def read_rows(self, table: str, bookkeeping: bool = False) -> list[dict[str, Any]]:
        """A target table's rows (without the `__hw_` columns unless `bookkeeping`): bytes as
        bytes, zoned timestamps in UTC, MariaDB booleans as 0/1."""
        with self._connection() as conn, conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {self._t(table)}")
            names = [c[0] for c in cur.description]
            rows = cur.fetchall()
        generic = pa.null()
        return [
            {n: self.dialect.from_db(v, generic) for n, v in zip(names, r, strict=True)
             if bookkeeping or not n.startswith("__hw_")}
            for r in rows
        ]
