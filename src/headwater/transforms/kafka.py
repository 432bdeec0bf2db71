"""Kafka's built-in SMTs (`org.apache.kafka.connect.transforms.*`) as Kafka 3.x/4.x documents
them: RegexRouter, ReplaceField, MaskField, InsertField, ValueToKey and HeaderFrom.

Each works with a schema (STRUCT values: `dict` plus `ConnectSchema`) and without (plain maps),
like its Java original; a record whose operated-on side is null (a tombstone's value) passes
unchanged.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from headwater.connect.logical import DATE, DECIMAL, TIME, TIMESTAMP
from headwater.connect.props import PluginConfigError, PluginProps
from headwater.connect.record import (
    ConnectRecord,
    Header,
    TransformError,
    field_schema,
    require_map,
    require_struct,
    struct_schema,
)
from headwater.model.schema import (
    BOOLEAN,
    FLOAT32,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    ConnectField,
    ConnectSchema,
)
from headwater.transforms.base import KeyOrValue
from headwater.transforms.fields import select_fields, with_defaults


def java_replacement(replacement: str) -> str:
    """A Java `Matcher.replaceFirst` replacement (`$1`, `${name}`, `\\$`) in Python's form."""
    out: list[str] = []
    i = 0
    while i < len(replacement):
        c = replacement[i]
        if c == "\\" and i + 1 < len(replacement):
            nxt = replacement[i + 1]
            out.append("\\\\" if nxt == "\\" else nxt)
            i += 2
        elif c == "$":
            m = re.match(r"\$(?:(\d+)|\{(\w+)\})", replacement[i:])
            if m is None:
                raise PluginConfigError(f"invalid group reference in replacement {replacement!r}")
            out.append(f"\\g<{m.group(1) or m.group(2)}>")
            i += m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def java_regex(pattern: str) -> str:
    """A Java regex in Python's syntax: named groups `(?<name>...)` and `\\k<name>` (Java's
    only spellings, used by Debezium's defaults such as `(?<routedByValue>.*)`)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\" and i + 1 < len(pattern):
            m = re.match(r"\\k<(\w+)>", pattern[i:])
            if m is not None:
                out.append(f"(?P={m.group(1)})")
                i += m.end()
                continue
            out.append(pattern[i:i + 2])
            i += 2
            continue
        m = re.match(r"\(\?<(\w+)>", pattern[i:])
        if m is not None:
            out.append(f"(?P<{m.group(1)}>")
            i += m.end()
            continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


def compile_java_regex(key: str, pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(java_regex(pattern))
    except re.error as exc:
        raise PluginConfigError(f"{key}: invalid regex: {exc}") from None


def compile_regex(p: PluginProps, name: str) -> re.Pattern[str]:
    return compile_java_regex(p.key(name), p.required(name))


class RegexRouter:
    """Renames the topic when the whole name matches `regex` (`replacement` may use `$1`)."""

    def __init__(self, p: PluginProps) -> None:
        self.regex = compile_regex(p, "regex")
        self.replacement = java_replacement(p.get_raw("replacement", ""))
        if "replacement" not in p.values:
            raise PluginConfigError(f"{p.key('replacement')}: missing, required by {p.label}")

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        if self.regex.fullmatch(record.topic) is None:
            return record
        return record.replace(topic=self.regex.sub(self.replacement, record.topic, count=1))


class ReplaceField:
    """Keeps (`include`, legacy `whitelist`), drops (`exclude`, legacy `blacklist`) and
    renames (`renames=old:new,...`) fields of the key or value."""

    def __init__(self, p: PluginProps, key: bool) -> None:
        self.side = KeyOrValue(key)
        self.exclude = set(_aliased(p, "exclude", "blacklist"))
        self.include = set(_aliased(p, "include", "whitelist"))
        self.renames: dict[str, str] = {}
        for spec in p.get_list("renames"):
            parts = spec.split(":")
            if len(parts) != 2 or not parts[0] or not parts[1]:
                raise PluginConfigError(
                    f"{p.key('renames')}: Invalid rename mapping: {spec} (expected old:new)")
            self.renames[parts[0]] = parts[1]
        self.replace_null_with_default = p.get_bool("replace.null.with.default", True)
        self._cache: dict[int, tuple[ConnectSchema, ConnectSchema, list[tuple[str, str]]]] = {}

    def _keep(self, name: str) -> bool:
        return name not in self.exclude and (not self.include or name in self.include)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self.side.value(record)
        if value is None:
            return record
        schema = self.side.schema(record)
        if schema is None:
            m = require_map(value, "field replacement")
            return self.side.new(record, None, {
                self.renames.get(k, k): v for k, v in m.items() if self._keep(k)})
        struct = require_struct(value, "field replacement")
        cached = self._cache.get(id(schema))
        if cached is None or cached[0] is not schema:
            pairs = [(f.name, self.renames.get(f.name, f.name))
                     for f in schema.fields if self._keep(f.name)]
            new_schema = select_fields(schema, None, pairs)[0]
            cached = self._cache[id(schema)] = (schema, new_schema, pairs)
        if self.replace_null_with_default:
            struct = with_defaults(schema, struct)
        return self.side.new(record, cached[1], {new: struct.get(old) for old, new in cached[2]})


def _aliased(p: PluginProps, name: str, legacy: str) -> tuple[str, ...]:
    current, old = p.get_list(name), p.get_list(legacy)
    if current and old:
        raise PluginConfigError(f"{p.key(name)} and {p.key(legacy)} are both set")
    return current or old


def replace_field_value(p: PluginProps) -> ReplaceField:
    return ReplaceField(p, key=False)


def replace_field_key(p: PluginProps) -> ReplaceField:
    return ReplaceField(p, key=True)


_ZERO_BY_TYPE: dict[str, Any] = {
    INT8: 0, INT16: 0, INT32: 0, INT64: 0, FLOAT32: 0.0, FLOAT64: 0.0, BOOLEAN: False,
    STRING: "",
}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class MaskField:
    """Replaces `fields` by their type's null-equivalent (0, "", false, empty list/map, epoch)
    or by `replacement` (strings and numbers only), like Kafka's MaskField."""

    def __init__(self, p: PluginProps, key: bool) -> None:
        self.side = KeyOrValue(key)
        self.fields = set(p.get_list("fields"))
        if not self.fields:
            raise PluginConfigError(f"{p.key('fields')}: missing, required by {p.label}")
        self.replacement = p.get_str("replacement")
        self.replace_null_with_default = p.get_bool("replace.null.with.default", True)

    def _masked(self, schema: ConnectSchema | None, value: Any) -> Any:
        if value is None:
            return None
        if self.replacement is not None:
            return self._replaced(schema, value)
        if schema is not None and schema.name in (TIMESTAMP, DATE, TIME):
            return {TIMESTAMP: _EPOCH, DATE: _EPOCH.date(), TIME: dt.time(0)}[schema.name]
        if (schema is not None and schema.name == DECIMAL) or isinstance(value, Decimal):
            return Decimal(0)
        if isinstance(value, list):
            return []
        if isinstance(value, dict):
            return {}
        if isinstance(value, bool):
            return False
        if isinstance(value, int):
            return 0
        if isinstance(value, float):
            return 0.0
        if isinstance(value, str):
            return ""
        raise TransformError(f"Cannot mask value of type: {type(value).__name__}")

    def _replaced(self, schema: ConnectSchema | None, value: Any) -> Any:
        text = self.replacement
        assert text is not None
        try:
            if isinstance(value, str):
                return text
            if isinstance(value, bool):
                raise TransformError("Cannot mask value of type boolean with custom replacement")
            if isinstance(value, int):
                return int(text)
            if isinstance(value, float):
                return float(text)
            if isinstance(value, Decimal):
                return Decimal(text)
        except (ValueError, InvalidOperation):
            raise TransformError(f"Unable to convert {text} to {type(value).__name__}") from None
        raise TransformError(
            f"Cannot mask value of type {type(value).__name__} with custom replacement")

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self.side.value(record)
        if value is None:
            return record
        schema = self.side.schema(record)
        if schema is None:
            m = require_map(value, "masking")
            return self.side.new(record, None, {
                k: self._masked(None, v) if k in self.fields else v for k, v in m.items()})
        struct = require_struct(value, "masking")
        if self.replace_null_with_default:
            struct = with_defaults(schema, struct)
        out = {f.name: self._masked(f.schema, struct.get(f.name)) if f.name in self.fields
               else struct.get(f.name) for f in schema.fields}
        return self.side.new(record, schema, out)


