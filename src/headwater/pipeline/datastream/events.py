"""Datastream events of one object -> the pipeline's `TableChanges`, so that the relational
path's modes (SCD1 net changes, SCD2 rebuild, changelog) and Delta target apply them as they
apply Debezium events, with the same rules:

- `sequence` from `sort_keys` (`order.sequence`), `dedup` = the `uuid`;
- `op`: `d` for `is_deleted`, `r` backfill, `c` insert, `u` update (`order.op_of`);
- the key: `source_metadata.primary_keys` (the renderer writes them for PostgreSQL, MySQL and
  MariaDB; MongoDB has them too) or `replication_index` (SQL Server's name for them), else
  the topic record's key (a JSON object of the key columns); none: a keyless table
  (changelog only, as on the relational path);
- the row: `payload`, typed by the Avro schema, or by its values for JSON (`types`);
- the unchanged-TOAST placeholder (text, JSON text or bytes) marks the column unavailable, so
  the target keeps its value, as for Debezium events.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa

from headwater.pipeline.connect_types import FieldType, UndecodableValueError
from headwater.pipeline.datastream import order, types
from headwater.pipeline.decode import PLACEHOLDER, ChangeEvent, Column, TableChanges

# The renderer's placeholder as text, JSON text (Avro), bytes (Avro) and base64 (JSON bytes).
_UNAVAILABLE = (PLACEHOLDER, PLACEHOLDER.encode(), f'"{PLACEHOLDER}"',
                base64.b64encode(PLACEHOLDER.encode()).decode())


@dataclass(frozen=True, slots=True)
class RawEvent:
    """One Datastream event as read: `columns` is the Avro payload's schema (payload values
    already decoded by fastavro), None for a JSON event; `key` the topic record's key."""

    ordinal: int  # its place in the batch (topic offset, or file and line); the changelog's
    event: Mapping[str, Any]
    columns: tuple[types.AvroColumn, ...] | None = None
    key: Mapping[str, Any] | None = None


def is_datastream_event(value: Any) -> bool:
    """Whether a decoded JSON value is a Datastream event (not a Debezium envelope)."""
    return (isinstance(value, dict) and "sort_keys" in value and "uuid" in value
            and "payload" in value and "source_metadata" in value)


def group_by_object(events: Sequence[RawEvent]) -> dict[str, list[RawEvent]]:
    out: dict[str, list[RawEvent]] = {}
    for e in events:
        out.setdefault(str(e.event.get("object")), []).append(e)
    return out


def raw_events(records: Iterable[tuple[int, bytes | None, bytes | None]]) -> list[RawEvent]:
    """The Datastream events of topic records (offset, key, value); tombstones skipped."""
    out: list[RawEvent] = []
    for offset, key, value in records:
        if value is None:
            continue
        key_doc = orjson.loads(key) if key is not None else None
        out.append(RawEvent(offset, orjson.loads(value), None,
                            key_doc if isinstance(key_doc, dict) else None))
    return out


def payload_kinds(events: Iterable[RawEvent]) -> dict[str, tuple[str | None, str | None]]:
    """Per payload column of JSON events, in the order first seen: (its kind, as the column is
    typed: None for nulls only, a placeholder counting as text when nothing came before it;
    the join of its values' kinds alone, placeholders not counted).  The second is what a
    later part of a batch adds to an earlier part's kind (`datastream.staged`)."""
    kinds: dict[str, str | None] = {}
    values: dict[str, str] = {}
    for e in events:
        for name, value in (e.event.get("payload") or {}).items():
            if value is None:
                kinds.setdefault(name, None)
            elif isinstance(value, str) and value in _UNAVAILABLE:
                kinds[name] = kinds.get(name) or "string"  # only text, JSON, bytes columns
            else:
                kind = types.json_kind(value)
                kinds[name] = types.join_kinds(kinds.get(name), kind)
                values[name] = types.join_kinds(values.get(name), kind)
    return {name: (kind, values.get(name)) for name, kind in kinds.items()}


def _columns(events: Sequence[RawEvent], existing: Mapping[str, pa.DataType]
             ) -> tuple[dict[str, Column], dict[str, str]]:
    """(columns by source name, Avro field name -> source name) of a batch of one object:
    the union of what its events carry, later schemas winning, JSON columns typed by their
    values (`types.json_field`)."""
    columns: dict[str, Column] = {}
    renames: dict[str, str] = {}
    seen_schemas: set[int] = set()
    for e in events:
        if e.columns is not None and id(e.columns) not in seen_schemas:
            seen_schemas.add(id(e.columns))
            for c in e.columns:
                columns.pop(c.name, None)
                columns[c.name] = Column(c.name, c.type, True)
                renames[c.avro_name] = c.name
    kinds = payload_kinds(e for e in events if e.columns is None)
    for name, (kind, _values) in kinds.items():
        if name in columns:
            continue  # also in an Avro event of the batch: its schema types it
        ftype = types.json_field(kind, existing.get(name))
        if ftype is not None:
            columns[name] = Column(name, ftype, True)
    return columns, renames


def decode_object(
    topic: str, events: Sequence[RawEvent], existing: Mapping[str, pa.DataType] | None = None,
) -> TableChanges:
    """The changes of one object's events (`existing`: the target's column types, which
    JSON columns keep when their values fit)."""
    changes = TableChanges(topic)
    columns, renames = _columns(events, existing or {})
    changes.columns = columns
    decoders: dict[str, FieldType] = {n: c.type for n, c in columns.items()}
    for e in events:
        ev = e.event
        meta = ev.get("source_metadata") or {}
        where = f"{topic}: event {ev.get('uuid')}"
        if changes.table_name is None:
            container = meta.get("schema") or meta.get("database")
            table = meta.get("table") or meta.get("collection")
            if table is None or container is None:
                container, _, table = str(ev.get("object")).partition("_")
            changes.schema_name, changes.table_name = str(container), str(table)
        row: dict[str, Any] = {}
        unavailable: list[str] = []
        for field, value in (ev.get("payload") or {}).items():
            name = renames.get(field, field)
            ftype = decoders.get(name)
            if ftype is None:
                continue  # only nulls so far, and no such target column
            if value is None:
                row[name] = None
            elif isinstance(value, (str, bytes)) and value in _UNAVAILABLE:
                row[name] = None
                unavailable.append(name)
            else:
                try:
                    row[name] = ftype.decode(value)
                except (ValueError, TypeError, KeyError, ArithmeticError) as exc:
                    raise UndecodableValueError(
                        f"{where}: column {name!r}: cannot read {value!r} as {ftype.arrow}: "
                        f"{exc}") from exc
        key_names = tuple(meta.get("primary_keys") or meta.get("replication_index")
                          or (e.key or {}).keys())
        key: tuple[Any, ...] | None = None
        if key_names:
            if not changes.key_columns:
                changes.key_columns = key_names
            try:
                key = tuple(row[k] for k in changes.key_columns)
            except KeyError as exc:
                raise UndecodableValueError(
                    f"{where}: key column {exc} is not in the payload") from None
        op = order.op_of(ev)
        changes.events.append(ChangeEvent(
            op, key, row, order.sequence(ev.get("sort_keys") or (), where), (ev.get("uuid"),),
            e.ordinal, frozenset(unavailable), order.millis(ev.get("source_timestamp")),
            order.millis(ev.get("read_timestamp")), order.pg_lsn(meta.get("lsn")),
            None if meta.get("tx_id") is None else str(meta.get("tx_id")),
            "true" if op == "r" else None,
        ))
    return changes
