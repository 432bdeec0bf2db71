"""The PostgreSQL connector: decides what to run from the stored offset, slot and snapshot.mode.

Start-up steps (each logged under its name):

1. *check server*: wal_level must be `logical`;
2. *publication*: create or align it per `publication.autocreate.mode`;
3. *slot*: look the slot up; decide whether a snapshot is needed;
4. *snapshot*: (re)create the slot with an exported snapshot, and read every captured table
   inside that snapshot, so the stream starts exactly where the snapshot's data ends;
5. *stream*: from the snapshot's consistent point, or from the stored offset.

A slot that must exist but does not (dropped, or a stored offset the slot can no longer serve)
stops the connector with an error that says what to do; it never silently starts over.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import psycopg2

from headwater.config.connector_common import warn_unmatched
from headwater.connectors.postgres.catalog import (
    TableInfo,
    current_database,
    describe_tables,
    list_tables,
)
from headwater.connectors.postgres.config import PostgresConnectorConfig
from headwater.connectors.postgres.connection import connect, qualified, quote_ident
from headwater.connectors.postgres.incremental import PostgresChunkSource, PostgresIncrementalHook
from headwater.connectors.postgres.messages import MessageCapture
from headwater.connectors.postgres.pgoutput import format_lsn, parse_lsn
from headwater.connectors.postgres.slot_offset import (
    advance_slot,
    offset_behind_slot,
    slot_ahead_of_offset,
)
from headwater.connectors.postgres.snapshot import PostgresSnapshotSource
from headwater.connectors.postgres.streaming import PostgresStreamingSource, StreamingOptions
from headwater.connectors.postgres.tables import (
    IncomingColumn,
    TableCodec,
    build_codec,
    incoming_from_catalog,
)
from headwater.connectors.postgres.types import TypeModes
from headwater.engine.dispatcher import DispatchOptions
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.source import StartPlan
from headwater.model.collection import split_collection
from headwater.model.schema import TableId
from headwater.model.topic_naming import TopicNaming
from headwater.relational.connector import RelationalConnector, modes_from_config
from headwater.relational.snapshotter import snapshotter_for
from headwater.relational.streaming import ActionConnection

log = logging.getLogger("headwater.connectors.postgres")

# CREATE_REPLICATION_SLOT ... (FAILOVER): PostgreSQL 17+.
FAILOVER_MIN_SERVER_VERSION = 170000


class PostgresConnectorError(RuntimeError):
    """A condition the user must act on; the message says what to do."""


class PostgresConnector(RelationalConnector):
    DATABASE = "PostgreSQL"
    CONNECTION_ERRORS = (psycopg2.OperationalError, psycopg2.InterfaceError)

    def __init__(self, config: PostgresConnectorConfig, metrics: CaptureMetrics | None = None,
                 naming: TopicNaming | None = None):
        super().__init__(config, "postgresql", metrics, naming)
        self.config = config
        self.modes = modes_from_config(TypeModes, config)
        self._dsn = config.dsn_kwargs()
        self._conn: Any = None
        self._repl: Any = None
        self._catalog_conn: Any = None
        query = config.heartbeat_action_query
        self._heartbeat = ActionConnection(self._heartbeat_conn, query) if query else None
        self._streaming: PostgresStreamingSource | None = None
        self.database = ""

    # -- start-up --------------------------------------------------------------------------
    def _start(self, offset: dict[str, Any] | None) -> StartPlan:
        self._close_connections()
        cfg = self.config
        self._conn = connect(self._dsn)
        self._conn.autocommit = True
        cur = self._conn.cursor()
        self.database = current_database(cur)
        self._check_server(cur)
        existing = list_tables(cur)
        captured = [(oid, s, t) for oid, s, t in existing if cfg.table_filter(s, t)]
        warn_unmatched("table.include.list", cfg.table_include_list,
                       (f"{s}.{t}" for _, s, t in existing), log)
        self.metrics.monitored_tables = [f"{s}.{t}" for _, s, t in captured]
        cfg.guardrail.check(self.metrics.monitored_tables, log)
        log.info("captured tables: %s", ", ".join(f"{s}.{t}" for _, s, t in captured) or "none")
        self._check_topics(TableId(self.database, s, t) for _, s, t in captured)
        self._ensure_publication(cur, captured)
        self._started = True
        slot = self._wait_for_slot(cur)
        mode = cfg.snapshot_mode
        snapshotter = snapshotter_for(mode)
        completed = bool(offset and offset.get("snapshot_completed"))
        stored = offset.get("lsn") if offset is not None else None
        slot_ahead = (slot is not None and stored is not None and slot_ahead_of_offset(
            cfg.offset_mismatch_strategy, int(stored), slot["restart_lsn"]))
        need_snapshot = snapshotter.reads_data(
            completed,
            position_readable=slot is not None and not slot["lost"] and not slot_ahead)
        stream = snapshotter.streams
        if slot_ahead and not need_snapshot:
            assert slot is not None and stored is not None
            restart = format_lsn(slot["restart_lsn"])
            raise PostgresConnectorError(
                f"replication slot {cfg.slot_name!r} needs WAL from {restart} on, after the "
                f"stored offset {format_lsn(int(stored))}: the slot was re-created or moved, and "
                "the changes in between are lost to it (offset.mismatch.strategy="
                f"{cfg.offset_mismatch_strategy}). "
                "Re-snapshot with snapshot.mode=when_needed or always, or set "
                "offset.mismatch.strategy=trust_slot to go on from the slot's position"
            )
        if slot is not None and slot["lost"] and not need_snapshot:
            raise PostgresConnectorError(
                f"replication slot {cfg.slot_name!r} was invalidated by the server "
                f"(reason {slot['invalidation_reason']}: e.g. its WAL was removed, "
                "max_slot_wal_keep_size being exceeded, or it sat idle past PostgreSQL 18's "
                "idle_replication_slot_timeout): the changes since its "
                "confirmed position are gone. Re-snapshot with snapshot.mode=when_needed or "
                "always (the slot is then recreated)"
            )
        if not stream and not need_snapshot:
            log.info("snapshot.mode=%s and the snapshot is complete: nothing to do", mode)
            return StartPlan(None, None)

        self._repl = connect(self._dsn, replication=True, application_name="headwater-stream")
        if need_snapshot:
            if slot is not None:
                log.warning(
                    "slot step: dropping existing slot %s to take a snapshot consistent with "
                    "a fresh slot (snapshot.mode=%s, snapshot completed=%s)",
                    cfg.slot_name, mode, completed,
                )
                cur.execute("SELECT pg_drop_replication_slot(%s)", (cfg.slot_name,))
            cp, snapshot_name = self._create_slot(export=True)
            infos = describe_tables(cur, [oid for oid, _, _ in captured])
            tables = [
                (infos[oid], self._codec_for(infos[oid], incoming_from_catalog(infos[oid])))
                for oid, _, _ in captured
                if oid in infos
            ]
            snapshot = PostgresSnapshotSource(
                dsn=self._dsn,
                context=self._context,
                snapshot_name=snapshot_name,
                consistent_lsn=cp,
                tables=tables,
                fetch_size=cfg.snapshot_fetch_size,
                lock_timeout_ms=cfg.snapshot_lock_timeout_ms,
                metrics=self.metrics,
                max_threads=cfg.snapshot_max_threads,
                config=cfg,
                database=self.database,
            )
            return StartPlan(snapshot, self._streaming_source() if stream else None,
                             data_snapshot=True)

        if offset is not None and "lsn" not in offset:
            offset = None  # only an interrupted snapshot's snapshot_started: no position
        if slot is None:
            if offset is not None:
                raise PostgresConnectorError(
                    f"replication slot {cfg.slot_name!r} does not exist, but offsets at "
                    f"{offset.get('lsn')} say streaming was under way: changes since then are "
                    "lost to this slot. Re-snapshot with snapshot.mode=when_needed or always, or "
                    f"delete {cfg.offset_storage_file_filename} to start afresh"
                )
            cp, _ = self._create_slot(export=False)
            offset = {"lsn": cp, "snapshot_completed": False}
        elif offset is None:
            offset = {"lsn": slot["confirmed_flush_lsn"], "snapshot_completed": False}
        else:
            strategy = cfg.offset_mismatch_strategy
            confirmed = slot["confirmed_flush_lsn"]
            if cfg.lsn_flush_mode != "manual":  # Debezium: no slot seek in manual mode
                advance_slot(cur, cfg.slot_name, strategy, int(offset["lsn"]), confirmed)
            offset = offset_behind_slot(strategy, offset, confirmed)
        self._start_offset = offset
        return StartPlan(None, _OffsetStreaming(self._streaming_source(), offset))

    def _check_server(self, cur: Any) -> None:
        cur.execute("SHOW wal_level")
        level = cur.fetchone()[0]
        if level != "logical":
            raise PostgresConnectorError(
                f"server wal_level is {level!r}; logical decoding needs wal_level=logical "
                "(set it in postgresql.conf and restart the server)"
            )

    def _ensure_publication(self, cur: Any, captured: list[tuple[int, str, str]]) -> None:
        cfg = self.config
        name = cfg.publication_name
        cur.execute("SELECT puballtables, pubviaroot FROM pg_publication WHERE pubname = %s",
                    (name,))
        row = cur.fetchone()
        # publish.via.partition.root: Debezium's buildWithClause, on CREATE only.
        with_clause = " WITH (publish_via_partition_root = true)" if (
            cfg.publish_via_partition_root) else ""
        mode = cfg.publication_autocreate_mode
        published = [(s, t) for _, s, t in captured]
        signal_table = self._signal_table()
        if signal_table is not None and signal_table not in published:
            published.append(signal_table)  # signals and watermarks are read from the stream
        tables = ", ".join(qualified(s, t) for s, t in published)
        if row is None:
            if mode == "disabled":
                raise PostgresConnectorError(
                    f"publication {name!r} does not exist and publication.autocreate.mode is "
                    "disabled; create it (CREATE PUBLICATION ... FOR TABLE ...) or change the mode"
                )
            if _in_recovery(cur):
                raise PostgresConnectorError(
                    f"publication {name!r} does not exist and this server is a hot standby, "
                    "where it cannot be created: create it on the primary (CREATE PUBLICATION "
                    "... FOR TABLE ... or FOR ALL TABLES) and let the standby replay it")
            if mode == "all_tables":
                log.info("publication step: CREATE PUBLICATION %s FOR ALL TABLES%s", name,
                         with_clause)
                cur.execute(f"CREATE PUBLICATION {quote_ident(name)} FOR ALL TABLES{with_clause}")
            else:
                if not captured:
                    raise PostgresConnectorError(
                        "publication.autocreate.mode=filtered but no table matches the "
                        "include/exclude lists"
                    )
                log.info("publication step: CREATE PUBLICATION %s FOR TABLE %s%s", name, tables,
                         with_clause)
                cur.execute(
                    f"CREATE PUBLICATION {quote_ident(name)} FOR TABLE {tables}{with_clause}")
            return
        if bool(row[1]) != cfg.publish_via_partition_root:
            # Debezium leaves an existing publication's options alone; so do we, but say that
            # partitions' changes will not arrive the way the property asks.
            log.warning(
                "publication %s exists with publish_via_partition_root = %s, but "
                "publish.via.partition.root=%s: the publication decides (ALTER PUBLICATION %s "
                "SET (publish_via_partition_root = %s) to follow the property)",
                name, str(bool(row[1])).lower(), str(cfg.publish_via_partition_root).lower(),
                name, str(cfg.publish_via_partition_root).lower())
        if mode == "filtered" and not row[0] and captured:
            if _in_recovery(cur):  # a standby's publication is the primary's to change
                log.warning("publication step: %s is used as it is: this server is a hot "
                            "standby, where it cannot be altered (ALTER PUBLICATION %s SET "
                            "TABLE %s on the primary to follow the include lists)",
                            name, name, tables)
                return
            log.info("publication step: ALTER PUBLICATION %s SET TABLE %s", name, tables)
            cur.execute(f"ALTER PUBLICATION {quote_ident(name)} SET TABLE {tables}")

    def _signal_table(self) -> tuple[str, str] | None:
        name = self.config.signals.data_collection
        if name is None:
            return None
        parts = split_collection(name)
        return (parts[-2] if len(parts) > 1 else "public", parts[-1])

    def _wait_for_slot(self, cur: Any) -> dict[str, Any] | None:
        """The slot's state, once no other process holds it (slot.max.retries x delay).

        After a crash the server may still count the dead consumer's walsender as active for
        a moment; Debezium retries for the same reason.
        """
        cfg = self.config
        pid = None
        for attempt in range(cfg.slot_max_retries + 1):
            slot = self._slot_state(cur)
            if slot is None or not slot["active"]:
                return slot
            pid = slot["active_pid"]
            if attempt < cfg.slot_max_retries:
                log.info("slot step: slot %s is in use by pid %s; retry %d/%d in %d ms",
                         cfg.slot_name, slot["active_pid"], attempt + 1, cfg.slot_max_retries,
                         cfg.slot_retry_delay_ms)
                time.sleep(cfg.slot_retry_delay_ms / 1000.0)
        raise PostgresConnectorError(
            f"replication slot {cfg.slot_name!r} is in use by process {pid} "
            f"after {cfg.slot_max_retries} retries; stop the other consumer or use another "
            "slot.name"
        )

    def _slot_state(self, cur: Any) -> dict[str, Any] | None:
        cfg = self.config
        # PostgreSQL 17+ names why a slot was invalidated, including causes that leave
        # wal_status alone (18's idle_replication_slot_timeout: idle_timeout).
        version = int(getattr(self._conn, "server_version", 0) or 0)
        reason = "invalidation_reason" if version >= 170000 else "NULL"
        cur.execute(
            "SELECT plugin, database, active, active_pid, confirmed_flush_lsn::text, wal_status, "
            f"restart_lsn::text, {reason} "
            "FROM pg_replication_slots WHERE slot_name = %s",
            (cfg.slot_name,),
        )
        row = cur.fetchone()
        if row is None:
            return None
        plugin, database, active, pid, confirmed, wal_status, restart, invalidated = row
        if plugin != "pgoutput":
            raise PostgresConnectorError(
                f"replication slot {cfg.slot_name!r} uses plugin {plugin!r}, not pgoutput; "
                "choose another slot.name or drop that slot"
            )
        if database != self.database:
            raise PostgresConnectorError(
                f"replication slot {cfg.slot_name!r} belongs to database {database!r}, not "
                f"{self.database!r}; choose another slot.name"
            )
        return {
            "lost": wal_status == "lost" or invalidated is not None,
            "invalidation_reason": invalidated or ("wal_removed" if wal_status == "lost" else None),
            "active": bool(active),
            "active_pid": pid,
            "confirmed_flush_lsn": parse_lsn(confirmed) if confirmed else 0,
            "restart_lsn": parse_lsn(restart) if restart else 0,
        }

    def _create_slot(self, *, export: bool) -> tuple[int, str]:
        cur = self._repl.cursor()
        if self._failover_slot():
            # The option-list syntax (PostgreSQL 15+) is the only one FAILOVER has.
            opt = f"(SNAPSHOT '{'export' if export else 'nothing'}', FAILOVER true)"
        else:
            opt = "EXPORT_SNAPSHOT" if export else "NOEXPORT_SNAPSHOT"
        cur.execute(
            f"CREATE_REPLICATION_SLOT {quote_ident(self.config.slot_name)} LOGICAL pgoutput {opt}"
        )
        _, cp_text, snapshot_name, _ = cur.fetchone()
        cp = parse_lsn(cp_text)
        log.info("slot step: created slot %s at %s", self.config.slot_name, format_lsn(cp))
        return cp, snapshot_name or ""

    def _failover_slot(self) -> bool:
        """slot.failover on a PostgreSQL 17+ primary (Debezium's useFailOverSlot).  Elsewhere
        the slot is created without it, as Debezium does; we warn where it only logs at debug
        level, since the slot then does not survive a failover as asked."""
        if not self.config.slot_failover:
            return False
        version = int(getattr(self._repl, "server_version", 0) or 0)
        if version < FAILOVER_MIN_SERVER_VERSION:
            log.warning("slot.failover=true, but PostgreSQL %d has no failover slots (17+): "
                        "creating slot %s without failover", version // 10000,
                        self.config.slot_name)
            return False
        cur = self._conn.cursor()
        cur.execute("SELECT pg_is_in_recovery()")
        if cur.fetchone()[0]:
            log.warning("slot.failover=true, but the server is a standby, where failover "
                        "slots cannot be created: creating slot %s without failover",
                        self.config.slot_name)
            return False
        return True

    # -- schemas ---------------------------------------------------------------------------
    def _codec_for(self, info: TableInfo, incoming: tuple[IncomingColumn, ...]) -> TableCodec:
        return build_codec(
            self.database, info, incoming, self.modes, self.config.column_filter,
            key_override=self.config.key_columns(info.schema, info.name),
            column_mappers=self.config.column_mappers,
        )

    def _streaming_codec(
        self, oid: int, namespace: str, name: str, incoming: tuple[IncomingColumn, ...]
    ) -> TableCodec | None:
        if not self.config.table_filter(namespace, name):
            return None
        if self._catalog_conn is None:
            self._catalog_conn = connect(self._dsn, application_name="headwater-catalog")
            self._catalog_conn.autocommit = True
        info = describe_tables(self._catalog_conn.cursor(), [oid]).get(oid)
        if info is None:  # dropped since: describe from the Relation message alone
            info = TableInfo(oid, namespace, name, (), (), "d", ())
        log.info("schema step: relation %s.%s (%d columns)", namespace, name, len(incoming))
        return self._codec_for(info, incoming)

    def _streaming_source(self) -> PostgresStreamingSource:
        cfg = self.config
        self._streaming = PostgresStreamingSource(
            repl_conn=self._repl,
            context=self._context,
            slot_name=cfg.slot_name,
            publication_name=cfg.publication_name,
            codec_factory=self._streaming_codec,
            options=StreamingOptions(
                dispatch=DispatchOptions.from_config(cfg),
                status_interval_s=cfg.status_update_interval_ms / 1000.0,
                heartbeat_action=self._heartbeat,
                pgoutput_streaming=cfg.headwater_pgoutput_streaming,
                spill_dir=Path(cfg.headwater_topics_dir).parent / "spill",
                messages=MessageCapture(self.database, cfg.binary_handling_mode,
                                        cfg.message_filter()),
                confirm_flush=cfg.lsn_flush_mode != "manual",
            ),
            metrics=self.metrics,
            incremental=self._incremental_hook(),
        )
        return self._streaming

    def _incremental_hook(self) -> PostgresIncrementalHook | None:
        """Signals and incremental snapshots, when a signal channel is configured."""
        signals = self.config.signals
        if not signals.any_channel:
            return None
        source = PostgresChunkSource(
            dsn=self._dsn, database=self.database, context=self._context, signals=signals,
            codec_for=lambda info: self._codec_for(info, incoming_from_catalog(info)),
            key_override=self.config.key_columns, batch_size=self.config.max_batch_size,
            captured=self.config.table_filter,
        )
        return PostgresIncrementalHook(source, self._context, self.metrics)

    def _heartbeat_conn(self) -> Any:
        """heartbeat.action.query's connection: each action commits at once."""
        conn = connect(self._dsn, application_name="headwater-heartbeat")
        conn.autocommit = True
        return conn

    def _close_connections(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.close()
        for c in (self._repl, self._catalog_conn, self._conn):
            if c is not None:
                try:
                    c.close()
                except Exception as exc:
                    log.debug("close: %s", exc)
        self._repl = self._catalog_conn = self._conn = None
        self.metrics.connected = False

    def close(self) -> None:
        if self._streaming is not None:
            self._streaming.close()
        self._close_connections()
        if self.config.slot_drop_on_stop:
            self._drop_slot()

    def _drop_slot(self) -> None:
        try:
            conn = connect(self._dsn)
            conn.autocommit = True
            conn.cursor().execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                "WHERE slot_name = %s AND NOT active",
                (self.config.slot_name,),
            )
            conn.close()
            log.info("slot.drop.on.stop: dropped slot %s", self.config.slot_name)
        except Exception as exc:
            log.warning("slot.drop.on.stop: could not drop slot %s: %s", self.config.slot_name, exc)


class _OffsetStreaming:
    """Streaming with a start offset decided at start-up rather than by a snapshot."""

    def __init__(self, source: PostgresStreamingSource, offset: dict[str, Any]) -> None:
        self.source = source
        self.offset = offset

    def execute(self, ctx: Any, offset: dict[str, Any] | None) -> None:
        self.source.execute(ctx, offset if offset and "lsn" in offset else self.offset)

    def acknowledge(self, token: Any) -> None:
        self.source.acknowledge(token)


def _in_recovery(cur: Any) -> bool:
    """Whether the server is a hot standby (read-only: no publication can be made there)."""
    cur.execute("SELECT pg_is_in_recovery()")
    return bool(cur.fetchone()[0])
