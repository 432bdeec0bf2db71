"""Debezium's `Envelope.defineSchema()` records for the SMT tests (the shape Debezium's own
transform tests build: before/after rows, a source block, op, ts_ms)."""

from __future__ import annotations

from typing import Any

from headwater.connect.record import ConnectRecord, Header
from headwater.model.schema import INT64, STRING, STRUCT, ConnectField, ConnectSchema


def struct(name: str | None, *fields: tuple[str, ConnectSchema], optional: bool = True
           ) -> ConnectSchema:
    return ConnectSchema(STRUCT, optional=optional, name=name,
                         fields=tuple(ConnectField(n, s) for n, s in fields))


def envelope_schema(row: ConnectSchema, source: ConnectSchema,
                    name: str = "dummy.Envelope") -> ConnectSchema:
    return struct(name, ("before", row), ("after", row), ("source", source),
                  ("op", ConnectSchema(STRING, optional=False)),
                  ("ts_ms", ConnectSchema(INT64)), optional=False)


def envelope_record(schema: ConnectSchema, op: str, row: dict[str, Any] | None,
                    source: Any, topic: str = "db.server1.table1",
                    headers: tuple[Header, ...] = ()) -> ConnectRecord:
    """`Envelope.create` (op c: the row is `after`), `delete` (op d: `before`) or `truncate`.
    `source` is the value of the schema's source field: a struct's dict, or a string where
    the schema says so (Debezium's HeaderToValueTest)."""
    value = {"before": row if op == "d" else None, "after": row if op in "cru" else None,
             "source": source, "op": op, "ts_ms": 1_700_000_000_000}
    return ConnectRecord(topic, None, None, None, schema, value, 1_700_000_000_000, headers)
