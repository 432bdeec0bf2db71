"""MySQL's binary JSON (column type 245 in MySQL 5.7+ row images) to JSON text.

MariaDB stores JSON as LONGTEXT, so its row images already hold text; MySQL writes its own
binary format (`json_binary.h`): a type byte, then objects/arrays as element counts, sizes,
key and value entry tables and offsets relative to the container start, with small scalars
inlined in the value entries.  Output is compact JSON (``{"a":1}``) with non-ASCII kept;
MySQL's "opaque" scalars (DECIMAL, DATE, TIME, DATETIME inside JSON) become the number or the
quoted text MySQL would print; other opaque values become ``"base64:typeNN:..."`` as in
MySQL's own output.
"""

from __future__ import annotations

import base64
import json
import struct
from typing import Any, Final

__all__ = ["JsonBinaryError", "decode_json_binary", "parse_json_binary"]

_SMALL_OBJ, _LARGE_OBJ, _SMALL_ARR, _LARGE_ARR, _LITERAL = 0, 1, 2, 3, 4
_INT16, _UINT16, _INT32, _UINT32, _INT64, _UINT64, _DOUBLE, _STRING = 5, 6, 7, 8, 9, 10, 11, 12
_OPAQUE: Final = 15


class JsonBinaryError(ValueError):
    """Malformed MySQL binary JSON."""


class _Raw(str):
    """A number already rendered as JSON text (DECIMAL inside JSON)."""


def decode_json_binary(data: bytes) -> str:
    """Binary JSON -> compact JSON text; an empty value (JSON NULL written as '') -> 'null'."""
    if not data:
        return "null"
    return _render(parse_json_binary(data))


def parse_json_binary(data: bytes) -> Any:
    """Binary JSON -> Python values (dict, list, str, int, float, bool, None; opaque -> str)."""
    try:
        return _value(data[0], data, 1, len(data))
    except (IndexError, struct.error) as exc:
        raise JsonBinaryError(f"truncated binary JSON ({exc})") from None


def _render(value: Any) -> str:
    if isinstance(value, _Raw):
        return str.__str__(value)
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + _render(v)
                              for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_render(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _varlen(data: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, pos
        shift += 7
        if shift > 28:
            raise JsonBinaryError("variable-length integer too long")


def _value(t: int, data: bytes, pos: int, end: int) -> Any:
    if t in (_SMALL_OBJ, _LARGE_OBJ, _SMALL_ARR, _LARGE_ARR):
        return _container(t, data, pos)
    if t == _LITERAL:
        return _literal(data[pos])
    if t == _INT16:
        return struct.unpack_from("<h", data, pos)[0]
    if t == _UINT16:
        return struct.unpack_from("<H", data, pos)[0]
    if t == _INT32:
        return struct.unpack_from("<i", data, pos)[0]
    if t == _UINT32:
        return struct.unpack_from("<I", data, pos)[0]
    if t == _INT64:
        return struct.unpack_from("<q", data, pos)[0]
    if t == _UINT64:
        return struct.unpack_from("<Q", data, pos)[0]
    if t == _DOUBLE:
        return struct.unpack_from("<d", data, pos)[0]
    if t == _STRING:
        n, pos = _varlen(data, pos)
        if pos + n > end:
            raise JsonBinaryError("string runs past the value")
        return data[pos:pos + n].decode("utf-8")
    if t == _OPAQUE:
        ftype = data[pos]
        n, pos = _varlen(data, pos + 1)
        return _opaque(ftype, data[pos:pos + n])
    raise JsonBinaryError(f"unknown binary JSON type 0x{t:02x}")


def _literal(b: int) -> Any:
    if b == 0:
        return None
    if b == 1:
        return True
    if b == 2:
        return False
    raise JsonBinaryError(f"unknown JSON literal 0x{b:02x}")


def _container(t: int, data: bytes, base: int) -> Any:
    large = t in (_LARGE_OBJ, _LARGE_ARR)
    fmt = "<I" if large else "<H"
    w = 4 if large else 2
    count = struct.unpack_from(fmt, data, base)[0]
    size = struct.unpack_from(fmt, data, base + w)[0]
    end = base + size
    if end > len(data):
        raise JsonBinaryError("container runs past the value")
    pos = base + 2 * w
    is_obj = t in (_SMALL_OBJ, _LARGE_OBJ)
    keys = []
    if is_obj:
        for _ in range(count):
            off = struct.unpack_from(fmt, data, pos)[0]
            ln = struct.unpack_from("<H", data, pos + w)[0]
            keys.append(data[base + off:base + off + ln].decode("utf-8"))
            pos += w + 2
    values = []
    for _ in range(count):
        vt = data[pos]
        if vt == _LITERAL:
            values.append(_literal(data[pos + 1]))
        elif vt in (_INT16, _UINT16) or (large and vt in (_INT32, _UINT32)):
            values.append(_value(vt, data, pos + 1, end))
        else:
            off = struct.unpack_from(fmt, data, pos + 1)[0]
            values.append(_value(vt, data, base + off, end))
        pos += 1 + w
    return dict(zip(keys, values, strict=True)) if is_obj else values


def _opaque(ftype: int, b: bytes) -> Any:
    if ftype == 246 and len(b) >= 2:  # NEWDECIMAL: precision, scale, binary decimal
        from headwater.connectors.mysql.binlog.rows import make_decimal

        size, dec = make_decimal(b[0], b[1])
        return _Raw(str(dec(b[2:2 + size])))
    if ftype in (10, 11, 12, 7, 14, 18, 17, 19) and len(b) >= 8:
        packed = int.from_bytes(b[:8], "little", signed=True)
        neg = packed < 0
        packed = abs(packed)
        intpart, frac = packed >> 24, packed & 0xFFFFFF
        if ftype in (11, 19):  # TIME
            text = (f"{'-' if neg else ''}{(intpart >> 12) & 0x3FF:02d}:"
                    f"{(intpart >> 6) & 63:02d}:{intpart & 63:02d}")
        else:
            ymd, hms = intpart >> 17, intpart & 0x1FFFF
            ym = ymd >> 5
            text = f"{ym // 13:04d}-{ym % 13:02d}-{ymd & 31:02d}"
            if ftype not in (10, 14):
                text += f" {hms >> 12:02d}:{(hms >> 6) & 63:02d}:{hms & 63:02d}"
        if frac and ftype not in (10, 14):
            text += f".{frac:06d}"
        return text
    return f"base64:type{ftype}:" + base64.b64encode(b).decode("ascii")
