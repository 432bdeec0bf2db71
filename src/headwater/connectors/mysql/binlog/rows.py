"""Row image decoding: the bytes of WRITE/UPDATE/DELETE_ROWS events to natural values.

Why code generation
-------------------
Decoding row images is the hot loop of a binlog reader (a pure-Python generic decoder, such
as `mysql-replication`'s, manages 30-50k rows/s here).  Everything that depends only on the
table (column types, metadata, signedness, charsets, ENUM/SET members, which columns an image
carries) is known once per TABLE_MAP, so `RowDecoder` generates the source of one function
per column-presence bitmap, specialised to the table, and `exec`s it once:

- no per-value dispatch: each column becomes a few inline statements;
- a row without NULLs (the common case) takes a fast path in which runs of fixed-width columns
  are read with one precompiled `struct.Struct.unpack_from` at constant offsets;
- rows with NULLs take a general path that tests one bit of the NULL bitmap per column;
- DECIMAL, temporal and ENUM/SET conversions call small closures specialised per column
  (precision/scale, fsp, member tuple), which keeps the generated code short; DECIMAL and
  temporal values are memoised per column by their raw bytes (a dict hit costs far less than
  building a Decimal or datetime, and tables repeat such values a lot).

Compiled functions are cached by the TABLE_MAP signature and the `MySqlTable`, so the
TABLE_MAP that precedes every statement costs one dict lookup.

Values follow the natural value contract of `headwater.connectors.mysql.columns`; columns an
image does not carry (``binlog_row_image=MINIMAL/NOBLOB``) are `ABSENT`.  When a `MySqlTable`
is given (the schema history's version of the table), it decides names, unsigned, charsets
and ENUM/SET members; otherwise the TABLE_MAP optional metadata does.
"""

from __future__ import annotations

import datetime as _dt
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final, NamedTuple

from headwater.connectors.mysql.binlog import events as ev
from headwater.connectors.mysql.binlog.charsets import (
    BINARY_COLLATION,
    charset_of_collation,
    codec_for_charset,
)
from headwater.connectors.mysql.binlog.jsonb import decode_json_binary
from headwater.connectors.mysql.columns import ZERO_TEMPORAL, MySqlTable
from headwater.model.record import ABSENT

__all__ = ["ColumnSpec", "RowDecodeError", "RowDecoder", "column_specs"]


class RowDecodeError(ev.BinlogFormatError):
    """Row images that do not match the table (corrupt bytes or an out-of-date schema)."""


_BYTES_TYPES: Final = frozenset({"BINARY", "VARBINARY", "BLOB", "TINYBLOB", "MEDIUMBLOB",
                                 "LONGBLOB", "GEOMETRY", "POINT", "LINESTRING", "POLYGON",
                                 "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON",
                                 "GEOMETRYCOLLECTION", "GEOMCOLLECTION", "BIT", "UUID", "INET4",
                                 "INET6"})
# MariaDB's UUID/INET4/INET6 travel as fixed-length binary strings whose trailing zero bytes
# the server strips, like BINARY(n)'s: restored to the type's width.
_FIXED_BINARY_WIDTH: Final = {"UUID": 16, "INET4": 4, "INET6": 16}


class ColumnSpec(NamedTuple):
    """What the decoder needs of one column, resolved from TABLE_MAP and MySqlTable."""

    name: str
    type_code: int  # the real type (ENUM/SET unhidden from STRING)
    meta: int  # TableMap.column_meta
    unsigned: bool
    codec: str | None  # Python codec for text, None for bytes
    members: tuple[str, ...] | None  # ENUM/SET
    pad_to: int  # BINARY(n): the server strips trailing spaces in the binlog; 0 = no padding


