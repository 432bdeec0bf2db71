"""Debezium's `io.debezium.transforms.partitions.PartitionRouting`: the Kafka partition from
payload fields.

The hashes of the listed fields' values (Java `hashCode`, or Debezium's MurmurHash3 with
`partition.hash.function=murmur`) are summed as Java ints, the sign bit cleared, and the sum
taken modulo `partition.topic.num` -- the partition Debezium computes, so that consumers see the
same layout.  `change.x` is `after.x`, or `before.x` for a delete.  Fields missing from the
schema (or null) are left out; when none is left the record keeps its partition.  A nested
path through a null struct (`after.x` of a delete) fails the record, as it fails in Debezium
(a NullPointerException wrapped in "Unprocessable message").
"""

from __future__ import annotations

from typing import Any

from headwater.connect.props import PluginConfigError, PluginProps
from headwater.connect.record import ConnectRecord, TransformError, field_schema
from headwater.model.schema import NO_DEFAULT, STRUCT, ConnectSchema
from headwater.transforms.debezium_lists import debezium_list
from headwater.transforms.extract_new_state import is_envelope
from headwater.transforms.java_hash import int32, java_hash_code, murmur_hash

_MISSING = object()


def _get(schema: ConnectSchema, value: dict[str, Any], name: str) -> tuple[Any, Any]:
    """Kafka's `Struct.get(name)` with its schema: _MISSING for an unknown field (Kafka's
    DataException), the field default for a null value."""
    fs = field_schema(schema, name)
    if fs is None:
        return None, _MISSING
    v = value.get(name)
    if v is None and fs.default is not NO_DEFAULT:
        v = fs.default
    return fs, v


class PartitionRouting:
    def __init__(self, p: PluginProps) -> None:
        self.fields = [[part.strip() for part in f.split(".")]
                       for f in debezium_list(
                           p, "partition.payload.fields", p.get_str("partition.payload.fields"),
                           required=True)]
        num = p.required("partition.topic.num")
        try:
            self.partitions = int(num)
        except ValueError:
            raise PluginConfigError(
                f"{p.key('partition.topic.num')}: '{num}' is not an integer") from None
        if self.partitions <= 0:
            raise PluginConfigError(
                f"{p.key('partition.topic.num')}: '{num}' is not a positive integer")
        # Debezium falls back to java for an unknown name; Headwater refuses it instead of
        # silently hashing with another function than the user wrote.
        function = p.choice("partition.hash.function", ("java", "murmur"), "java")
        self.hash = murmur_hash if function == "murmur" else java_hash_code

    def _value(self, envelope_schema: ConnectSchema, envelope: dict[str, Any],
               path: list[str]) -> tuple[ConnectSchema | None, Any]:
        schema: ConnectSchema | None = envelope_schema
        value: Any = envelope
        for i, part in enumerate(path):
            name = part
            if i < len(path) - 1 and part == "change":
                name = "before" if envelope.get("op") == "d" else "after"
            if value is None:
                raise TransformError(
                    f"Unprocessable message: PartitionRouting field '{'.'.join(path)}' goes "
                    f"through a null struct ('{path[i - 1]}')")
            assert schema is not None
            if schema.type != STRUCT:
                return None, None  # Struct.getStruct on a non-struct: DataException, skipped
            schema, value = _get(schema, value, name)
            if value is _MISSING:
                return None, None
        return schema, value

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        if record.value is None or not is_envelope(record.value_schema):
            return record
        assert record.value_schema is not None
        envelope = record.value
        if envelope.get("op") in ("t", "m"):
            return record
        total = 0
        found = False
        for path in self.fields:
            schema, value = self._value(record.value_schema, envelope, path)
            if value is None:
                continue
            found = True
            total = int32(total + self.hash(schema, value, ".".join(path)))
        if not found:
            return record
        normalized = total & 0x7FFFFFFF
        if normalized == 0x7FFFFFFF:
            normalized = 0
        return record.replace(partition=normalized % self.partitions)
