"""MySQL/MariaDB's schema history topic (Debezium's KafkaSchemaHistory for MySQL): DDL records
on the history topic of `headwater.relational.history_kafka`, replayed from the last snapshot's
first record.  Loaded only when `schema.history.internal` names the Kafka history."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from headwater.connectors.mysql.ddl import SchemaChange
from headwater.connectors.mysql.schema_catalog import MySqlSchema
from headwater.connectors.mysql.schema_history import history_record, recover_ddl
from headwater.relational.history_kafka import KafkaHistoryTopic, last_snapshot_start

log = logging.getLogger("headwater.connectors.mysql.kafka_history")


class KafkaSchemaHistory(KafkaHistoryTopic):
    """MySQL's history topic: DDL records, replayed from the last snapshot's first record."""

    def record(self, source: dict[str, Any], position: dict[str, Any], database: str | None,
               ddl: str, changes: list[SchemaChange], ansi_quotes: bool = False) -> None:
        self.append(history_record(source, position, database, ddl, changes, ansi_quotes),
                    ddl)

    def recover(self, schema: MySqlSchema, include: Callable[[dict[str, Any]], bool]) -> int:
        return recover_ddl(self, schema, include, self._last_snapshot_start)

    def _last_snapshot_start(self, records: list[dict[str, Any]]) -> int:
        start = last_snapshot_start(records)
        if start:
            log.info("%s: %d records before the last snapshot are not replayed", self, start)
        return start

    def last_position(self) -> dict[str, Any] | None:
        records = self.records()
        return dict(records[-1][1]["position"]) if records else None
