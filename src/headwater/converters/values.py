"""Kafka Connect's `org.apache.kafka.connect.data.Values` text form: what `SimpleHeaderConverter`,
the default `header.converter` of every Connect worker, writes and reads.

Writing is `Values.convertToString(schema, value)`, ported rule for rule (Kafka 4.1,
connect/api/.../data/Values.java, `append`):

* a number as Java's `toString` (an integer as digits; a FLOAT64 as `Double.toString`, a FLOAT32
  as `Float.toString`, e.g. `1.0`, `1.0E10`, `1.0E-4`; a Decimal as `BigDecimal.toString`, which
  Python's `str(Decimal)` equals: both follow the same scientific-notation rule);
* a boolean as `true`/`false`; a string as itself at the top level, and inside an array, map or
  struct in double quotes with only `\\` and `"` escaped;
* bytes as standard base64 (quoted when inside);
* an array as `[a,b]`, a map as `{k:v}` and a struct as `{"field":value,...}` in the schema's field
  order, their elements rendered as inside values, a null as `null`;
* a Kafka Date/Time/Timestamp (`java.util.Date`) by `Values.dateFormatFor`: `HH:mm:ss.SSS'Z'`
  below one day of millis, `yyyy-MM-dd` on whole days, else `yyyy-MM-dd'T'HH:mm:ss.SSS'Z'`
  (in UTC: Java formats in the worker's default zone, UTC on a Connect deployment that follows
  the `Z` it prints).

Doubles are written with the shortest digits that round-trip (`repr`), as Java 19 and later do;
Java 17's `Double.toString` prints more digits for a few values (JDK-4511638).

Reading is `Values.parseString` for the forms these writers produce: `null`, `true`/`false`,
integers and decimals, and arrays and maps in JSON syntax; anything else is the text itself
(a string), as Kafka falls back to.  Kafka also infers Date/Time/Timestamp from text of exactly
that layout; `parse_string` does the same for the top-level value.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import re
import struct
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import orjson

from headwater.connect.logical import DATE, DECIMAL, TIME, TIMESTAMP, epoch_millis
from headwater.model.schema import (
    ARRAY,
    BYTES,
    FLOAT32,
    FLOAT64,
    MAP,
    STRUCT,
    ConnectSchema,
)

__all__ = ["convert_to_string", "java_double", "java_float", "parse_string"]

_DAY_MS = 86_400_000
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _java_decimal_text(digits: str, exponent: int, negative: bool) -> str:
    """Java's `Double.toString` layout of the decimal `0.digits * 10**exponent` (digits
    without leading or trailing zeros): plain from 10^-3 up to 10^7, else `d.dddE<n>`."""
    sign = "-" if negative else ""
    sci = exponent - 1  # the exponent of the first digit
    if -3 <= sci < 7:
        if exponent <= 0:
            return f"{sign}0.{'0' * -exponent}{digits}"
        whole = digits[:exponent].ljust(exponent, "0")
        fraction = digits[exponent:] or "0"
        return f"{sign}{whole}.{fraction}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{sci}"


def _shortest(text: str) -> tuple[str, int]:
    """(significant digits, exponent) of a Python float/float32 shortest text like `1.5e-05`."""
    d = Decimal(text).normalize()
    _, digit_tuple, exp = d.as_tuple()
    assert isinstance(exp, int)
    digits = "".join(map(str, digit_tuple))
    return digits, exp + len(digits)


def _special(value: float) -> str | None:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    return None


def java_double(value: float) -> str:
    """Java's `Double.toString` (19+: the shortest digits that round-trip)."""
    special = _special(value)
    if special is not None:
        return special
    digits, exponent = _shortest(repr(abs(value)))
    return _java_decimal_text(digits, exponent, value < 0)


def java_float(value: float) -> str:
    """Java's `Float.toString` (19+): the shortest digits that round-trip through float32."""
    (single,) = struct.unpack("<f", struct.pack("<f", value))
    special = _special(single)
    if special is not None:
        return special
    magnitude = abs(single)
    for precision in range(1, 10):  # 9 digits always round-trip a float32
        text = f"{magnitude:.{precision - 1}e}"
        try:
            if struct.unpack("<f", struct.pack("<f", float(text)))[0] == magnitude:
                break
        except OverflowError:  # rounded up past the largest float32
            continue
    digits, exponent = _shortest(text)
    return _java_decimal_text(digits, exponent, single < 0)