def mask_field_value(p: PluginProps) -> MaskField:
    return MaskField(p, key=False)


def mask_field_key(p: PluginProps) -> MaskField:
    return MaskField(p, key=True)


TIMESTAMP_SCHEMA = ConnectSchema(INT64, optional=True, name=TIMESTAMP, version=1)


class InsertField:
    """Adds the record's topic, partition, timestamp and/or a static string as fields
    (`name` optional, `name!` required), in Kafka's order: topic, partition, timestamp,
    static.  `offset.field` needs a sink record's offset, which a source never has."""

    def __init__(self, p: PluginProps, key: bool) -> None:
        self.side = KeyOrValue(key)
        if p.has("offset.field"):
            raise PluginConfigError(
                f"{p.key('offset.field')}: only sink records have an offset (Kafka refuses it "
                "for source connectors too)")
        self.specs: list[tuple[str, str, bool]] = []  # (what, field name, optional)
        for what in ("topic", "partition", "timestamp", "static"):
            spec = p.get_str(f"{what}.field")
            if spec is None:
                continue
            optional = not spec.endswith("!")
            name = spec.rstrip("!?")
            self.specs.append((what, name, optional))
        self.static_value = p.get_str("static.value")
        if not self.specs:
            raise PluginConfigError(f"{p.label}: no field to insert (topic.field, "
                                    "partition.field, timestamp.field or static.field)")
        self.replace_null_with_default = p.get_bool("replace.null.with.default", True)
        self._cache: dict[int, tuple[ConnectSchema, ConnectSchema]] = {}

    @staticmethod
    def _schema(what: str, optional: bool) -> ConnectSchema:
        if what == "partition":
            return ConnectSchema(INT32, optional=optional)
        if what == "timestamp":
            return TIMESTAMP_SCHEMA.with_optional(optional)
        return ConnectSchema(STRING, optional=optional)

    def _value(self, what: str, record: ConnectRecord, with_schema: bool) -> Any:
        if what == "topic":
            return record.topic
        if what == "partition":
            return record.partition
        if what == "timestamp":
            if not with_schema:
                return record.timestamp
            return _EPOCH + dt.timedelta(milliseconds=record.timestamp)
        return self.static_value

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self.side.value(record)
        if value is None:
            return record
        schema = self.side.schema(record)
        if schema is None:
            m = dict(require_map(value, "field insertion"))
            for what, name, _ in self.specs:
                m[name] = self._value(what, record, False)
            return self.side.new(record, None, m)
        struct = require_struct(value, "field insertion")
        cached = self._cache.get(id(schema))
        if cached is None or cached[0] is not schema:
            new_schema = struct_schema((*schema.fields, *(
                ConnectField(name, self._schema(what, optional))
                for what, name, optional in self.specs)), schema)
            cached = self._cache[id(schema)] = (schema, new_schema)
        out = with_defaults(schema, struct) if self.replace_null_with_default else dict(struct)
        for what, name, optional in self.specs:
            v = self._value(what, record, True)
            if v is None and not optional:
                raise TransformError(f"Invalid value: null used for required field: \"{name}\"")
            out[name] = v
        return self.side.new(record, cached[1], out)