def column_specs(table_map: ev.TableMap, table: MySqlTable | None) -> list[ColumnSpec]:
    """Resolves every column of a TABLE_MAP, preferring the schema history's table."""
    count = len(table_map.column_types)
    if table is not None and len(table.columns) != count:
        raise RowDecodeError(
            f"TABLE_MAP of {table_map.database}.{table_map.table} has {count} columns, the "
            f"schema history's table has {len(table.columns)}: the history is out of date")
    specs = []
    for i in range(count):
        t = ev.real_type(table_map.column_types[i], table_map.column_meta[i])
        meta = table_map.column_meta[i]
        if table is not None:
            col = table.columns[i]
            name, unsigned = col.name, col.unsigned
            members: tuple[str, ...] | None = col.members or None
            if col.type_name in _BYTES_TYPES or (col.charset or "").lower() == "binary":
                codec: str | None = None
            else:
                codec = codec_for_charset(col.charset or table.default_charset)
            pad = ((col.length or 0) if col.type_name == "BINARY"
                   else _FIXED_BINARY_WIDTH.get(col.type_name, 0))
        else:
            name = table_map.column_names[i] if table_map.column_names else f"col{i}"
            unsigned = bool(table_map.unsigned and table_map.unsigned[i])
            members = None
            if t == ev.T_ENUM and table_map.enum_values:
                members = table_map.enum_values[i]
            elif t == ev.T_SET and table_map.set_values:
                members = table_map.set_values[i]
            coll = table_map.collations[i] if table_map.collations else None
            if coll is not None:
                codec = None if coll == BINARY_COLLATION else codec_for_charset(
                    charset_of_collation(coll))
            else:  # no metadata: VARCHAR/CHAR as UTF-8 text, BLOB family as bytes
                codec = "utf-8" if t in (ev.T_VARCHAR, ev.T_VAR_STRING, ev.T_STRING) else None
            # BINARY(n): STRING with the binary collation; its metadata holds n.
            pad = _string_max_length(meta) if t == ev.T_STRING and coll == BINARY_COLLATION \
                else 0
        if t == ev.T_JSON:
            codec = "utf-8"
        specs.append(ColumnSpec(name, t, meta, unsigned, codec, members, pad))
    return specs


def _string_max_length(meta: int) -> int:
    """CHAR/BINARY's byte length from STRING's metadata (bits 8-9 of it hide, inverted, in the
    real-type byte)."""
    return (((meta >> 4) & 0x300) ^ 0x300) + (meta & 0xFF)


# ---- value helpers (specialised per column by the factories below) ---------------------------

_EPOCH: Final = _dt.datetime(1970, 1, 1)
_DIG2BYTES: Final = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_datetime = _dt.datetime
_date = _dt.date
_timedelta = _dt.timedelta


def _frac_bytes(fsp: int) -> int:
    return (fsp + 1) // 2


def _frac_mult(fsp: int) -> int:
    return (1, 10000, 10000, 100, 100, 1, 1)[fsp]


def make_date() -> Callable[[bytes], Any]:
    def date(b: bytes) -> Any:
        v = b[0] | b[1] << 8 | b[2] << 16
        d, m, y = v & 31, (v >> 5) & 15, v >> 9
        if not (d and m and y):
            return ZERO_TEMPORAL
        return _date(y, m, d)
    return date


def make_datetime2(fsp: int) -> Callable[[bytes], Any]:
    fb = _frac_bytes(fsp)
    shift = 8 * fb
    fmask = (1 << shift) - 1
    mult = _frac_mult(fsp)
    offset = 0x8000000000 << shift

    def datetime2(b: bytes) -> Any:
        x = int.from_bytes(b, "big") - offset
        us = (x & fmask) * mult
        x >>= shift
        ymd = x >> 17
        ym = ymd >> 5
        y, m, d = ym // 13, ym % 13, ymd & 31
        if not (d and m and y):
            return ZERO_TEMPORAL
        hms = x & 0x1FFFF
        return _datetime(y, m, d, hms >> 12, (hms >> 6) & 63, hms & 63, us)
    return datetime2


