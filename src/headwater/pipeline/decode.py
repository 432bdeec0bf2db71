"""Decodes Debezium JSON topic records into typed change events, driven by their own schemas.

Each event carries its Connect schema; a table's column set is the union of the row schemas
seen (later schemas win on type), so a column added at the source appears as soon as the first
event with it arrives.  Every event gets:

- a *sequence*: a fixed-width hex string whose lexical order is the source's change order for
  one key (`sequence_key`), so that Delta MERGE predicates can compare it as a string;
- a *dedup id* (topic key, LSN, txId, op): equal for the re-deliveries of at-least-once capture.

PostgreSQL order is (commit position, snapshot-before-stream, LSN, order in the transaction,
topic offset).  The commit position is `source.sequence[0]` (the last commit LSN when the event
was emitted, increasing from one transaction to the next); snapshot reads, which have none,
rank at their consistent point, below stream events of later transactions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import orjson

from headwater.pipeline.connect_types import FieldType, UndecodableValueError, field_type

PLACEHOLDER = "__debezium_unavailable_value"


class Column(NamedTuple):
    name: str
    type: FieldType
    optional: bool


class ChangeEvent(NamedTuple):
    op: str  # c u d r t
    key: tuple[Any, ...] | None
    row: dict[str, Any] | None  # after image (c/u/r), before image (d), None (t)
    sequence: str
    dedup: tuple[Any, ...]
    offset: int
    unavailable: frozenset[str]  # columns whose value was not sent (unchanged TOAST)
    source_ts_ms: int | None
    ts_ms: int | None
    lsn: int | None
    tx_id: Any
    snapshot: str | None


class TableChanges:
    """The decoded events of one topic in one batch, plus the table shape they imply."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.schema_name: str | None = None  # source schema (PostgreSQL) or database
        self.table_name: str | None = None
        self.key_columns: tuple[str, ...] = ()
        self.columns: dict[str, Column] = {}
        self.events: list[ChangeEvent] = []

    @property
    def column_list(self) -> list[Column]:
        return list(self.columns.values())


def _hex(n: int | None, width: int) -> str:
    return format(max(n or 0, 0), f"0{width}x")


def sequence_key(source: dict[str, Any], total_order: int | None, offset: int) -> str:
    """Sortable sequence of a PostgreSQL event (see the module docstring)."""
    lsn = source.get("lsn")
    seq0: int | None = None
    sequence = source.get("sequence")
    if sequence:
        try:
            first = orjson.loads(sequence)[0]
            seq0 = int(first) if first is not None else None
        except (ValueError, IndexError, TypeError):
            seq0 = None
    snapshot = source.get("snapshot")
    is_stream = 0 if snapshot in ("true", "last", True, "incremental") else 1
    primary = seq0 if seq0 is not None else lsn
    return (
        _hex(primary, 16) + str(is_stream) + _hex(lsn, 16) + _hex(total_order, 8)
        + _hex(offset, 16)
    )


class _RowDecoder:
    """Decodes a row struct with a given Connect schema (cached per distinct schema)."""

    def __init__(self, row_schema: dict[str, Any]) -> None:
        self.fields = [
            (f["field"], field_type(f), bool(f.get("optional", True)))
            for f in row_schema.get("fields", [])
        ]

    def decode(
        self, row: dict[str, Any], where: str, placeholder: str = PLACEHOLDER
    ) -> tuple[dict[str, Any], frozenset[str]]:
        out: dict[str, Any] = {}
        unavailable: list[str] = []
        for name, ftype, _ in self.fields:
            v = row.get(name)
            if v is None:
                out[name] = None
            elif v == placeholder:
                # An unchanged TOASTed value the source did not send: keep the target's value.
                out[name] = None
                unavailable.append(name)
            else:
                try:
                    out[name] = ftype.decode(v)
                except (ValueError, TypeError, KeyError, ArithmeticError) as exc:
                    raise UndecodableValueError(
                        f"{where}: column {name!r}: cannot decode {v!r} as "
                        f"{ftype.arrow}: {exc}"
                    ) from exc
        return out, frozenset(unavailable)


def decode_topic(
    topic: str,
    records: Iterable[tuple[int, bytes | str | None, bytes | str | None]],
    placeholder: str = PLACEHOLDER,
) -> TableChanges:
    """Decodes (offset, key JSON, value JSON) records of one topic; tombstones are skipped."""
    changes = TableChanges(topic)
    decoders: dict[bytes, _RowDecoder] = {}
    key_decoders: dict[bytes, _RowDecoder] = {}
    for offset, key_doc, value_doc in records:
        if value_doc is None:
            continue  # tombstone: compaction marker, no change
        where = f"topic {topic} offset {offset}"
        try:
            value = orjson.loads(value_doc)
        except orjson.JSONDecodeError as exc:
            raise UndecodableValueError(f"{where}: value is not JSON: {exc}") from exc
        if "schema" not in value or "payload" not in value:
            raise UndecodableValueError(
                f"{where}: value has no embedded schema; the pipeline decodes events by their "
                "Connect schema (value.converter.schemas.enable=true on the connector)"
            )
        schema, payload = value["schema"], value["payload"]
        op = payload.get("op")
        if op not in ("c", "u", "d", "r", "t"):
            raise UndecodableValueError(f"{where}: unknown op {op!r}")
        source = payload.get("source") or {}
        if changes.table_name is None:
            changes.schema_name = source.get("schema") or source.get("db")
            changes.table_name = source.get("table")
        row_schema = next(
            (f for f in schema.get("fields", []) if f.get("field") == "after"), None
        )
        row: dict[str, Any] | None = None
        unavailable: frozenset[str] = frozenset()
        if row_schema is not None:
            sig = orjson.dumps(row_schema)
            decoder = decoders.get(sig)
            if decoder is None:
                decoder = decoders[sig] = _RowDecoder(row_schema)
                for name, ftype, optional in decoder.fields:
                    changes.columns.pop(name, None)
                    changes.columns[name] = Column(name, ftype, optional)
            image = payload.get("before") if op == "d" else payload.get("after")
            if image is not None:
                row, unavailable = decoder.decode(image, where, placeholder)
        key: tuple[Any, ...] | None = None
        if key_doc is not None and op != "t":
            kv = orjson.loads(key_doc)
            if isinstance(kv, dict) and "schema" in kv and "payload" in kv:
                ksig = orjson.dumps(kv["schema"])
                kdec = key_decoders.get(ksig)
                if kdec is None:
                    kdec = key_decoders[ksig] = _RowDecoder(kv["schema"])
                    changes.key_columns = tuple(n for n, _, _ in kdec.fields)
                decoded, _ = kdec.decode(kv["payload"], where)
                key = tuple(decoded[n] for n, _, _ in kdec.fields)
            else:
                raise UndecodableValueError(f"{where}: key has no embedded schema")
        tx = payload.get("transaction") or {}
        lsn = source.get("lsn")
        changes.events.append(ChangeEvent(
            op=op,
            key=key,
            row=row,
            sequence=sequence_key(source, tx.get("total_order"), offset),
            dedup=(key, lsn, source.get("txId"), op),
            offset=offset,
            unavailable=unavailable,
            source_ts_ms=source.get("ts_ms"),
            ts_ms=payload.get("ts_ms"),
            lsn=lsn,
            tx_id=source.get("txId"),
            snapshot=source.get("snapshot"),
        ))
    return changes
