"""Debezium's `io.debezium.transforms.TimezoneConverter`: temporal fields of `before`/`after`
(and, when named, `source`) shifted to `converted.timezone`.

Debezium's rules, kept as they are (its TimezoneConverterTest pins them):

* `ZonedTimestamp` / `ZonedTime` strings are re-expressed at the zone's offset (same instant).
  The ZonedTimestamp offset is the zone's offset at the value's *local* date-time as written;
  ZonedTime uses the zone's offset *now* (a time has no date).
* `Timestamp`, `MicroTimestamp`, `NanoTimestamp` and Kafka's `Timestamp` (wall-clock values
  without a zone, read as UTC) become the instant whose wall clock in the zone shows the same
  time: the zone's offset is subtracted.
* `source.ts_ms` / `ts_us` / `ts_ns`, only when the include (or exclude) list names a
  `source.` field, have the zone's offset *added*.
* Dates and times without zone (`Date`, `Time`, `MicroTime`, `NanoTime`, Kafka's Date/Time)
  are never changed.

`include.list` / `exclude.list` entries: `source:<table>[:<field>]`, `topic:<topic>[:<field>]`
or `<table or topic>:<field>`; a field may be prefixed with `before.`, `after.` or `source.`.
Only one of the two lists may be set.
"""

from __future__ import annotations

import datetime as dt
import re
import time
import zoneinfo
from typing import Any

from headwater.connect.props import PluginConfigError, PluginProps
from headwater.connect.record import ConnectRecord, TransformError, field_schema
from headwater.convert.temporal import format_iso_year
from headwater.model.schema import STRUCT, ConnectSchema
from headwater.transforms.extract_new_state import is_envelope

_ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"
_ZONED_TIME = "io.debezium.time.ZonedTime"
_MICRO_TIMESTAMP = "io.debezium.time.MicroTimestamp"
_NANO_TIMESTAMP = "io.debezium.time.NanoTimestamp"
_TIMESTAMP = "io.debezium.time.Timestamp"
_KAFKA_TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"
_CONVERTED = frozenset((_ZONED_TIMESTAMP, _ZONED_TIME, _MICRO_TIMESTAMP, _NANO_TIMESTAMP,
                        _TIMESTAMP, _KAFKA_TIMESTAMP))
_EPOCH_FIELDS = {"ts_ms": 1000, "ts_us": 1_000_000, "ts_ns": 1_000_000_000}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

_OFFSET = re.compile(r"[+-]\d{2}:\d{2}(:\d{2})?")
# Debezium validates the list's Java `List.toString()` ("[a, b]") with this pattern.
_LIST = re.compile(r"\[(source|topic|[\".\w\s_]+):([\".\w\s_]+(?::[\".\w\s_]+)?(?:,|]$))+",
                   re.ASCII)
_ISO_OFFSET_DATE_TIME = re.compile(
    r"([+-]?\d{4,})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?"
    r"(Z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)")
_ISO_OFFSET_TIME = re.compile(
    r"(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)")


class _Zone:
    """`ZoneId.of(converted.timezone)`: a fixed offset or a region's rules."""

    def __init__(self, text: str) -> None:
        self.fixed: int | None = None
        self.region: zoneinfo.ZoneInfo | None = None
        if _OFFSET.fullmatch(text):
            sign = -1 if text[0] == "-" else 1
            h, m, s = (int(x) for x in (text[1:3], text[4:6], text[7:9] or 0))
            self.fixed = sign * (h * 3600 + m * 60 + s)
        elif text in zoneinfo.available_timezones():  # Java's ZoneId.getAvailableZoneIds
            self.region = zoneinfo.ZoneInfo(text)
        else:
            raise ValueError(text)

    def offset_at_local(self, seconds: int) -> int:
        """`ZoneRules.getOffset(LocalDateTime)` for the wall clock `seconds` after the epoch:
        in a gap or an overlap, the offset before the transition (Python's fold=0)."""
        if self.fixed is not None:
            return self.fixed
        assert self.region is not None
        local = (dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds)).replace(
            tzinfo=self.region)
        off = local.utcoffset()
        assert off is not None
        return int(off.total_seconds())

    def offset_at_instant(self, seconds: int) -> int:
        """`ZoneRules.getOffset(Instant)`."""
        if self.fixed is not None:
            return self.fixed
        moment = _EPOCH + dt.timedelta(seconds=seconds)
        off = moment.astimezone(self.region).utcoffset()
        assert off is not None
        return int(off.total_seconds())


