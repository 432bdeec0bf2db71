"""Debezium's `io.debezium.transforms.HeaderToValue`: copies or moves headers into the value.

`headers` and `fields` pair up by position; a field may be nested with dots (`source.h`,
`after.h`): it is added to the existing struct of that name, or to a new optional struct when
no field of that name exists (Debezium's `ConnectRecordUtil.makeNewSchema`/
`makeUpdatedValue`).  Records without any of the headers, and tombstones, pass unchanged.
"""

from __future__ import annotations

from typing import Any

from headwater.connect.props import PluginConfigError, PluginProps
from headwater.connect.record import ConnectRecord, Header, TransformError, require_struct
from headwater.model.schema import STRUCT, ConnectField, ConnectSchema
from headwater.transforms.debezium_lists import debezium_list

_PRIMITIVE = frozenset(("int8", "int16", "int32", "int64", "float32", "float64", "boolean",
                        "string", "bytes"))


class _Entry:
    __slots__ = ("path", "schema", "value")

    def __init__(self, path: list[str], schema: ConnectSchema | None, value: Any) -> None:
        self.path = path
        self.schema = schema
        self.value = value


def _with_entries(schema: ConnectSchema, value: dict[str, Any] | None, entries: list[_Entry],
                  path: str) -> tuple[ConnectSchema, dict[str, Any] | None]:
    """`schema`/`value` with every entry added: existing fields first (nested ones rebuilt),
    then new leaves, then new parent structs, in Debezium's order."""
    here = [e for e in entries if len(e.path) == 1]
    deeper: dict[str, list[_Entry]] = {}
    for e in entries:
        if len(e.path) > 1:
            deeper.setdefault(e.path[0], []).append(_Entry(e.path[1:], e.schema, e.value))
    fields: list[ConnectField] = []
    out: dict[str, Any] | None = None if value is None else {}
    existing = {f.name for f in schema.fields}
    for f in schema.fields:
        nested = deeper.get(f.name)
        if nested is None:
            fields.append(f)
            if out is not None and value is not None:
                out[f.name] = value.get(f.name)
            continue
        if f.schema.type in _PRIMITIVE:
            raise TransformError(
                f"Field '{f.name}' is a primitive type, not a struct. Cannot add nested field "
                f"'{path}{f.name}.{nested[0].path[0]}'.")
        if f.schema.type != STRUCT:
            raise TransformError(f"HeaderToValue: field '{path}{f.name}' is a {f.schema.type}, "
                                 "not a struct")
        inner = None if value is None else value.get(f.name)
        if inner is not None:
            inner = require_struct(inner, "Nested field")
        new_schema, new_inner = _with_entries(f.schema, inner, nested, f"{path}{f.name}.")
        fields.append(ConnectField(f.name, new_schema))
        if out is not None:
            out[f.name] = new_inner
    names = {f.name for f in fields}
    for e in here:
        if e.path[0] not in names:
            if e.schema is None:
                raise TransformError(f"HeaderToValue: header for '{path}{e.path[0]}' has no "
                                     "schema (schemaless headers cannot become struct fields)")
            fields.append(ConnectField(e.path[0], e.schema))
            names.add(e.path[0])
        if out is not None:
            out[e.path[0]] = e.value
    for parent, nested in deeper.items():
        if parent in existing:
            continue
        parent_schema = ConnectSchema(STRUCT, optional=True, fields=())
        new_schema, new_inner = _with_entries(parent_schema, {}, nested, f"{path}{parent}.")
        fields.append(ConnectField(parent, new_schema.with_optional(True)))
        if out is not None:
            out[parent] = new_inner
    # Kafka's SchemaUtil.copySchemaBasics, as Debezium uses it: optionality is not copied, so
    # a rebuilt struct is required (Debezium's own output for `after.x` fields).
    new = ConnectSchema(STRUCT, optional=False, name=schema.name,
                        version=schema.version, parameters=schema.parameters, doc=schema.doc,
                        fields=tuple(fields))
    return new, out


class HeaderToValue:
    def __init__(self, p: PluginProps) -> None:
        self.headers = debezium_list(p, "headers", p.get_str("headers"), required=True,
                                     no_spaces=True)
        self.fields = debezium_list(p, "fields", p.get_str("fields"), required=True,
                                    no_spaces=True)
        operation = p.get_str("operation")
        if operation is None:
            raise PluginConfigError(f"{p.key('operation')}: missing (move or copy)")
        if operation.lower() not in ("move", "copy"):
            raise PluginConfigError(
                f"{p.key('operation')}: '{operation}' is not one of move, copy")
        self.move = operation.lower() == "move"
        if len(self.headers) != len(self.fields):
            raise PluginConfigError(
                f"{p.key('fields')}: 'fields' config must have the same number of elements as "
                "'headers' config.")
        self._index: dict[str, int] = {}
        for i, h in enumerate(self.headers):
            self._index.setdefault(h, i)  # List.indexOf: the first position

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        if record.value is None:
            return record
        value = require_struct(record.value, "Header field insertion")
        if record.value_schema is None:
            raise TransformError("Header field insertion: the value has no schema")
        entries = [_Entry(self.fields[i].split("."), h.schema, h.value)
                   for h in record.headers if (i := self._index.get(h.key)) is not None]
        if not entries:
            return record
        schema, new_value = _with_entries(record.value_schema, value, entries, "")
        headers: tuple[Header, ...] = record.headers
        if self.move:
            headers = tuple(h for h in headers if h.key not in self._index)
        return record.replace(value_schema=schema, value=new_value, headers=headers)
