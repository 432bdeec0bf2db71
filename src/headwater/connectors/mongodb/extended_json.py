"""MongoDB documents as the exact JSON strings Debezium 3.x's MongoDB connector emits.

Debezium (3.6, bson-java 5.9) writes three different JSON dialects, all from bson-java's
`JsonWriter` (see docs/mongodb-events.md for the evidence):

- `before`/`after` (and snapshot `after`): `JsonMode.STRICT` with `indent(true)` and empty
  indent/newline characters, so elements are separated by `,` and names by `": "`
  (`{"_id": 1,"a": [1,2]}`); int64 `{"$numberLong": "5"}`, dates `{"$date": <millis>}`,
  binary `{"$binary": "<b64>","$type": "04"}`, regex `{"$regex": ..,"$options": ..}`, and
  non-finite doubles as bare `NaN`/`Infinity` (not valid JSON, but what Debezium sends);
- the key's `id`: the `_id` in `JsonMode.RELAXED`, same separators (`{"a": 1,"b": 2}`);
  int64 as a number, dates `{"$date": "1970-01-01T00:00:00Z"}` between 1970 and 9999, else
  `{"$date": {"$numberLong": ".."}}`, binary `{"$binary": {"base64": ..,"subType": ..}}`,
  non-finite doubles `{"$numberDouble": "NaN"}`;
- `updateDescription.updatedFields`: `BsonDocument.toJson()` - RELAXED, no indent, so `, `
  between elements.

Strings are escaped per UTF-16 code unit by Java's `Character.getType` (combining marks,
format characters, U+2028, every non-BMP character as a surrogate pair: `\\ud83d\\ude00`), which
depends on the JVM's Unicode version: `_java_chars` holds the tables measured on Java 17 and 25.

Two inputs: decoded documents (any Mapping; pymongo types) and raw BSON (`RawBSONDocument` or
bytes), walked directly.  The raw walker is exact for every BSON type; the decoded path cannot
tell what pymongo's decoder merged (symbol -> str, undefined -> None, DBPointer -> DBRef, regex
option order), so the runtime should hand change events over as `RawBSONDocument`.
"""

from __future__ import annotations

import base64
import re
import struct
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from json.encoder import encode_basestring as _ascii_string
from math import isfinite
from time import gmtime
from typing import Any, NamedTuple

from bson import Binary, Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef
from bson.raw_bson import RawBSONDocument

from headwater.connectors.mongodb._java_chars import LITERAL
from headwater.connectors.mongodb._jdouble import java_double

__all__ = [
    "ExtendedJson", "document_json", "document_json_raw", "id_json", "id_json_raw",
    "update_description",
]

DEFAULT_JAVA = 25
"""Which JVM's Unicode tables decide string escaping by default (17: Unicode 13, 25: 16)."""


class _Style(NamedTuple):
    sep: str
    relaxed: bool


STRICT = _Style(",", False)  # before / after
KEY = _Style(",", True)  # the key's id
UPDATED = _Style(", ", True)  # updateDescription.updatedFields

_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
          "\t": "\\t"}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_LAST_MS_OF_9999 = 253402300799999
_unpack_i32 = struct.Struct("<i").unpack_from
_unpack_i64 = struct.Struct("<q").unpack_from
_unpack_u32 = struct.Struct("<I").unpack_from
_unpack_f64 = struct.Struct("<d").unpack_from
_unpack_u64x2 = struct.Struct("<QQ").unpack_from
_REGEX_FLAGS = (("i", re.IGNORECASE), ("l", re.LOCALE), ("m", re.MULTILINE), ("s", re.DOTALL),
                ("u", re.UNICODE), ("x", re.VERBOSE))


def _escape(match: re.Match[str]) -> str:
    c = match.group()
    short = _SHORT.get(c)
    if short is not None:
        return short
    n = ord(c)
    if n < 0x10000:
        return f"\\u{n:04x}"
    n -= 0x10000
    return f"\\u{0xD800 + (n >> 10):04x}\\u{0xDC00 + (n & 0x3FF):04x}"


def _string_encoder(java: int) -> Callable[[str], str]:
    """bson-java's `writeStringHelper` for one JVM's Unicode tables."""
    table = LITERAL[java]
    allowed = "".join(f"\\u{a:04x}-\\u{b:04x}" for a, b in table)
    sub = re.compile(f"[^{allowed}]").sub

    def string(s: str) -> str:
        if s.isascii() and "\x7f" not in s:  # isascii() is O(1); json's C escaper agrees
            return _ascii_string(s)
        return '"' + sub(_escape, s) + '"'

    return string


