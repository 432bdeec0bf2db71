"""Struct surgery shared by the transforms: the helpers Kafka's SMTs each re-implement."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from headwater.connect.record import struct_schema
from headwater.model.schema import NO_DEFAULT, ConnectField, ConnectSchema


def with_defaults(schema: ConnectSchema, value: dict[str, Any]) -> dict[str, Any]:
    """A struct copy where a null field takes its schema default (Kafka's `Struct.get`, which
    `replace.null.with.default=true` copies use)."""
    out = {}
    for f in schema.fields:
        v = value.get(f.name)
        if v is None and f.schema.default is not NO_DEFAULT:
            v = f.schema.default
        out[f.name] = v
    return out


def append_fields(schema: ConnectSchema, value: dict[str, Any] | None,
                  extra: Iterable[tuple[str, ConnectSchema, Any]],
                  *, replace_null_with_default: bool = False,
                  ) -> tuple[ConnectSchema, dict[str, Any] | None]:
    """`schema`/`value` with fields added at the end (name, schema, value); an existing
    field of the same name is an error as in Kafka's SchemaBuilder."""
    added = list(extra)
    names = {f.name for f in schema.fields}
    for name, _, _ in added:
        if name in names:
            raise ValueError(f"Cannot create field because of field name duplication {name}")
        names.add(name)
    new_schema = struct_schema(
        (*schema.fields, *(ConnectField(n, s) for n, s, _ in added)), schema)
    if value is None:
        return new_schema, None
    out = with_defaults(schema, value) if replace_null_with_default else dict(value)
    for name, _, v in added:
        out[name] = v
    return new_schema, out


def select_fields(schema: ConnectSchema, value: dict[str, Any] | None,
                  keep: Iterable[tuple[str, str]]) -> tuple[ConnectSchema, dict[str, Any] | None]:
    """Only the (old name, new name) fields, in the given order."""
    pairs = list(keep)
    by_name = {f.name: f.schema for f in schema.fields}
    new_schema = struct_schema([ConnectField(new, by_name[old]) for old, new in pairs], schema)
    if value is None:
        return new_schema, None
    return new_schema, {new: value.get(old) for old, new in pairs}