def _offset_seconds(text: str) -> int:
    if text == "Z":
        return 0
    digits = text[1:].replace(":", "")
    h, m, s = int(digits[0:2]), int(digits[2:4] or 0), int(digits[4:6] or 0)
    return (-1 if text[0] == "-" else 1) * (h * 3600 + m * 60 + s)


def _format_offset(seconds: int) -> str:
    """`appendOffsetId`: `Z`, or `+HH:MM[:SS]`."""
    if seconds == 0:
        return "Z"
    sign = "-" if seconds < 0 else "+"
    h, rest = divmod(abs(seconds), 3600)
    m, s = divmod(rest, 60)
    return f"{sign}{h:02d}:{m:02d}" + (f":{s:02d}" if s else "")


def _format_clock(seconds_of_day: int, nanos: int) -> str:
    """ISO_LOCAL_TIME: seconds always, the fraction without trailing zeros."""
    h, rest = divmod(seconds_of_day, 3600)
    m, s = divmod(rest, 60)
    fraction = f".{nanos:09d}".rstrip("0") if nanos else ""
    return f"{h:02d}:{m:02d}:{s:02d}{fraction}"


def _days_from_civil(y: int, m: int, d: int) -> int:
    return (dt.date(y, m, d) - _EPOCH.date()).days


def _civil(days: int) -> tuple[int, int, int]:
    date = _EPOCH.date() + dt.timedelta(days=days)
    return date.year, date.month, date.day