def decimal128_string(bid: bytes) -> str:
    """`Decimal128.toString()` of bson-java from the 16 IEEE 754-2008 BID bytes."""
    low, high = _unpack_u64x2(bid)
    negative = high >> 63
    if high & 0x7C00000000000000 == 0x7C00000000000000:
        return "NaN"
    if high & 0x7800000000000000 == 0x7800000000000000:
        return "-Infinity" if negative else "Infinity"
    if high & 0x6000000000000000 == 0x6000000000000000:  # "11" combination: coefficient 0
        exponent = ((high >> 47) & 0x3FFF) - 6176
        significand = "0"
    else:
        exponent = ((high >> 49) & 0x3FFF) - 6176
        significand = str(((high & 0x1FFFFFFFFFFFF) << 64) | low)
    adjusted = exponent + len(significand) - 1
    sign = "-" if negative else ""
    if exponent <= 0 and adjusted >= -6:
        if exponent == 0:
            return sign + significand
        pad = -exponent - len(significand)
        if pad >= 0:
            return f"{sign}0.{'0' * pad}{significand}"
        return f"{sign}{significand[:-pad]}.{significand[-pad:]}"
    frac = f".{significand[1:]}" if len(significand) > 1 else ""
    return f"{sign}{significand[0]}{frac}E{'+' if adjusted > 0 else ''}{adjusted}"


_ISO_CACHE: dict[int, str] = {}


