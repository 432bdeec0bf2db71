"""Kafka's `TimestampConverter$Value` / `$Key`: between Unix epochs, strings (Java
`SimpleDateFormat` patterns, in UTC as Kafka uses them) and the Kafka Date/Time/Timestamp types.

Input types are recognised like Kafka does: a Kafka Timestamp/Date/Time logical schema, INT64
(a Unix epoch in `unix.precision`) or STRING (parsed with `format`).  Debezium's own temporal
types (io.debezium.time.*) are plain INT32/INT64 to this transform, exactly as in Kafka.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from headwater.connect.logical import DATE, TIME, TIMESTAMP, epoch_millis
from headwater.connect.props import PluginConfigError, PluginProps
from headwater.connect.record import (
    ConnectRecord,
    TransformError,
    field_schema,
    require_map,
    require_struct,
    struct_schema,
)
from headwater.model.schema import INT32, INT64, STRING, ConnectField, ConnectSchema
from headwater.transforms.base import KeyOrValue
from headwater.transforms.fields import with_defaults

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
TARGETS = ("string", "unix", "Date", "Time", "Timestamp")
_PRECISION = {"seconds": 1, "milliseconds": 1000, "microseconds": 1_000_000,
              "nanoseconds": 1_000_000_000}
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


class JavaDateFormat:
    """The SimpleDateFormat letters y M d H h m s S a E Z X z and quoted literals, in UTC."""

    _TOKEN = re.compile(r"'(?:[^']|'')*'|([A-Za-z])\1*|.", re.S)
    _LETTERS = set("yMdHhmsSaEZXzk")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.tokens: list[tuple[str, int] | str] = []
        for m in self._TOKEN.finditer(pattern):
            text = m.group(0)
            if text.startswith("'"):
                self.tokens.append("'" if text == "''" else text[1:-1].replace("''", "'"))
            elif text[0].isalpha():
                if text[0] not in self._LETTERS:
                    raise ValueError(f"unsupported pattern letter '{text[0]}' in {pattern!r}")
                self.tokens.append((text[0], len(text)))
            else:
                self.tokens.append(text)

    def format(self, value: dt.datetime) -> str:
        v = value.astimezone(dt.UTC)
        out: list[str] = []
        for tok in self.tokens:
            if isinstance(tok, str):
                out.append(tok)
                continue
            letter, n = tok
            if letter == "y":
                out.append(f"{v.year % 100:02d}" if n == 2 else f"{v.year:0{n}d}")
            elif letter == "M":
                out.append(_MONTHS[v.month - 1][:3] if n == 3 else _MONTHS[v.month - 1]
                           if n > 3 else f"{v.month:0{n}d}")
            elif letter == "E":
                day = _DAYS[v.weekday()]
                out.append(day if n > 3 else day[:3])
            else:
                number = {"d": v.day, "H": v.hour, "k": v.hour or 24, "h": v.hour % 12 or 12,
                          "m": v.minute, "s": v.second, "S": v.microsecond // 1000}.get(letter)
                if number is not None:
                    out.append(f"{number:0{n}d}")
                elif letter == "a":
                    out.append("AM" if v.hour < 12 else "PM")
                elif letter == "Z":
                    out.append("+0000")
                elif letter == "X":
                    out.append("Z")
                else:  # z
                    out.append("UTC")
        return "".join(out)

    def parse(self, text: str) -> dt.datetime:
        regex: list[str] = []
        for tok in self.tokens:
            if isinstance(tok, str):
                regex.append(re.escape(tok))
                continue
            letter, n = tok
            if letter in "yMdHkhmsS":
                if letter == "M" and n >= 3:
                    regex.append(r"(?P<Mname>[A-Za-z]+)")
                else:
                    regex.append(f"(?P<{letter}>\\d{{{n},}})" if letter in "yS" and n > 2
                                 else f"(?P<{letter}>\\d{{1,{max(n, 2)}}})")
            elif letter == "a":
                regex.append(r"(?P<a>AM|PM|am|pm)")
            elif letter == "E":
                regex.append(r"[A-Za-z]+")
            else:
                regex.append(r"(?P<zone>Z|[+-]\d{2}:?\d{2}|[+-]\d{2}|UTC|GMT)")
        m = re.fullmatch("".join(regex), text.strip())
        if m is None:
            raise TransformError(
                f"Could not parse timestamp: value ({text}) does not match pattern "
                f"({self.pattern})")
        g = m.groupdict()
        month = int(g["M"]) if g.get("M") else 1
        if g.get("Mname"):
            names = [x.lower() for x in _MONTHS]
            found = [i for i, x in enumerate(names) if x.startswith(g["Mname"].lower())]
            if not found:
                raise TransformError(f"Could not parse month in {text}")
            month = found[0] + 1
        hour = int(g["H"]) if g.get("H") else int(g["k"]) % 24 if g.get("k") else 0
        if g.get("h"):
            hour = int(g["h"]) % 12 + (12 if (g.get("a") or "").upper() == "PM" else 0)
        year = int(g["y"]) if g.get("y") else 1970
        result = dt.datetime(year, month, int(g["d"]) if g.get("d") else 1, hour,
                             int(g["m"]) if g.get("m") else 0, int(g["s"]) if g.get("s") else 0,
                             int(g["S"]) * 1000 if g.get("S") else 0, tzinfo=dt.UTC)
        zone = g.get("zone")
        if zone and zone not in ("Z", "UTC", "GMT"):
            sign = -1 if zone[0] == "-" else 1
            digits = zone[1:].replace(":", "")
            offset = dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
            result -= sign * offset
        return result


def _schema_for(target: str, optional: bool) -> ConnectSchema:
    if target == "string":
        return ConnectSchema(STRING, optional=optional)
    if target == "unix":
        return ConnectSchema(INT64, optional=optional)
    name = {"Date": DATE, "Time": TIME, "Timestamp": TIMESTAMP}[target]
    return ConnectSchema(INT64 if target == "Timestamp" else INT32, optional=optional,
                         name=name, version=1)


class TimestampConverter:
    def __init__(self, p: PluginProps, key: bool) -> None:
        self.side = KeyOrValue(key)
        self.target = p.choice("target.type", TARGETS, None, case_sensitive=False)
        if self.target is None:
            raise PluginConfigError(f"{p.key('target.type')}: missing ({', '.join(TARGETS)})")
        self.field = p.get_str("field")
        pattern = p.get_str("format")
        try:
            self.format = JavaDateFormat(pattern) if pattern else None
        except ValueError as exc:
            raise PluginConfigError(f"{p.key('format')}: {exc}") from None
        if self.target == "string" and self.format is None:
            raise PluginConfigError(
                f"{p.key('format')}: required when target.type is string")
        self.precision = _PRECISION[p.choice("unix.precision", tuple(_PRECISION),
                                             "milliseconds") or "milliseconds"]
        self.replace_null_with_default = p.get_bool("replace.null.with.default", True)

    # -- conversions -------------------------------------------------------------------------
    def _to_datetime(self, schema: ConnectSchema | None, value: Any) -> dt.datetime:
        name = schema.name if schema is not None else None
        if isinstance(value, dt.datetime):
            return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        if isinstance(value, dt.date):
            return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
        if isinstance(value, dt.time):
            return dt.datetime.combine(_EPOCH.date(), value, tzinfo=dt.UTC)
        if name == TIMESTAMP and isinstance(value, int):
            return _EPOCH + dt.timedelta(milliseconds=value)
        if name == DATE and isinstance(value, int):
            return _EPOCH + dt.timedelta(days=value)
        if name == TIME and isinstance(value, int):
            return _EPOCH + dt.timedelta(milliseconds=value)
        if isinstance(value, bool):
            raise TransformError("TimestampConverter cannot convert a boolean")
        if isinstance(value, int) and (schema is None or schema.type == INT64):
            seconds, rest = divmod(value, self.precision)
            return _EPOCH + dt.timedelta(seconds=seconds,
                                         microseconds=rest * 1_000_000 // self.precision)
        if isinstance(value, str) and (schema is None or schema.type == STRING):
            if self.format is None:
                raise TransformError("TimestampConverter needs `format` to parse strings")
            return self.format.parse(value)
        raise TransformError(
            f"TimestampConverter cannot convert {schema.type if schema else type(value).__name__}"
            f"{' ' + name if name else ''}")

    def _convert(self, schema: ConnectSchema | None, value: Any) -> Any:
        if value is None:
            return None
        moment = self._to_datetime(schema, value)
        if self.target == "Timestamp":
            return moment
        if self.target == "Date":
            return moment.date()
        if self.target == "Time":
            return moment.timetz().replace(tzinfo=None)
        if self.target == "unix":
            return epoch_millis(moment) * self.precision // 1000 if self.precision <= 1000 else (
                (moment - _EPOCH) // dt.timedelta(microseconds=1)) * self.precision // 1_000_000
        assert self.format is not None
        return self.format.format(moment)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self.side.value(record)
        schema = self.side.schema(record)
        assert self.target is not None
        if self.field is None:
            if value is None and schema is None:
                return record
            new_schema = (_schema_for(self.target, schema.optional) if schema is not None
                          else None)
            return self.side.new(record, new_schema, self._convert(schema, value))
        if value is None:
            return record
        if schema is None:
            m = dict(require_map(value, "converting timestamp formats"))
            m[self.field] = self._convert(None, m.get(self.field))
            return self.side.new(record, None, m)
        struct = require_struct(value, "converting timestamp formats")
        if self.replace_null_with_default:
            struct = with_defaults(schema, struct)
        fs = field_schema(schema, self.field)
        if fs is None:
            raise TransformError(f"Field does not exist: {self.field}")
        new_schema = struct_schema([
            ConnectField(f.name, _schema_for(self.target, f.schema.optional)
                         if f.name == self.field else f.schema) for f in schema.fields], schema)
        out = dict(struct)
        out[self.field] = self._convert(fs, struct.get(self.field))
        return self.side.new(record, new_schema, out)


def timestamp_converter_value(p: PluginProps) -> TimestampConverter:
    return TimestampConverter(p, key=False)


def timestamp_converter_key(p: PluginProps) -> TimestampConverter:
    return TimestampConverter(p, key=True)