def insert_field_value(p: PluginProps) -> InsertField:
    return InsertField(p, key=False)


def insert_field_key(p: PluginProps) -> InsertField:
    return InsertField(p, key=True)


class ValueToKey:
    """Replaces the key by a struct (or map) of the value's `fields`."""

    def __init__(self, p: PluginProps) -> None:
        self.fields = p.get_list("fields")
        if not self.fields:
            raise PluginConfigError(f"{p.key('fields')}: missing, required by {p.label}")
        self.replace_null_with_default = p.get_bool("replace.null.with.default", True)
        self._cache: dict[int, tuple[ConnectSchema, ConnectSchema]] = {}

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        if record.value is None:
            return record
        schema = record.value_schema
        if schema is None:
            m = require_map(record.value, "copying fields from value to key")
            return record.replace(key_schema=None, key={f: m.get(f) for f in self.fields})
        struct = require_struct(record.value, "copying fields from value to key")
        cached = self._cache.get(id(schema))
        if cached is None or cached[0] is not schema:
            fields = []
            for name in self.fields:
                fs = field_schema(schema, name)
                if fs is None:
                    raise TransformError(f"Field does not exist: {name}")
                fields.append(ConnectField(name, fs))
            cached = self._cache[id(schema)] = (schema, struct_schema(fields, optional=False))
        if self.replace_null_with_default:
            struct = with_defaults(schema, struct)
        return record.replace(key_schema=cached[1], key={f: struct.get(f) for f in self.fields})


class HeaderFrom:
    """Copies or moves fields of the key or value into headers (`fields` -> `headers`)."""

    def __init__(self, p: PluginProps, key: bool) -> None:
        self.side = KeyOrValue(key)
        self.fields = p.get_list("fields")
        self.headers = p.get_list("headers")
        if not self.fields or len(self.fields) != len(self.headers):
            raise PluginConfigError(
                f"{p.key('fields')} and {p.key('headers')} must be set and have the same "
                "number of elements")
        self.move = p.choice("operation", ("move", "copy"), None) == "move"
        if p.get_str("operation") is None:
            raise PluginConfigError(f"{p.key('operation')}: missing (move or copy)")
        self.replace_null_with_default = p.get_bool("replace.null.with.default", True)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self.side.value(record)
        if value is None:
            return record
        schema = self.side.schema(record)
        added: list[Header] = []
        if schema is None:
            m = require_map(value, "header " + ("move" if self.move else "copy"))
            for f, h in zip(self.fields, self.headers, strict=True):
                added.append(Header(h, None, m.get(f)))
            new_value: Any = ({k: v for k, v in m.items() if k not in self.fields}
                              if self.move else m)
            new_schema = None
        else:
            struct = require_struct(value, "header " + ("move" if self.move else "copy"))
            if self.replace_null_with_default:
                struct = with_defaults(schema, struct)
            for f, h in zip(self.fields, self.headers, strict=True):
                fs = field_schema(schema, f)
                if fs is None:
                    raise TransformError(f"Field does not exist: {f}")
                added.append(Header(h, fs, struct.get(f)))
            new_schema, new_value = schema, struct
            if self.move:
                keep = [(f.name, f.name) for f in schema.fields if f.name not in self.fields]
                new_schema, new_value = select_fields(schema, struct, keep)
        out = self.side.new(record, new_schema, new_value)
        return out.replace(headers=record.headers + tuple(added))


def header_from_value(p: PluginProps) -> HeaderFrom:
    return HeaderFrom(p, key=False)


def header_from_key(p: PluginProps) -> HeaderFrom:
    return HeaderFrom(p, key=True)
