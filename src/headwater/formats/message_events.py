"""Debezium's logical decoding message events (op ``m``), as the PostgreSQL connector writes them.

Debezium does not build these through its table envelope: `LogicalDecodingMessageMonitor`
sends them to ``<topic.prefix>.message`` (the topic naming strategy is not asked), keyed by
``io.debezium.connector.postgresql.MessageKey {prefix}``, with the value
``io.debezium.connector.postgresql.MessageValue {op, ts_ms, source, transaction, message}`` and
the block ``io.debezium.connector.postgresql.Message {prefix, content}`` (content per
``binary.handling.mode``).  No ``before``/``after``, no ``ts_us``/``ts_ns``: its schema
(PostgresSchemaFactory) has neither, whatever the documentation's example shows.  No headers
either: the monitor builds a plain ``SourceRecord``, without the ``__debezium.context.*`` headers
Debezium's EventDispatcher adds to data change events (``extended.headers.enabled``).

A message reaches the format as a `ChangeRecord` with ``op`` `Op.MESSAGE` whose ``after`` is
``(prefix, content)`` and whose ``table`` is the connector's message schema
(`message_table`): the columns carry the content's Connect schema, the table id the source
block's ``db`` (``schema`` and ``table`` are empty strings, as Debezium's are).
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from headwater.connect.record import ConnectRecord
from headwater.converters.connect_json import json_default, schema_to_json
from headwater.model.record import ChangeRecord, SourceContext
from headwater.model.schema import (
    OPTIONAL_INT64,
    OPTIONAL_STRING,
    STRING,
    STRUCT,
    Column,
    ConnectField,
    ConnectSchema,
    TableId,
    TableSchema,
)
from headwater.model.topic import HeaderBytes, TopicRecord

__all__ = ["MESSAGE_COLLECTION", "MESSAGE_TOPIC_SUFFIX", "MessagePlan", "message_table"]

MESSAGE_TOPIC_SUFFIX: Final = ".message"
# The data collection of a message in transaction metadata (LogicalDecodingMessageId).
MESSAGE_COLLECTION: Final = "LOGICAL_DECODING_MESSAGE"
_NAMESPACE: Final = "io.debezium.connector.postgresql"
_NO_HEADERS: Final[HeaderBytes] = ()


def message_table(database: str, content_schema: ConnectSchema) -> TableSchema:
    """The message "table": ``prefix`` and ``content`` (``content_schema`` made optional)."""
    return TableSchema(
        TableId(database, "", ""),
        (Column("prefix", 0, "text", OPTIONAL_STRING),
         Column("content", 1, "bytea", content_schema.with_optional(True))),
        attributes={"envelope": "message"},
    )


class MessagePlan:
    """Key and value schemas of the message events of one message table and source block."""

    __slots__ = ("key_prefix", "key_schema", "topic", "value_prefix", "value_schema")

    def __init__(self, table: TableSchema, context: SourceContext, source_schema: ConnectSchema,
                 tx_schema: ConnectSchema, key_schemas: bool, value_schemas: bool) -> None:
        self.topic = context.server_name + MESSAGE_TOPIC_SUFFIX
        self.key_schema = ConnectSchema(
            STRUCT, optional=False, name=f"{_NAMESPACE}.MessageKey", version=1,
            fields=(ConnectField("prefix", OPTIONAL_STRING),))
        block = ConnectSchema(STRUCT, optional=False, name=f"{_NAMESPACE}.Message", version=1,
                              fields=tuple(ConnectField(c.name, c.schema) for c in table.columns))
        self.value_schema = ConnectSchema(
            STRUCT, optional=False, name=f"{_NAMESPACE}.MessageValue", version=1, fields=(
                ConnectField("op", ConnectSchema(STRING, optional=False)),
                ConnectField("ts_ms", OPTIONAL_INT64),
                ConnectField("source", source_schema),
                ConnectField("transaction", tx_schema),
                ConnectField("message", block),
            ))
        self.key_prefix = (b'{"schema":' + orjson.dumps(schema_to_json(self.key_schema))
                           + b',"payload":') if key_schemas else b""
        self.value_prefix = (b'{"schema":' + orjson.dumps(schema_to_json(self.value_schema))
                             + b',"payload":') if value_schemas else b""

    @staticmethod
    def _value(record: ChangeRecord, source: dict[str, Any], with_tx: bool) -> dict[str, Any]:
        assert record.after is not None
        prefix, content = record.after
        tx = record.tx
        return {
            "op": "m",
            "ts_ms": record.processed_ts_ms,
            "source": source,
            "transaction": tx.block() if with_tx and tx is not None else None,
            "message": {"prefix": prefix, "content": content},
        }

    def render(self, record: ChangeRecord, source: dict[str, Any], with_tx: bool) -> TopicRecord:
        """The event as JsonConverter bytes (no headers, as Debezium's)."""
        assert record.after is not None
        key = orjson.dumps({"prefix": record.after[0]})
        body = orjson.dumps(self._value(record, source, with_tx), default=json_default)
        if self.key_prefix:
            key = self.key_prefix + key + b"}"
        value = self.value_prefix + body + b"}" if self.value_prefix else body
        return TopicRecord(key, value, record.processed_ts_ms, _NO_HEADERS)

    def connect(self, record: ChangeRecord, source: dict[str, Any],
                with_tx: bool) -> ConnectRecord:
        """The same event as a Connect record (transforms, other converters)."""
        assert record.after is not None
        return ConnectRecord(self.topic, None, self.key_schema, {"prefix": record.after[0]},
                             self.value_schema, self._value(record, source, with_tx),
                             record.processed_ts_ms, ())