class TimezoneConverter:
    def __init__(self, p: PluginProps) -> None:
        zone = p.required("converted.timezone")
        try:
            self.zone = _Zone(zone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise PluginConfigError(
                f"{p.key('converted.timezone')}: '{zone}' is not a geographic timezone (e.g. "
                "America/Los_Angeles) nor a UTC offset +/-hh:mm (e.g. +08:00)") from None
        include = p.get_list("include.list")
        exclude = p.get_list("exclude.list")
        for name, items in (("include.list", include), ("exclude.list", exclude)):
            if items and not _LIST.fullmatch("[" + ", ".join(items) + "]"):
                raise PluginConfigError(
                    f"{p.key(name)}: '{p.get_str(name)}' is not a list of "
                    "source:<table>[:<field>], topic:<topic>[:<field>] or <name>:<field> rules")
        if include and exclude:
            raise PluginConfigError(f"{p.key('include.list')}: set together with "
                                    f"{p.key('exclude.list')}; specify only one")
        self.include = bool(include)
        self.exclude = bool(exclude)
        self.topics: dict[str, set[str]] = {}
        self.tables: dict[str, set[str]] = {}
        self.unprefixed: dict[str, set[str]] = {}
        common: str | None = None
        for item in exclude or include:
            parts = item.split(":")
            prefix: str | None = None
            field: str | None = None
            if len(parts) == 1:
                match = parts[0]
            elif parts[0].lower() in ("source", "topic"):
                prefix, match = parts[0], parts[1]
                field = parts[2] if len(parts) == 3 else None
            else:
                match, field = parts[0], parts[1]
            if prefix is not None:
                common = prefix  # Debezium: a prefix carries over to the following entries
            target = (self.topics if common == "topic" else self.tables if common == "source"
                      else self.unprefixed)
            fields = target.setdefault(match, set())
            if field is not None:
                fields.add(field)

    # -- conversions ---------------------------------------------------------------------------
    def _zoned_timestamp(self, text: str) -> str:
        m = _ISO_OFFSET_DATE_TIME.fullmatch(text)
        if m is None:
            raise TransformError(f"TimezoneConverter: '{text}' is not an ISO offset date-time")
        y, mo, d, h, mi, s, frac, off = m.groups()
        nanos = int((frac or "").ljust(9, "0"))
        local = (_days_from_civil(int(y), int(mo), int(d)) * 86400 + int(h) * 3600
                 + int(mi) * 60 + int(s or 0))
        instant = local - _offset_seconds(off)
        new_offset = self.zone.offset_at_local(local)
        shown = instant + new_offset
        days, secs = divmod(shown, 86400)
        year, month, day = _civil(days)
        return (f"{format_iso_year(year)}-{month:02d}-{day:02d}T{_format_clock(secs, nanos)}"
                f"{_format_offset(new_offset)}")

    def _zoned_time(self, text: str) -> str:
        m = _ISO_OFFSET_TIME.fullmatch(text)
        if m is None:
            raise TransformError(f"TimezoneConverter: '{text}' is not an ISO offset time")
        h, mi, s, frac, off = m.groups()
        nanos = int((frac or "").ljust(9, "0"))
        new_offset = self.zone.offset_at_instant(int(time.time()))
        secs = (int(h) * 3600 + int(mi) * 60 + int(s or 0) - _offset_seconds(off)
                + new_offset) % 86400
        return f"{_format_clock(secs, nanos)}{_format_offset(new_offset)}"

    def _wall_clock(self, value: int, per_second: int) -> int:
        seconds = value // per_second
        return value - self.zone.offset_at_local(seconds) * per_second

    def _convert(self, name: str, value: Any) -> Any:
        try:
            return self._convert_value(name, value)
        except (OverflowError, ValueError) as exc:
            raise TransformError(f"TimezoneConverter: cannot convert {name} value {value!r} "
                                 f"({exc})") from None

    def _convert_value(self, name: str, value: Any) -> Any:
        if name == _ZONED_TIMESTAMP:
            return self._zoned_timestamp(value)
        if name == _ZONED_TIME:
            return self._zoned_time(value)
        if name == _MICRO_TIMESTAMP:
            return self._wall_clock(value, 1_000_000)
        if name == _NANO_TIMESTAMP:
            return self._wall_clock(value, 1_000_000_000)
        if name == _TIMESTAMP:
            return self._wall_clock(value, 1000)
        # Kafka's Timestamp: a datetime (UTC)
        moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        local = (moment - _EPOCH) // dt.timedelta(seconds=1)
        return moment - dt.timedelta(seconds=self.zone.offset_at_local(local))

    def _epoch(self, name: str, value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise TransformError("Epoch field value should be a java.lang.Long")
        per_second = _EPOCH_FIELDS[name]
        return value + self.zone.offset_at_instant(value // per_second) * per_second

    # -- selection -----------------------------------------------------------------------------
    def _struct(self, which: str, schema: ConnectSchema, value: dict[str, Any], mode: str,
                fields: set[str]) -> dict[str, Any]:
        out = value
        for f in schema.fields:
            name = f.schema.name
            epoch = which == "source" and f.name in _EPOCH_FIELDS
            if name is None and not epoch:
                continue
            chosen = (mode == "all" or (mode == "include" and f.name in fields)
                      or (mode == "exclude" and f.name not in fields))
            if not chosen or not (epoch or name in _CONVERTED):
                continue
            current = value.get(f.name)
            if current is None:
                continue
            if out is value:
                out = dict(value)
            if name is not None:
                if name in _CONVERTED:
                    out[f.name] = self._convert(name, current)
            else:
                out[f.name] = self._epoch(f.name, current)
        return out

    def _handle(self, schema: ConnectSchema, envelope: dict[str, Any], mode: str,
                fields: set[str]) -> dict[str, Any]:
        split: dict[str, set[str]] = {"before": set(), "after": set(), "source": set()}
        for field in fields:
            head, dot, rest = field.partition(".")
            if dot and head in split:
                split[head].add(rest)
            else:
                split["before"].add(field)
                split["after"].add(field)
        out = envelope
        for which in ("before", "after", "source"):
            if which == "source" and not split["source"]:
                continue
            fs = field_schema(schema, which)
            value = envelope.get(which)
            if fs is None or fs.type != STRUCT or not isinstance(value, dict):
                continue
            new = self._struct(which, fs, value, mode, split[which])
            if new is not value:
                if out is envelope:
                    out = dict(envelope)
                out[which] = new
        return out

    def _match(self, table: str | None, topic: str) -> tuple[str | None, set[str]]:
        if topic in self.topics:
            return topic, self.topics[topic]
        if table in self.tables:
            return table, self.tables[table]
        if topic in self.unprefixed:
            return topic, self.unprefixed[topic]
        if table in self.unprefixed:
            return table, self.unprefixed[table]
        return None, set()

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        if record.value is None or not is_envelope(record.value_schema):
            return record
        schema = record.value_schema
        assert schema is not None
        envelope: dict[str, Any] = record.value
        source = envelope.get("source")
        source_schema = field_schema(schema, "source")
        table = (source.get("table") if isinstance(source, dict) and source_schema is not None
                 and field_schema(source_schema, "table") is not None else None)
        topic = record.topic
        new = envelope
        if not self.include and not self.exclude:
            if topic not in self.topics and table not in self.tables \
                    and table not in self.unprefixed:
                new = self._handle(schema, envelope, "all", set())
        elif self.include:
            match, fields = self._match(table, topic)
            if match is not None:
                new = self._handle(schema, envelope, "include" if fields else "all", fields)
        else:
            match, fields = self._match(table, topic)
            if match is None:
                new = self._handle(schema, envelope, "all", set())
            elif fields:
                new = self._handle(schema, envelope, "exclude", fields)
        return record if new is envelope else record.replace(value=new)