def _iso_millis(ms: int) -> str:
    """`ISO_OFFSET_DATE_TIME` of an instant in years 1970-9999: fraction digits as needed.

    Cached: the dates of a stream repeat (one `$set` of a date in many documents)."""
    text = _ISO_CACHE.get(ms)
    if text is None:
        if len(_ISO_CACHE) >= 4096:
            _ISO_CACHE.clear()
        t = gmtime(ms // 1000)
        frac = ms % 1000
        text = (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:"
                f"{t.tm_min:02d}:{t.tm_sec:02d}"
                + (f".{f'{frac:03d}'.rstrip('0')}Z" if frac else "Z"))
        _ISO_CACHE[ms] = text
    return text


def _bytes(raw: bytes | memoryview) -> bytes:
    return raw if isinstance(raw, bytes) else bytes(raw)


def _regex_options(flags: int | str) -> str:
    if isinstance(flags, str):
        return flags
    return "".join(c for c, bit in _REGEX_FLAGS if flags & bit)


class ExtendedJson:
    """The three encoders for one JVM's string-escaping tables (`java`: 17 or 25)."""

    def __init__(self, java: int = DEFAULT_JAVA) -> None:
        self.java = java
        self.string = _string_encoder(java)
        self._names: dict[bytes, str] = {}

    # ------------------------------------------------------------------------- public API
    def document_json(self, doc: Mapping[str, Any]) -> str:
        """A whole document as `before`/`after` hold it."""
        if isinstance(doc, RawBSONDocument):
            return self.document_json_raw(doc.raw)
        out: list[str] = []
        self._doc(doc, out, STRICT)
        return "".join(out)

    def document_json_raw(self, raw: bytes | memoryview) -> str:
        """`document_json` of one BSON document's bytes."""
        out: list[str] = []
        self._raw_doc(_bytes(raw), 0, out, STRICT, False)
        return "".join(out)

    def id_json(self, value: Any) -> str:
        """An `_id` value as the key's `id` string."""
        out: list[str] = []
        self._value(value, out, KEY)
        return "".join(out)

    def id_json_raw(self, raw: bytes | memoryview) -> str:
        """The key's `id` string of the `_id` field of a BSON document (e.g. documentKey)."""
        b = _bytes(raw)
        pos: int = 4
        end: int = _unpack_i32(b, 0)[0] - 1
        while pos < end:
            kind = b[pos]
            name_end = b.index(0, pos + 1)
            if b[pos + 1:name_end] == b"_id":
                out: list[str] = []
                self._raw_value(kind, b, name_end + 1, out, KEY)
                return "".join(out)
            pos = self._raw_value(kind, b, name_end + 1, [], KEY)
        raise ValueError("the document has no _id")

    def update_description(self, desc: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """A change event's `updateDescription` as Debezium's `updateDescription` struct.

        Debezium leaves `removedFields` and `truncatedArrays` null when absent or empty, and
        writes `updatedFields` whenever the event has it (an empty one is `"{}"`)."""
        if desc is None:
            return None
        removed = desc.get("removedFields")
        updated = desc.get("updatedFields")
        truncated = desc.get("truncatedArrays")
        updated_json = None
        if updated is not None:
            out: list[str] = []
            if isinstance(updated, RawBSONDocument):
                self._raw_doc(_bytes(updated.raw), 0, out, UPDATED, False)
            else:
                self._doc(updated, out, UPDATED)
            updated_json = "".join(out)
        return {
            "removedFields": [str(f) for f in removed] if removed else None,
            "updatedFields": updated_json,
            "truncatedArrays": [{"field": str(t["field"]), "size": int(t["newSize"])}
                                for t in truncated] if truncated else None,
        }

    # ---------------------------------------------------------------- decoded documents
    def _doc(self, doc: Mapping[str, Any], out: list[str], style: _Style) -> None:
        if isinstance(doc, RawBSONDocument):
            self._raw_doc(_bytes(doc.raw), 0, out, style, False)
            return
        if not doc:
            out.append("{}")
            return
        string = self.string
        sep = "{"
        for name, value in doc.items():
            out.append(sep)
            out.append(string(name))
            out.append(": ")
            self._value(value, out, style)
            sep = style.sep
        out.append("}")

    def _value(self, v: Any, out: list[str], style: _Style) -> None:
        t = type(v)
        if t is str:
            out.append(self.string(v))
        elif t is int:
            if -0x80000000 <= v <= 0x7FFFFFFF:
                out.append(str(v))
            else:
                out.append(str(v) if style.relaxed else f'{{"$numberLong": "{v}"}}')
        elif t is float:
            if style.relaxed and not isfinite(v):
                out.append(f'{{"$numberDouble": "{java_double(v)}"}}')
            else:
                out.append(java_double(v))
        elif t is bool:
            out.append("true" if v else "false")
        elif v is None:
            out.append("null")
        elif t is Int64:
            out.append(str(int(v)) if style.relaxed else f'{{"$numberLong": "{int(v)}"}}')
        elif t is ObjectId:
            out.append(f'{{"$oid": "{v}"}}')
        elif isinstance(v, (list, tuple)):
            if not v:
                out.append("[]")
                return
            sep = "["
            for item in v:
                out.append(sep)
                self._value(item, out, style)
                sep = style.sep
            out.append("]")
        elif isinstance(v, DBRef):
            self._doc(v.as_doc(), out, style)
        elif isinstance(v, Mapping):
            self._doc(v, out, style)
        elif isinstance(v, datetime):
            aware = v if v.tzinfo else v.replace(tzinfo=UTC)
            delta = aware - _EPOCH
            self._date((delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000,
                       out, style)
        elif isinstance(v, DatetimeMS):
            self._date(int(v), out, style)
        elif isinstance(v, Binary):
            self._binary(bytes(v), v.subtype, out, style)
        elif isinstance(v, (bytes, bytearray, memoryview)):
            self._binary(bytes(v), 0, out, style)
        elif isinstance(v, uuid.UUID):
            self._binary(v.bytes, 4, out, style)
        elif isinstance(v, Decimal128):
            out.append(f'{{"$numberDecimal": "{decimal128_string(v.bid)}"}}')
        elif isinstance(v, Code):
            out.append('{"$code": ')
            out.append(self.string(str(v)))
            if v.scope is not None:
                out.append(f'{style.sep}"$scope": ')
                self._doc(v.scope, out, style)
            out.append("}")
        elif isinstance(v, (Regex, re.Pattern)):
            regex = Regex.from_native(v) if isinstance(v, re.Pattern) else v
            self._regex(str(regex.pattern), _regex_options(regex.flags), out, style)
        elif isinstance(v, Timestamp):
            out.append(f'{{"$timestamp": {{"t": {v.time}{style.sep}"i": {v.inc}}}}}')
        elif isinstance(v, MinKey):
            out.append('{"$minKey": 1}')
        elif isinstance(v, MaxKey):
            out.append('{"$maxKey": 1}')
        elif isinstance(v, int):  # other int subclasses (IntEnum, ...)
            self._value(int(v), out, style)
        elif isinstance(v, float):
            self._value(float(v), out, style)
        elif isinstance(v, str):
            out.append(self.string(str(v)))
        else:
            raise TypeError(f"cannot encode {t.__name__} as MongoDB extended JSON")

    def _date(self, ms: int, out: list[str], style: _Style) -> None:
        if not style.relaxed:
            out.append(f'{{"$date": {ms}}}')
        elif 0 <= ms <= _LAST_MS_OF_9999:
            out.append(f'{{"$date": "{_iso_millis(ms)}"}}')
        else:
            out.append(f'{{"$date": {{"$numberLong": "{ms}"}}}}')

    @staticmethod
    def _binary(data: bytes, subtype: int, out: list[str], style: _Style) -> None:
        b64 = base64.b64encode(data).decode("ascii")
        if style.relaxed:
            out.append(f'{{"$binary": {{"base64": "{b64}"{style.sep}"subType": '
                       f'"{subtype:02X}"}}}}')
        else:
            out.append(f'{{"$binary": "{b64}"{style.sep}"$type": "{subtype:02X}"}}')

    def _regex(self, pattern: str, options: str, out: list[str], style: _Style) -> None:
        if style.relaxed:
            out.append(f'{{"$regularExpression": {{"pattern": {self.string(pattern)}'
                       f'{style.sep}"options": {self.string(options)}}}}}')
        else:
            out.append(f'{{"$regex": {self.string(pattern)}{style.sep}'
                       f'"$options": {self.string(options)}}}')

    # ---------------------------------------------------------------------- raw BSON
    def _name(self, name: bytes) -> str:
        """A field name's `"name": ` text, cached: a collection's documents repeat their
        names, and the cache spares decoding and escaping each one for every document."""
        names = self._names
        if len(names) >= 8192:
            names.clear()
        text = names[name] = self.string(name.decode("utf-8", "replace")) + ": "
        return text

    def _raw_doc(self, b: bytes, pos: int, out: list[str], style: _Style, array: bool) -> int:
        """Writes the document (or array) at `pos`; returns the position after it."""
        end: int = pos + _unpack_i32(b, pos)[0] - 1
        pos += 4
        if pos >= end:
            out.append("[]" if array else "{}")
            return end + 1
        names, string = self._names, self.string
        sep = "[" if array else "{"
        while pos < end:
            kind = b[pos]
            name_end = b.index(0, pos + 1)
            out.append(sep)
            if not array:
                name = b[pos + 1:name_end]
                text = names.get(name)
                if text is None:
                    text = self._name(name)
                out.append(text)
            pos = name_end + 1
            if kind == 0x02:  # the commonest values inline (a call per value is most of it)
                n = _unpack_i32(b, pos)[0]
                out.append(string(b[pos + 4:pos + 3 + n].decode("utf-8", "replace")))
                pos += 4 + n
            elif kind == 0x10:
                out.append(str(_unpack_i32(b, pos)[0]))
                pos += 4
            elif kind == 0x08:
                out.append("true" if b[pos] else "false")
                pos += 1
            elif kind == 0x01 and 1e-3 <= abs(v := _unpack_f64(b, pos)[0]) < 1e7:
                out.append(repr(v))  # java_double's own fast path
                pos += 8
            else:
                pos = self._raw_value(kind, b, pos, out, style)
            sep = style.sep
        out.append("]" if array else "}")
        return end + 1

    def _raw_value(
        self, kind: int, b: bytes, pos: int, out: list[str], style: _Style,
    ) -> int:
        """Writes the value of type `kind` at `pos`; returns the position after it."""
        n: int
        if kind == 0x02:  # string
            n = _unpack_i32(b, pos)[0]
            out.append(self.string(b[pos + 4:pos + 3 + n].decode("utf-8", "replace")))
            return pos + 4 + n
        if kind == 0x10:  # int32
            out.append(str(_unpack_i32(b, pos)[0]))
            return pos + 4
        if kind in (0x03, 0x04):  # document, array
            return self._raw_doc(b, pos, out, style, kind == 0x04)
        if kind == 0x01:  # double
            v = _unpack_f64(b, pos)[0]
            if style.relaxed and not isfinite(v):
                out.append(f'{{"$numberDouble": "{java_double(v)}"}}')
            else:
                out.append(java_double(v))
            return pos + 8
        if kind == 0x12:  # int64
            n = _unpack_i64(b, pos)[0]
            out.append(str(n) if style.relaxed else f'{{"$numberLong": "{n}"}}')
            return pos + 8
        if kind == 0x07:  # ObjectId
            out.append(f'{{"$oid": "{b[pos:pos + 12].hex()}"}}')
            return pos + 12
        if kind == 0x08:
            out.append("true" if b[pos] else "false")
            return pos + 1
        if kind == 0x0A:
            out.append("null")
            return pos
        if kind == 0x09:  # UTC datetime
            self._date(_unpack_i64(b, pos)[0], out, style)
            return pos + 8
        if kind == 0x05:  # binary; subtype 2 carries its own inner length, not written
            n = _unpack_i32(b, pos)[0]
            subtype = b[pos + 4]
            data = b[pos + 5:pos + 5 + n]
            if subtype == 2 and n >= 4:
                data = data[4:]
            self._binary(data, subtype, out, style)
            return pos + 5 + n
        if kind == 0x13:
            out.append(f'{{"$numberDecimal": "{decimal128_string(b[pos:pos + 16])}"}}')
            return pos + 16
        if kind == 0x11:  # timestamp: increment first, then seconds
            inc, sec = _unpack_u32(b, pos)[0], _unpack_u32(b, pos + 4)[0]
            out.append(f'{{"$timestamp": {{"t": {sec}{style.sep}"i": {inc}}}}}')
            return pos + 8
        if kind == 0x0B:  # regex: two cstrings
            p_end = b.index(0, pos)
            o_end = b.index(0, p_end + 1)
            self._regex(b[pos:p_end].decode("utf-8", "replace"),
                        b[p_end + 1:o_end].decode("utf-8", "replace"), out, style)
            return o_end + 1
        if kind in (0x0D, 0x0E):  # JavaScript code, symbol
            n = _unpack_i32(b, pos)[0]
            text = self.string(b[pos + 4:pos + 3 + n].decode("utf-8", "replace"))
            out.append(f'{{"{"$code" if kind == 0x0D else "$symbol"}": {text}}}')
            return pos + 4 + n
        if kind == 0x0F:  # code with scope: int32 total, string, document
            n = _unpack_i32(b, pos + 4)[0]
            out.append('{"$code": ')
            out.append(self.string(b[pos + 8:pos + 7 + n].decode("utf-8", "replace")))
            out.append(f'{style.sep}"$scope": ')
            self._raw_doc(b, pos + 8 + n, out, style, False)
            out.append("}")
            total: int = _unpack_i32(b, pos)[0]
            return pos + total
        if kind == 0xFF:
            out.append('{"$minKey": 1}')
            return pos
        if kind == 0x7F:
            out.append('{"$maxKey": 1}')
            return pos
        if kind == 0x06:
            out.append('{"$undefined": true}')
            return pos
        if kind == 0x0C:  # DBPointer: namespace string, ObjectId
            n = _unpack_i32(b, pos)[0]
            ns = self.string(b[pos + 4:pos + 3 + n].decode("utf-8", "replace"))
            oid = b[pos + 4 + n:pos + 16 + n].hex()
            out.append(f'{{"$ref": {ns}{style.sep}"$id": {{"$oid": "{oid}"}}}}')
            return pos + 16 + n
        raise ValueError(f"unknown BSON type 0x{kind:02x}")


_DEFAULT = ExtendedJson()


def document_json(doc: Mapping[str, Any]) -> str:
    """A whole document as the JSON string Debezium puts in `after`/`before`."""
    return _DEFAULT.document_json(doc)


def document_json_raw(raw: bytes | memoryview) -> str:
    """`document_json` of a BSON document's bytes (the fast, exact path)."""
    return _DEFAULT.document_json_raw(raw)


def id_json(value: Any) -> str:
    """The `_id` value as the string in the key's `id` field."""
    return _DEFAULT.id_json(value)


def id_json_raw(raw: bytes | memoryview) -> str:
    """The key's `id` string of the `_id` in a BSON document's bytes (documentKey)."""
    return _DEFAULT.id_json_raw(raw)


def update_description(desc: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A change event's updateDescription as Debezium's `updateDescription` payload."""
    return _DEFAULT.update_description(desc)
