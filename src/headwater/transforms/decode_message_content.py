"""Debezium's `io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent`.

It turns a logical decoding message event (value schema
``io.debezium.connector.postgresql.MessageValue``, formats/message_events.py) whose content is a
JSON object into something shaped like an insert, so that table-oriented consumers (the outbox
router, sinks) can take it: the ``message`` field goes, an ``after`` struct inferred from the
content JSON (Debezium's JsonSchemaData, transforms/json_schema.py) comes last, ``op`` becomes
``c``, the key and key schema become null and the value schema is named
``io.debezium.connector.postgresql.MessageValue.Envelope`` (the suffix the outbox router looks
for).  Every other record passes unchanged.

As Debezium: the content must be bytes (``binary.handling.mode=bytes``, else "The content of a
logical decoding message is non-binary"), its text must start with ``{`` or ``[`` and parse;
``fields.null.include`` (default false) keeps JSON nulls as optional bytes fields instead of
leaving them out.  A content that parses to a JSON array fails here with a clear error (Debezium
fails with a ClassCastException).  A tombstone (null value schema) passes unchanged.
"""

from __future__ import annotations

from typing import Final

from headwater.connect.props import PluginProps
from headwater.connect.record import ConnectRecord, TransformError, field_schema, require_struct
from headwater.model.schema import BYTES, STRUCT, ConnectField, ConnectSchema
from headwater.transforms.json_schema import JsonExpansionError, JsonSchemaData

__all__ = ["DecodeLogicalDecodingMessageContent"]

_MESSAGE_VALUE: Final = "io.debezium.connector.postgresql.MessageValue"
_ENVELOPE_SUFFIX: Final = ".Envelope"


def _same_name(name: str) -> str:
    return name  # field.name.adjustment.mode none, as the transform configures it


class DecodeLogicalDecodingMessageContent:
    def __init__(self, p: PluginProps) -> None:
        self.json = JsonSchemaData(p.get_bool("fields.null.include", False), False, _same_name)
        # (id of the event's value schema, content schema) -> (value schema, new value schema):
        # Debezium caches them the same way.  The event's schema holds dicts (parameters), so
        # it is keyed by identity and kept alive with the entry.
        self._schemas: dict[tuple[int, ConnectSchema],
                            tuple[ConnectSchema, ConnectSchema]] = {}

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        schema = record.value_schema
        if schema is None or schema.name != _MESSAGE_VALUE:
            return record
        value = require_struct(record.value, "Retrieve a record value")
        block = require_struct(value.get("message"),
                               "Retrieve content of a logical decoding message")
        content_schema = field_schema(field_schema(schema, "message"), "content")
        if content_schema is None or content_schema.type != BYTES:
            raise TransformError("The content of a logical decoding message is non-binary")
        content = block.get("content")
        text = bytes(content).decode("utf-8", errors="replace") if content is not None else ""
        try:
            node = self.json.parse(text)
        except JsonExpansionError:
            raise TransformError(
                f"Unable to parse logical decoding message content JSON string '{text}'"
            ) from None
        if not isinstance(node, dict):
            raise TransformError(
                "the content of a logical decoding message is a JSON array; "
                "DecodeLogicalDecodingMessageContent needs a JSON object")
        after_schema = self.json.to_schema(None, node)
        assert after_schema is not None and after_schema.type == STRUCT
        new_schema = self._value_schema(schema, after_schema)
        new_value = {f.name: value.get(f.name) for f in new_schema.fields[:-1]}
        new_value["op"] = "c"
        new_value["after"] = self.json.to_value(node, after_schema)
        return record.replace(key_schema=None, key=None, value_schema=new_schema,
                              value=new_value)

    def _value_schema(self, schema: ConnectSchema, after: ConnectSchema) -> ConnectSchema:
        key = (id(schema), after)
        cached = self._schemas.get(key)
        if cached is not None and cached[0] is schema:
            return cached[1]
        fields: list[ConnectField] = [f for f in schema.fields if f.name != "message"]
        fields.append(ConnectField("after", after))
        new = ConnectSchema(STRUCT, optional=False, name=(schema.name or "") + _ENVELOPE_SUFFIX,
                            fields=tuple(fields))
        if len(self._schemas) >= 10_000:  # Debezium's cache is bounded too
            self._schemas.clear()
        self._schemas[key] = (schema, new)
        return new