def _millis(schema: ConnectSchema | None, value: Any) -> int | None:
    """Milliseconds since the epoch of a Kafka Date/Time/Timestamp value, else None."""
    if isinstance(value, dt.datetime):
        return epoch_millis(value)
    if isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days * _DAY_MS
    if isinstance(value, dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + (
            value.microsecond // 1000)
    name = schema.name if schema is not None else None
    if isinstance(value, int) and not isinstance(value, bool):
        if name == DATE:
            return value * _DAY_MS
        if name in (TIME, TIMESTAMP):
            return value
    return None


def _java_date(millis: int) -> str:
    """`Values.dateFormatFor(date).format(date)`, in UTC."""
    at = _EPOCH + dt.timedelta(milliseconds=millis)
    if millis < _DAY_MS:  # also before 1970: Java's rule, kept as it is
        return at.strftime("%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"
    if millis % _DAY_MS == 0:
        return f"{at.year:04d}-{at.month:02d}-{at.day:02d}"
    return (f"{at.year:04d}-{at.month:02d}-{at.day:02d}T" + at.strftime("%H:%M:%S.")
            + f"{at.microsecond // 1000:03d}Z")


def _decimal(schema: ConnectSchema | None, value: Any) -> Decimal | None:
    """A Connect Decimal's value; the capture may hand it already as JsonConverter's base64
    of the unscaled integer, which is decoded with the schema's scale."""
    if isinstance(value, Decimal):
        return value
    if (isinstance(value, str) and schema is not None and schema.name == DECIMAL
            and schema.type == BYTES):
        scale = int((schema.parameters or {}).get("scale", "0"))
        unscaled = int.from_bytes(base64.b64decode(value), "big", signed=True)
        sign = 1 if unscaled < 0 else 0
        return Decimal((sign, tuple(int(c) for c in str(abs(unscaled))), -scale))
    return None


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _append(out: list[str], schema: ConnectSchema | None, value: Any, embedded: bool) -> None:
    """`Values.append`: one value, `embedded` inside an array, map or struct."""
    if value is None:
        out.append("null")
        return
    if isinstance(value, bool):
        out.append("true" if value else "false")
        return
    kind = schema.type if schema is not None else None
    decimal = _decimal(schema, value)
    if decimal is not None:
        if not decimal.is_finite():
            raise TypeError(f"cannot write the decimal {decimal} (Java's BigDecimal has no "
                            "such value)")
        out.append(str(decimal))
        return
    if isinstance(value, float) or (kind in (FLOAT32, FLOAT64) and isinstance(value, int)):
        out.append(java_float(value) if kind == FLOAT32 else java_double(float(value)))
        return
    if isinstance(value, int):
        millis = _millis(schema, value)
        out.append(_java_date(millis) if millis is not None else str(value))
        return
    if isinstance(value, str):
        # (A BYTES value the capture hands as base64 text already is written as that text.)
        out.append(_quote(value) if embedded else value)
        return
    if isinstance(value, (bytes, bytearray, memoryview)):
        text = base64.b64encode(bytes(value)).decode("ascii")
        out.append(f'"{text}"' if embedded else text)
        return
    if isinstance(value, (list, tuple)):
        items = schema.items if schema is not None and kind == ARRAY else None
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _append(out, items, item, True)
        out.append("]")
        return
    if isinstance(value, Mapping):
        out.append("{")
        if schema is not None and kind == STRUCT:
            for i, f in enumerate(schema.fields):
                if i:
                    out.append(",")
                out.append(_quote(f.name) + ":")
                _append(out, f.schema, value.get(f.name), True)
        else:
            keys = schema.keys if schema is not None and kind == MAP else None
            values = schema.values if schema is not None and kind == MAP else None
            for i, (k, v) in enumerate(value.items()):
                if i:
                    out.append(",")
                _append(out, keys, k, True)
                out.append(":")
                _append(out, values, v, True)
        out.append("}")
        return
    millis = _millis(schema, value)
    if millis is not None:
        out.append(_java_date(millis))
        return
    raise TypeError(f"Failed to serialize unexpected value type {type(value).__name__}: "
                    f"{value!r}")


def convert_to_string(schema: ConnectSchema | None, value: Any) -> str | None:
    """`Values.convertToString`: None for a null value."""
    if value is None:
        return None
    out: list[str] = []
    _append(out, schema, value, False)
    return "".join(out)


_TIME = re.compile(r"\d\d:\d\d:\d\d\.\d\d\dZ")
_DATE = re.compile(r"\d\d\d\d-\d\d-\d\d")
_TIMESTAMP = re.compile(r"\d\d\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\.\d\d\dZ")
_NUMBER = re.compile(r"[+-]?\d+(\.\d*)?([eE][+-]?\d+)?")  # Kafka: a digit or sign first


def _temporal(text: str) -> Any:
    try:
        if _TIMESTAMP.fullmatch(text):
            return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
        if _DATE.fullmatch(text):
            return dt.date.fromisoformat(text)
        if _TIME.fullmatch(text):
            return dt.datetime.strptime(text, "%H:%M:%S.%fZ").time()
    except ValueError:
        return None
    return None


def parse_string(text: str) -> Any:
    """`Values.parseString` for the layouts above: the value Kafka's SimpleHeaderConverter
    reads from a header's text (the text itself when it is no other value)."""
    stripped = text.strip()
    if stripped == "null":
        return None
    if stripped in ("true", "false"):
        return stripped == "true"
    if _NUMBER.fullmatch(stripped):
        number = Decimal(stripped)
        if number == number.to_integral_value() and "." not in stripped and (
                "e" not in stripped.lower()):
            return int(number)
        return float(number)
    temporal = _temporal(stripped)
    if temporal is not None:
        return temporal
    if stripped[:1] in ("{", "["):
        try:
            return orjson.loads(stripped)
        except orjson.JSONDecodeError:
            return text
    return text
