"""The connector's view of the source schema at the binlog position being read.

Row events carry only values, so every one is decoded with the table definition that was in
force at its position.  This object owns that definition (a `MySqlSchema` kept in step by DDL),
the persisted schema history it is recovered from, the codecs built from it, and the schema
change events DDL produces.

History entries carry the binlog position of their DDL.  A restart recovers the schema by
replaying the entries *before* the restart position (and the snapshot's entries, which sit at
the snapshot position itself); entries at or after it are re-read from the binlog.  An entry is
written once: a DDL re-read after a restart is not recorded twice.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from headwater.connectors.mysql.binlog.events import TableMap
from headwater.connectors.mysql.binlog_schema import (
    TableMetadataError,
    table_from_map,
    table_map_mismatch,
)
from headwater.connectors.mysql.columns import MySqlTable
from headwater.connectors.mysql.config import MySqlConnectorConfig
from headwater.connectors.mysql.ddl import DdlParseError, SchemaChange
from headwater.connectors.mysql.ddl_text import is_single_statement, shorten, statement_text
from headwater.connectors.mysql.history_store import open_history
from headwater.connectors.mysql.position import (
    MySqlPosition,
    MySqlSourceBlock,
    binlog_order,
)
from headwater.connectors.mysql.schema_catalog import MySqlSchema
from headwater.connectors.mysql.table_changes import table_changes
from headwater.connectors.mysql.tables import MySqlTableCodec, configured_codec
from headwater.connectors.mysql.types import MySqlTypeModes
from headwater.model.record import SchemaChangeEvent, SnapshotMarker, SourceContext
from headwater.relational.connector import modes_from_config
from headwater.relational.table_changes import schema_change_key_schema, schema_change_value_schema

log = logging.getLogger("headwater.connectors.mysql")

class SchemaHistoryError(RuntimeError):
    """DDL that cannot be applied (unparseable and not configured to be skipped)."""


class UndecodableRowsError(RuntimeError):
    """Rows of a captured table that neither the history nor the binlog metadata can decode.

    Raised instead of dropping them: the position is not acknowledged, so once the cause is
    fixed (binlog_row_metadata=FULL for new binlogs, a rebuilt history) nothing is lost.
    """


class InconsistentSchemaError(RuntimeError):
    """A row event for a captured table the schema does not know."""


class SchemaState:
    def __init__(self, cfg: MySqlConnectorConfig, context: SourceContext) -> None:
        self.cfg = cfg
        self.context = context
        self.modes = modes_from_config(MySqlTypeModes, cfg)
        self.schema = MySqlSchema()
        self.history = open_history(cfg, context.server_name)
        self._codecs: dict[tuple[str, str], MySqlTableCodec | None] = {}
        self._source_block = MySqlSourceBlock(context.kind)
        # Debezium names them after the connector (`mysql`, `mariadb`), as the source block.
        self.key_schema = schema_change_key_schema(context.kind)
        self.value_schema = schema_change_value_schema(context.kind, self._source_block.schema)
        self._last_recorded: tuple[int, int] | None = None
        self.changes_applied = 0
        self.last_changes: list[SchemaChange] = []  # of the latest `apply`
        # Tables built from TABLE_MAP metadata (binlog_schema.py), by TABLE_MAP signature.
        self._derived: dict[bytes, MySqlTableCodec] = {}
        # Statements skipped as unparseable: (where, database, statement), the latest last.
        self.skipped: list[tuple[str, str | None, str]] = []
        # The server's binlog_row_metadata as checked at start (None: unknown / no variable).
        self.row_metadata: str | None = None

    # -- codecs ---------------------------------------------------------------------------------

    def captured(self, database: str, table: str) -> bool:
        return self.cfg.table_filter(database, table)

    def codec(self, database: str, table: str) -> MySqlTableCodec | None:
        """The codec of a captured table, None for a table not captured or unknown."""
        key = (database, table)
        try:
            return self._codecs[key]
        except KeyError:
            pass
        codec: MySqlTableCodec | None = None
        if self.captured(database, table):
            definition = self.schema.table(database, table)
            if definition is not None:
                codec = self._build(definition)
        self._codecs[key] = codec
        return codec

    def _build(self, table: MySqlTable) -> MySqlTableCodec:
        return configured_codec(table, self.modes, self.cfg)

    # -- history --------------------------------------------------------------------------------

    def recover(self, offset: dict[str, Any]) -> int:
        """Rebuilds the schema as it was at `offset` from the persisted history."""
        restart = binlog_order(str(offset["file"]), int(offset["pos"]))

        def include(position: dict[str, Any]) -> bool:
            if position.get("snapshot"):
                return True
            return binlog_order(str(position["file"]), int(position["pos"])) < restart

        self.schema = MySqlSchema()
        self._codecs.clear()
        count = self.history.recover(self.schema, include)
        last = self.history.last_position()
        self._last_recorded = (
            binlog_order(str(last["file"]), int(last["pos"]))
            if last is not None and not last.get("snapshot") else None
        )
        log.info("schema history: recovered %d entries up to %s:%s", count,
                 offset["file"], offset["pos"])
        return count

    def reset(self) -> None:
        """A new snapshot: the history starts over."""
        self.history.clear()
        self.schema = MySqlSchema()
        self._codecs.clear()
        self._last_recorded = None

    def apply(
        self,
        sql: str,
        database: str | None,
        position: MySqlPosition,
        ts_ms: int,
        snapshot: SnapshotMarker = SnapshotMarker.FALSE,
        ansi_quotes: bool = False,
    ) -> list[SchemaChangeEvent]:
        """Applies DDL at `position`, records it, and returns the schema change events.
        `ansi_quotes`: the statement ran under sql_mode ANSI_QUOTES (its QUERY event says)."""
        self.last_changes = []
        try:
            changes = self.schema.apply(sql, database, ansi_quotes)
        except DdlParseError as exc:
            self._unparseable(exc, sql, database, position, snapshot)
            return []
        self.last_changes = changes
        if not changes:
            return []
        for change in changes:
            self._codecs.pop((change.database, change.table or ""), None)
            if change.previous is not None:
                self._codecs.pop((change.previous.database, change.previous.name), None)
            if change.kind == "DROP_DATABASE":
                for key in [k for k in self._codecs if k[0] == change.database]:
                    del self._codecs[key]
        self.changes_applied += len(changes)
        kept = [c for c in changes if self._should_store(c)]
        # Debezium's statement text (ddl_text.py), the same in the history and the topic.
        text = statement_text(sql) if is_single_statement(sql) else None
        if kept:
            self._record(text or statement_text(sql), database, kept, position, ts_ms,
                         snapshot, ansi_quotes)
        if not self.cfg.include_schema_changes:
            return []
        return self._events(kept, position, ts_ms, snapshot, text)

    def _unparseable(self, exc: DdlParseError, sql: str, database: str | None,
                     position: MySqlPosition, snapshot: SnapshotMarker) -> None:
        """Skips the statement (skip.unparseable.ddl) or raises an error naming it, its
        database and its binlog position, which is where a user starts looking."""
        where = f"{position.file}:{position.pos}"
        if snapshot is not SnapshotMarker.FALSE:
            where += " (snapshot)"
        statement = shorten(statement_text(sql))
        reason = getattr(exc, "reason", None) or str(exc)
        if self.cfg.schema_history_internal_skip_unparseable_ddl:
            log.warning(
                "skipping unparseable DDL at binlog position %s (database %s): %s; "
                "statement: %s. Rows of the tables it creates or changes are decoded from "
                "the binlog's table metadata", where, database, reason, statement)
            self.skipped.append((where, database, statement))
            del self.skipped[:-16]
            return
        raise SchemaHistoryError(
            f"cannot parse DDL at binlog position {where} (database {database}): {reason}; "
            f"statement: {statement}. Fix the statement's support or set "
            "schema.history.internal.skip.unparseable.ddl=true to skip it (rows of the tables "
            "it creates or changes are then decoded from the binlog's table metadata, which "
            "needs binlog_row_metadata=FULL)"
        ) from exc

    # -- tables the history cannot decode ------------------------------------------------------

    def table_map_codec(self, body: TableMap, file: str, pos: int) -> MySqlTableCodec | None:
        """The codec that decodes the rows a TABLE_MAP (read at `file`:`pos`) announces; None:
        the table is not captured, or its rows are skipped.

        Rows of a captured table the history cannot decode (unknown, or a TABLE_MAP that
        disagrees with it): with skip.unparseable.ddl the history is known to be incomplete, so
        the binlog's own table metadata decodes them (or capture fails; rows are never
        dropped); otherwise inconsistent.schema.handling.mode decides, as in Debezium."""
        db, table = body.database, body.table
        if not self.captured(db, table):
            return None
        codec = self.codec(db, table)
        if codec is None:
            reason = "the schema history does not know it"
        else:
            mismatch = table_map_mismatch(body, codec.table)
            if mismatch is None:
                return codec
            reason = f"its schema history definition is out of date ({mismatch})"
        where = f"{file}:{pos}"
        if self.cfg.schema_history_internal_skip_unparseable_ddl:
            return self.derived_codec(body, reason, where)
        mode = self.cfg.inconsistent_schema_handling_mode
        message = f"row event for table {db}.{table} at {where}: {reason}"
        if mode == "fail":
            raise InconsistentSchemaError(
                message + "; the history may be incomplete: run with snapshot.mode=recovery"
                " to rebuild it, or set inconsistent.schema.handling.mode=warn to skip")
        if mode == "warn":
            log.warning("%s: skipped", message)
        return None

    def derived_codec(self, table_map: TableMap, reason: str, where: str) -> MySqlTableCodec:
        """The codec of the table a TABLE_MAP describes (binlog_schema.py), for rows whose
        history table is unknown or stale: built and announced once per table definition.

        Not recorded in the schema history: a derived table has no DDL to replay, and the same
        TABLE_MAP bytes, re-read after a restart, derive the same table again.
        """
        codec = self._derived.get(table_map.signature)
        if codec is not None:
            return codec
        name = f"{table_map.database}.{table_map.table}"
        try:
            table = table_from_map(table_map)
        except TableMetadataError as exc:
            raise UndecodableRowsError(
                f"rows of {name} at binlog position {where} cannot be decoded: {reason}, and "
                f"{exc} (binlog_row_metadata={self.row_metadata or 'unknown'})"
                f"{self._skipped_hint()}. Rows are never dropped, so capture stops here: set "
                "binlog_row_metadata=FULL on the server (it applies to binlog written after "
                "it), make the history right (snapshot.mode=recovery) or exclude the table "
                "from capture") from None
        codec = self._build(table)
        if len(self._derived) >= 1024:
            self._derived.clear()
        self._derived[table_map.signature] = codec
        log.warning(
            "table %s at binlog position %s: %s; its rows are decoded with the definition in "
            "the binlog's table metadata (%s)%s. Defaults, comments, some lengths and a few "
            "types cannot be known from it (see docs/mysql.md)", name, where, reason,
            ", ".join(f"{c.name} {c.qualified_type}" for c in table.columns),
            self._skipped_hint())
        return codec

    def _skipped_hint(self) -> str:
        if not self.skipped:
            return ""
        where, database, statement = self.skipped[-1]
        return (f"; the last DDL skipped as unparseable was at {where} (database {database}): "
                f"{statement}")

    def _should_store(self, change: SchemaChange) -> bool:
        if not self.cfg.schema_history.store_only_captured_tables_ddl:
            return True
        if change.table is None:
            return self.cfg.database_filter(change.database)
        return self.captured(change.database, change.table) or (
            change.previous is not None
            and self.captured(change.previous.database, change.previous.name)
        )

    def _record(
        self,
        sql: str,
        database: str | None,
        changes: list[SchemaChange],
        position: MySqlPosition,
        ts_ms: int,
        snapshot: SnapshotMarker,
        ansi_quotes: bool = False,
    ) -> None:
        order = binlog_order(position.file, position.pos)
        is_snapshot = snapshot is not SnapshotMarker.FALSE
        if not is_snapshot and self._last_recorded is not None and order <= self._last_recorded:
            return  # re-read after a restart: already in the history
        entry_position: dict[str, Any] = {"file": position.file, "pos": position.pos}
        if position.gtid:
            entry_position["gtid"] = position.gtid
        if is_snapshot:
            entry_position["snapshot"] = True
        self.history.record(
            {"server": self.context.server_name}, entry_position, database, sql, changes,
            ansi_quotes,
        )  # `sql`: the statement text (ddl_text.py)
        if not is_snapshot:
            self._last_recorded = order

    def note_recorded_until(self, file: str, pos: int) -> None:
        """History entries up to (file, pos) exist already (found while recovering)."""
        self._last_recorded = binlog_order(file, pos)

    def _events(
        self,
        changes: list[SchemaChange],
        position: MySqlPosition,
        ts_ms: int,
        snapshot: SnapshotMarker,
        text: str | None = None,
    ) -> list[SchemaChangeEvent]:
        # One event per database, DDL statements in order (Debezium groups by database).
        by_db: dict[str, list[SchemaChange]] = {}
        for change in changes:
            by_db.setdefault(change.database, []).append(change)
        now = int(time.time() * 1000)
        events = []
        for db, group in by_db.items():
            source = self._source_block.schema_change_payload(
                self.context, db, position, ts_ms, snapshot
            )
            value = {
                "source": source,
                "ts_ms": now,
                "databaseName": db,
                "schemaName": None,
                "ddl": text if text is not None else ";\n".join(c.ddl for c in group),
                "tableChanges": table_changes(group, attributes=False),
            }
            events.append(SchemaChangeEvent(
                self.context, db, now, self.key_schema, {"databaseName": db},
                self.value_schema, value, position,
            ))
        return events