def make_timestamp2(fsp: int) -> Callable[[bytes], Any]:
    fb = _frac_bytes(fsp)
    mult = _frac_mult(fsp)

    def timestamp2(b: bytes) -> Any:
        s = int.from_bytes(b[:4], "big")
        us = int.from_bytes(b[4:], "big") * mult if fb else 0
        # The zero TIMESTAMP is 0 seconds: the epoch, as Debezium's RowDeserializers read it
        # (`ZonedDateTime.ofInstant(Instant.ofEpochSecond(0))`), not a zero date
        return _EPOCH + _timedelta(0, s, us)
    return timestamp2


def make_time2(fsp: int) -> Callable[[bytes], Any]:
    """TIME(fsp) in MySQL 5.6's format (`my_time_packed_from_binary`)."""
    def time2(b: bytes) -> Any:
        if fsp >= 5:
            packed = int.from_bytes(b, "big") - 0x800000000000
        else:
            intpart = int.from_bytes(b[:3], "big") - 0x800000
            if fsp == 0:
                frac = 0
            elif fsp <= 2:
                frac = b[3]
                if intpart < 0 and frac:
                    intpart += 1
                    frac -= 0x100
                frac *= 10000
            else:
                frac = b[3] << 8 | b[4]
                if intpart < 0 and frac:
                    intpart += 1
                    frac -= 0x10000
                frac *= 100
            packed = (intpart << 24) + frac
        neg = packed < 0
        if neg:
            packed = -packed
        hms, us = packed >> 24, packed & 0xFFFFFF
        td = _timedelta(hours=(hms >> 12) & 0x3FF, minutes=(hms >> 6) & 63, seconds=hms & 63,
                        microseconds=us)
        return -td if neg else td
    return time2


