"""Debezium's `io.debezium.transforms.EnforceRecordSize`: truncates the large string and bytes
columns of `before`/`after` so that the record's estimated size fits `max.bytes`.

The estimate is Debezium's `ApproximateStructSizeCalculator` (56 bytes per struct and string,
24 per bytes value and primitive, 8 per field reference, 100 per header, the string's UTF-8
bytes, the topic name's), times `compression.ratio`.  Headwater's records do not carry Kafka
Connect's source partition and offset maps, which Debezium counts at 100 bytes per entry: the
estimate here is lower by that much (a few hundred bytes), so a record within that margin of
`max.bytes` is truncated by Debezium and not here.  The excess is shared between `before` and
`after`, then among their columns longer than `min.field.size`, in proportion to their sizes;
strings are cut at a UTF-16 unit count as Java's `substring` cuts them.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from headwater.connect.props import PluginConfigError, PluginProps
from headwater.connect.record import ConnectRecord, TransformError, field_schema
from headwater.model.schema import (
    ARRAY,
    BOOLEAN,
    BYTES,
    FLOAT32,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    MAP,
    STRING,
    STRUCT,
    ConnectSchema,
)

_STRUCT, _STRING, _BYTES, _ARRAY, _MAP, _PRIMITIVE, _REF = 56, 56, 24, 64, 88, 24, 8
_PRIMITIVES = frozenset((BOOLEAN, INT8, INT16, INT32, INT64, FLOAT32, FLOAT64))


def _unscaled_length(value: Decimal) -> int:
    """`BigDecimal.unscaledValue().toByteArray().length`: minimal two's complement bytes."""
    unscaled = int(value.scaleb(-value.as_tuple().exponent))  # type: ignore[operator]
    return unscaled.bit_length() // 8 + 1 if unscaled >= 0 else (
        (-unscaled - 1).bit_length() // 8 + 1)


def value_size(schema: ConnectSchema, value: Any) -> int:
    kind = schema.type
    if kind in _PRIMITIVES:
        return _PRIMITIVE
    if kind == STRING:
        return 0 if value is None else _STRING + len(value.encode("utf-8", "replace"))
    if kind == BYTES:
        if value is None:
            return 0
        if isinstance(value, Decimal):
            return _BYTES + _unscaled_length(value)
        return _BYTES + len(value)
    if kind == STRUCT:
        return struct_size(schema, value)
    if kind == ARRAY:
        if value is None:
            return 0
        assert schema.items is not None
        return _ARRAY + sum(_REF + value_size(schema.items, v) for v in value)
    if kind == MAP:
        if value is None:
            return 0
        assert schema.keys is not None and schema.values is not None
        return _MAP + sum(2 * _REF + value_size(schema.keys, k) + value_size(schema.values, v)
                          for k, v in value.items())
    return 0


def struct_size(schema: ConnectSchema | None, value: Any) -> int:
    if value is None or schema is None:
        return 0
    if not isinstance(value, dict):  # Debezium casts key and value to Struct
        raise TransformError(f"EnforceRecordSize: a {type(value).__name__} is not a struct")
    return _STRUCT + sum(_REF + value_size(f.schema, value.get(f.name)) for f in schema.fields)


def record_size(record: ConnectRecord) -> int:
    """`getApproximateRecordSize` without the source partition and offset maps."""
    return (len(record.headers) * 100 + 8 + struct_size(record.key_schema, record.key)
            + struct_size(record.value_schema, record.value) + len(record.topic.encode()))


def _utf16_length(text: str) -> int:
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def _utf16_prefix(text: str, units: int) -> str:
    if _utf16_length(text) == len(text):
        return text[:units]
    # A cut inside a surrogate pair keeps neither half (Java would keep a lone surrogate,
    # which JSON writers then replace).
    return text.encode("utf-16-le", "surrogatepass")[:2 * units].decode("utf-16-le", "ignore")


class EnforceRecordSize:
    def __init__(self, p: PluginProps) -> None:
        raw = p.required("max.bytes")
        self.max_bytes = p.get_int("max.bytes", 0)
        if self.max_bytes <= 0:
            raise PluginConfigError(f"{p.key('max.bytes')}: '{raw}' must be a positive integer")
        ratio = p.get_str("compression.ratio", "1.0") or "1.0"
        try:
            self.ratio = float(ratio)
        except ValueError:
            raise PluginConfigError(
                f"{p.key('compression.ratio')}: '{ratio}' is not a number") from None
        if not self.ratio > 0 or math.isinf(self.ratio):
            raise PluginConfigError(
                f"{p.key('compression.ratio')}: '{ratio}' must be a positive number")
        self.min_field = p.get_int("min.field.size", 25000)
        if self.min_field < 0:
            raise PluginConfigError(
                f"{p.key('min.field.size')}: '{self.min_field}' must be non-negative")

    def _truncatable(self, schema: ConnectSchema, row: dict[str, Any]
                     ) -> list[tuple[str, int]]:
        out = []
        for f in schema.fields:
            v = row.get(f.name)
            if v is None:
                continue
            if f.schema.type == STRING:
                size = _utf16_length(v)
            elif f.schema.type == BYTES:
                if isinstance(v, Decimal):  # Debezium: a ClassCastException (BigDecimal)
                    raise TransformError(
                        f"EnforceRecordSize: column {f.name} is a Decimal, not bytes "
                        "(Debezium fails the same record)")
                size = len(v)
            else:
                continue
            if size > self.min_field:
                out.append((f.name, size))
        return out

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        if not isinstance(record.value, dict) or record.value_schema is None:
            return record
        current = math.ceil(record_size(record) * self.ratio)
        if current <= self.max_bytes:
            return record
        excess = current - self.max_bytes
        envelope = record.value
        sides: dict[str, tuple[ConnectSchema, dict[str, Any], list[tuple[str, int]]]] = {}
        for side in ("before", "after"):
            schema = field_schema(record.value_schema, side)
            row = envelope.get(side)
            if schema is not None and schema.type == STRUCT and isinstance(row, dict):
                sides[side] = (schema, row, self._truncatable(schema, row))
        totals = {side: sum(s for _, s in fields) for side, (_, _, fields) in sides.items()}
        total = sum(totals.values())
        if total <= 0:
            return record
        out = dict(envelope)
        for side, (_, row, fields) in sides.items():
            side_bytes = totals[side]
            side_excess = math.ceil(side_bytes / total * excess)
            if not fields or side_bytes == 0 or side_excess <= 0:
                continue
            new_row = dict(row)
            for name, size in fields:
                remove = math.ceil(size / side_bytes * side_excess)
                keep = max(0, size - remove)
                v = row[name]
                if isinstance(v, str):
                    if _utf16_length(v) > keep:
                        new_row[name] = _utf16_prefix(v, keep)
                elif len(v) > keep:
                    new_row[name] = bytes(v[:keep])
            out[side] = new_row
        return record.replace(value=out)