def _old_time(b: bytes) -> _dt.timedelta:
    v = int.from_bytes(b, "little", signed=True)
    neg = v < 0
    v = abs(v)
    td = _timedelta(hours=v // 10000, minutes=v // 100 % 100, seconds=v % 100)
    return -td if neg else td


def _old_datetime(b: bytes) -> Any:
    v = int.from_bytes(b, "little")
    d, t = divmod(v, 1000000)
    y, md = divmod(d, 10000)
    m, day = divmod(md, 100)
    if not (y and m and day):
        return ZERO_TEMPORAL
    return _datetime(y, m, day, t // 10000, t // 100 % 100, t % 100)


def _old_timestamp(b: bytes) -> Any:
    s = int.from_bytes(b, "little")
    return _EPOCH + _timedelta(0, s)  # the zero TIMESTAMP is the epoch (see timestamp2)


def make_decimal(precision: int, scale: int) -> tuple[int, Callable[[bytes], Decimal]]:
    """(size, decoder) of DECIMAL(precision, scale) in MySQL's binary format (`bin2decimal`).

    The value is the big-endian integer of the bytes, the sign in the top bit (1 = positive),
    all bits inverted for negative numbers; digits come in groups of 9 per 4 bytes, the first
    integer and last fraction groups shorter.
    """
    intg = precision - scale
    intg0, intg0x = divmod(intg, 9)
    frac0, frac0x = divmod(scale, 9)
    groups = ([(_DIG2BYTES[intg0x], intg0x)] if intg0x else []) + [(4, 9)] * (intg0 + frac0) \
        + ([(_DIG2BYTES[frac0x], frac0x)] if frac0x else [])
    size = sum(g[0] for g in groups)
    top = 1 << (8 * size - 1)
    mask = top - 1
    lines = ["def dec(b):", "    n = int.from_bytes(b, 'big')",
             "    if n & top:", "        n ^= top", "        s = ''",
             "    else:", "        n ^= mask", "        s = '-'", "    u = 0"]
    shift = 8 * size
    for nbytes, ndigits in groups:
        shift -= 8 * nbytes
        lines.append(f"    u = u * {10 ** ndigits} + ((n >> {shift}) & {(1 << 8 * nbytes) - 1})")
    lines.append(f"    return Decimal(s + str(u) + 'E-{scale}') if u else Decimal('0E-{scale}')")
    ns: dict[str, Any] = {"top": top, "mask": mask, "Decimal": Decimal}
    exec("\n".join(lines), ns)
    return size, ns["dec"]


def make_enum(members: tuple[str, ...] | None) -> Callable[[int], Any]:
    if members is None:
        return int
    table = ("", *members)

    def enum(i: int) -> Any:
        return table[i] if i < len(table) else ""
    return enum


def make_set(members: tuple[str, ...] | None) -> Callable[[int], Any]:
    if members is None:
        return int
    cache: dict[int, str] = {}

    def set_(mask: int) -> str:
        text = cache.get(mask)
        if text is None:
            text = ",".join(m for i, m in enumerate(members) if mask >> i & 1)
            if len(cache) < 4096:
                cache[mask] = text
        return text
    return set_


def make_bytes_pad(n: int) -> Callable[[bytes], bytes]:
    def pad(b: bytes) -> bytes:
        return b if len(b) >= n else b + b"\0" * (n - len(b))
    return pad


# ---- code generation -------------------------------------------------------------------------

# Per column; a full memo is cleared.  With at most _CACHE_SIZE cached decoders this bounds
# the memory (a few hundred bytes per entry) even for wide tables of distinct values.
MEMO_SIZE: Final = 4096


class _Memo(dict[bytes, Any]):
    """raw bytes -> natural value; a hit is one C-level subscript, a miss calls `fn`."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[bytes], Any]) -> None:
        super().__init__()
        self.fn = fn

    def __missing__(self, raw: bytes) -> Any:
        value = self.fn(raw)
        if len(self) >= MEMO_SIZE:
            self.clear()
        self[raw] = value
        return value

_INT_CODES: Final = {ev.T_TINY: "b", ev.T_SHORT: "h", ev.T_LONG: "i", ev.T_LONGLONG: "q"}


class _Col:
    """Generated-code pieces for one column: fixed size + struct code, or variable reader."""

    def __init__(self, spec: ColumnSpec, k: int, ns: dict[str, Any], lenient: bool) -> None:
        self.k = k
        self.lenient = lenient
        self.fixed: int | None = None  # byte size when fixed-width
        self.code = ""  # struct code for the fast path ('' when variable)
        self.post = "{r}"  # expression turning the raw value into the natural value
        self.post_lines: list[str] = []  # or statements assigning {v} from {r}
        self.lenbytes = 0  # variable width: bytes of the length prefix
        self.value = ""  # variable width: "vK = <expression of {raw}>"
        self._build(spec, ns)

    @property
    def identity(self) -> bool:
        return not self.post_lines and self.post == "{r}"

    def convert(self, raw: str, var: str) -> list[str]:
        """Statements assigning the natural value of the raw struct value `raw` to `var`."""
        if self.post_lines:
            return [line.format(v=var, r=raw) for line in self.post_lines]
        return [f"{var} = " + self.post.format(r=raw)]

    def _helper(self, ns: dict[str, Any], fn: Any) -> str:
        name = f"_h{self.k}"
        ns[name] = fn
        return name

    def _build(self, spec: ColumnSpec, ns: dict[str, Any]) -> None:
        t, meta = spec.type_code, spec.meta
        if t in _INT_CODES:
            code = _INT_CODES[t]
            self.code = code.upper() if spec.unsigned else code
            self.fixed = struct.calcsize("<" + code)
        elif t == ev.T_INT24:
            self.fixed, self.code = 3, "3s"
            self.post = f"_ifb({{r}}, 'little', signed={not spec.unsigned})"
        elif t == ev.T_FLOAT:
            self.fixed, self.code = 4, "f"
        elif t == ev.T_DOUBLE:
            self.fixed, self.code = 8, "d"
        elif t == ev.T_YEAR:
            self.fixed, self.code = 1, "B"
            self.post = "({r} + 1900 if {r} else 0)"
        elif t in (ev.T_DATE, ev.T_NEWDATE):
            self._fixed_helper(3, make_date(), ns)
        elif t == ev.T_DATETIME2:
            self._fixed_helper(5 + _frac_bytes(meta), make_datetime2(meta), ns)
        elif t == ev.T_TIMESTAMP2:
            self._fixed_helper(4 + _frac_bytes(meta), make_timestamp2(meta), ns)
        elif t == ev.T_TIME2:
            self._fixed_helper(3 + _frac_bytes(meta), make_time2(meta), ns)
        elif t == ev.T_TIME:
            self._fixed_helper(3, _old_time, ns)
        elif t == ev.T_DATETIME:
            self._fixed_helper(8, _old_datetime, ns)
        elif t == ev.T_TIMESTAMP:
            self._fixed_helper(4, _old_timestamp, ns)
        elif t == ev.T_NEWDECIMAL:
            size, fn = make_decimal(meta >> 8, meta & 0xFF)
            self._fixed_helper(size, fn, ns)
        elif t == ev.T_BIT:
            nbytes = (meta + 7) // 8
            self.fixed, self.code = nbytes, f"{nbytes}s"
        elif t == ev.T_NULL:
            self.fixed, self.code, self.post = 0, "0s", "None"
        elif t in (ev.T_ENUM, ev.T_SET):
            size = meta & 0xFF
            h = self._helper(ns, make_enum(spec.members) if t == ev.T_ENUM
                             else make_set(spec.members))
            self.fixed, self.code = size, {1: "B", 2: "H", 4: "I", 8: "Q"}.get(size, f"{size}s")
            if self.code.endswith("s"):
                self.post = f"{h}(_ifb({{r}}, 'little'))"
            else:
                self.post = f"{h}({{r}})"
        elif t in (ev.T_VARCHAR, ev.T_VAR_STRING, ev.T_STRING):
            maxlen = _string_max_length(meta) if t == ev.T_STRING else meta
            self._var(1 if maxlen < 256 else 2, spec, ns)
        elif t in (ev.T_BLOB, ev.T_TINY_BLOB, ev.T_MEDIUM_BLOB, ev.T_LONG_BLOB,
                   ev.T_GEOMETRY, ev.T_JSON):
            self._var(meta, spec, ns)
        else:
            raise RowDecodeError(
                f"column {spec.name!r}: MySQL type code {t} is not supported in row images")

    def _fixed_helper(self, size: int, fn: Any, ns: dict[str, Any]) -> None:
        """A fixed-width value converted by `fn(raw bytes)`, memoised per column.

        Converting DECIMAL and temporal values costs microseconds while a dict lookup costs
        tens of nanoseconds, and real tables repeat such values a lot (prices, dates, the
        NOW() of a bulk statement); the values are immutable, so sharing them is safe.
        """
        self.fixed, self.code = size, f"{size}s"
        ns[f"_m{self.k}"] = _Memo(fn)
        self.post = f"_m{self.k}[{{r}}]"

    def _var(self, lenbytes: int, spec: ColumnSpec, ns: dict[str, Any]) -> None:
        k = self.k
        if not 1 <= lenbytes <= 4:
            raise RowDecodeError(f"column {spec.name!r}: length prefix of {lenbytes} bytes")
        self.lenbytes = lenbytes
        raw = "{raw}"
        if spec.type_code == ev.T_JSON:
            value = f"{self._helper(ns, decode_json_binary)}({raw})"
        elif spec.codec == "utf-8":
            # Strict UTF-8 without arguments is the fastest decode; invalid bytes (which the
            # server should not let in) make decode() switch to the lenient variant.
            value = f"{raw}.decode('utf-8', 'replace')" if self.lenient else f"{raw}.decode()"
        elif spec.codec is not None:
            value = f"{self._helper(ns, decoder_for_charset_codec(spec.codec))}({raw})"
        elif spec.pad_to:
            value = f"{self._helper(ns, make_bytes_pad(spec.pad_to))}({raw})"
        else:
            value = raw
        self.value = f"v{k} = {value}"

    def var_code(self, off: int, skip: bool) -> list[str]:
        """Reads the value at ``pos + off`` and sets pos after it (`e` is where it ends)."""
        def at(i: int) -> str:
            return f"pos + {off + i}" if off + i else "pos"
        n = self.lenbytes
        if n == 1:
            end = f"e = {at(1)} + data[{at(0)}]"
        elif n == 2:
            end = f"e = {at(2)} + (data[{at(0)}] | data[{at(1)}] << 8)"
        else:
            end = f"e = {at(n)} + _ifb(data[{at(0)}:{at(n)}], 'little')"
        if skip:
            return [end, "pos = e"]
        return [end, self.value.format(raw=f"data[{at(n)}:e]"), "pos = e"]


def decoder_for_charset_codec(codec: str) -> Callable[[bytes], str]:
    import codecs

    dec = codecs.lookup(codec).decode
    return lambda b: dec(b, "replace")[0]


def _image_code(cols: list[_Col], present: list[int], count: int, prefix: str,
                ns: dict[str, Any], skip: bool) -> list[str]:
    """Statements decoding one row image at `pos` into v0..v{count-1} (ABSENT if missing)."""
    nb = (len(present) + 7) // 8
    read = "data[pos]" if nb == 1 else f"_ifb(data[pos:pos + {nb}], 'little')"
    lines = [f"nulls = {read}"]
    # Fast path: no NULLs.  Runs of fixed-width columns -> one struct each, read at constant
    # offsets from `pos`, which moves only past variable-width values and at the row's end.
    fast: list[str] = []
    run: list[_Col] = []
    off = nb

    def flush() -> None:
        nonlocal off
        if not run:
            return
        fmt = "<" + "".join(c.code for c in run)
        size = struct.calcsize(fmt)
        where = f"pos + {off}" if off else "pos"
        off += size
        if not skip:
            name = f"_s{prefix}{run[0].k}"
            ns[name] = struct.Struct(fmt).unpack_from
            # Values that need no conversion are unpacked straight into their variable.
            names = [f"v{c.k}" if c.identity else f"r{c.k}" for c in run]
            fast.append(f"{', '.join(names)}{',' if len(names) == 1 else ''} = "
                        f"{name}(data, {where})")
            for c in run:
                if not c.identity:
                    fast.extend(c.convert(f"r{c.k}", f"v{c.k}"))
        run.clear()

    for idx in present:
        c = cols[idx]
        if c.fixed is not None:
            run.append(c)
        else:
            flush()
            fast.extend(c.var_code(off, skip))
            off = 0
    flush()
    if off:
        fast.append(f"pos += {off}")
    # General path: one NULL bit per present column.
    general: list[str] = [f"pos += {nb}"]
    for bit, idx in enumerate(present):
        c = cols[idx]
        general.append(f"if nulls & {1 << bit}:")
        if not skip:
            general.append(f"    v{idx} = None")
        else:
            general.append("    pass")
        general.append("else:")
        if c.fixed is not None:
            if skip:
                general.append(f"    pos += {c.fixed}")
                continue
            name = f"_u{c.k}"
            ns[name] = struct.Struct("<" + c.code).unpack_from
            general.append(f"    r{idx}, = {name}(data, pos)")
            general.extend("    " + x for x in c.convert(f"r{idx}", f"v{idx}"))
            general.append(f"    pos += {c.fixed}")
        else:
            general.extend("    " + x for x in c.var_code(0, skip))
    lines.append("if not nulls:")
    lines.extend("    " + x for x in fast or ["pass"])
    lines.append("else:")
    lines.extend("    " + x for x in general or ["pass"])
    if not skip:
        missing = sorted(set(range(count)) - set(present))
        lines.extend(f"v{i} = ABSENT" for i in missing)
    return lines


def _bits(mask: int, count: int) -> list[int]:
    return [i for i in range(count) if mask >> i & 1]


class RowDecoder:
    """Decodes the rows events of one table version (one TABLE_MAP + optional MySqlTable).

    `decode(event)`: WRITE/DELETE -> list of row tuples in column order; UPDATE -> list of
    (before, after) pairs.  `count(event)`: the number of rows (or pairs), skipping values
    without converting them, for a connector that must skip rows it already emitted.
    """

    def __init__(self, table_map: ev.TableMap, table: MySqlTable | None = None) -> None:
        self.table_map = table_map
        self.table = table
        self.specs = column_specs(table_map, table)
        self.column_names = tuple(s.name for s in self.specs)
        self._fns: dict[tuple[int, int | None, bool, bool], Callable[..., Any]] = {}
        self._variants: dict[bool, tuple[dict[str, Any], list[_Col]]] = {}

    def _variant(self, lenient: bool) -> tuple[dict[str, Any], list[_Col]]:
        if lenient not in self._variants:
            ns: dict[str, Any] = {"_ifb": int.from_bytes, "ABSENT": ABSENT,
                                  "RowDecodeError": RowDecodeError}
            cols = [_Col(s, k, ns, lenient) for k, s in enumerate(self.specs)]
            self._variants[lenient] = (ns, cols)
        return self._variants[lenient]

    def _compile(self, present: int, after: int | None, skip: bool,
                 lenient: bool) -> Callable[..., Any]:
        ns, cols = self._variant(lenient)
        count = len(cols)
        one = _image_code(cols, _bits(present, count), count, "a", ns, skip)
        tup = "(" + ", ".join(f"v{i}" for i in range(count)) + ",)"
        body = ["def rows(data, pos, end):", "    out = []", "    append = out.append",
                "    while pos < end:"]
        body.extend("        " + x for x in one)
        if after is not None:
            if not skip:
                body.append(f"        before = {tup}")
            two = _image_code(cols, _bits(after, count), count, "b", ns, skip)
            body.extend("        " + x for x in two)
            body.append("        append(1)" if skip else f"        append((before, {tup}))")
        else:
            body.append("        append(1)" if skip else f"        append({tup})")
        body.append("    if pos != end:")
        body.append("        raise RowDecodeError(f'row images overrun the event by "
                    "{pos - end} bytes')")
        body.append("    return out")
        source = "\n".join(body)
        exec(compile(source, f"<rows {self.table_map.database}.{self.table_map.table}>",
                     "exec"), ns)
        fn: Callable[..., Any] = ns["rows"]
        self._fns[(present, after, skip, lenient)] = fn
        return fn

    def decode(self, event: ev.RowsEvent) -> list[Any]:
        key = (event.columns_present, event.columns_present_after, False, False)
        fn = self._fns.get(key) or self._compile(*key)
        try:
            try:
                rows: list[Any] = fn(event.data, event.rows_start, event.rows_end)
            except UnicodeDecodeError:
                key = (event.columns_present, event.columns_present_after, False, True)
                fn = self._fns.get(key) or self._compile(*key)
                rows = fn(event.data, event.rows_start, event.rows_end)
        except (IndexError, struct.error, ValueError, OverflowError) as exc:
            if isinstance(exc, RowDecodeError):
                raise
            raise RowDecodeError(
                f"rows event of {self.table_map.database}.{self.table_map.table} does not "
                f"match its TABLE_MAP: {exc}") from None
        return rows

    def count(self, event: ev.RowsEvent) -> int:
        key = (event.columns_present, event.columns_present_after, True, False)
        fn = self._fns.get(key) or self._compile(*key)
        try:
            return len(fn(event.data, event.rows_start, event.rows_end))
        except (IndexError, struct.error) as exc:
            raise RowDecodeError(f"rows event does not match its TABLE_MAP: {exc}") from None


_CACHE_SIZE: Final = 256
_CACHE: dict[tuple[bytes, MySqlTable | None], RowDecoder] = {}


def row_decoder(table_map: ev.TableMap, table: MySqlTable | None = None) -> RowDecoder:
    """A cached `RowDecoder`: the same table definition (TABLE_MAP signature + MySqlTable)
    reuses the compiled functions, so the TABLE_MAP before each statement costs a lookup."""
    key = (table_map.signature, table)
    dec = _CACHE.get(key)
    if dec is None:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        dec = _CACHE[key] = RowDecoder(table_map, table)
    return dec
