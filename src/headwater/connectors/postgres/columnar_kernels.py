"""Compiled (numba) kernels of the column-wise snapshot: COPY text in, event JSON bytes out.

A chunk of ``COPY ... TO STDOUT`` text (whole lines) is scanned once into field boundaries
(`scan`); every value of a column whose kind has a kernel is then rendered straight from those
bytes to the JSON text Debezium's event holds, and each row's key and value are assembled from
the table's constant pieces (rendered once per table by the format itself) and those values
(`assemble`).  A value a kernel does not handle (a BC date, a numeric beyond 18 digits, a
boolean that is not ``t``/``f``...) is reported by `check` and rendered by the column's Python
converter instead (snapshot_columnar.py), so a kernel only ever has to be exact on the forms it
accepts.  What each kind renders, and which column gets which kind: columnar_kinds.py.

The renderers reproduce, byte for byte, what the row-wise path writes: the converter in
types/ and convert/decimal.py, then orjson (``json_default`` for bytes).  Kernels never raise:
-1 means "not handled here".
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from headwater.connectors.postgres.columnar_kinds import (
    BOOL,
    BYTEA,
    BYTEA_BASE64_URL,
    BYTEA_HEX,
    DATE,
    DECIMAL,
    DECIMAL_STRING,
    FALLBACK,
    INT,
    STRING,
    TIME_MICROS,
    TIME_MILLIS,
    TIMESTAMP_MICROS,
    TIMESTAMP_MILLIS,
    VSD,
    ZONED_TIMESTAMP,
)

_TAB, _NL, _BSL, _QUOTE = 9, 10, 92, 34
_MINUS, _DOT, _COLON, _SPACE, _PLUS = 45, 46, 58, 32, 43
_B64 = np.frombuffer(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", dtype=np.uint8).copy()
_B64_URL = np.frombuffer(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", dtype=np.uint8).copy()
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8).copy()


def _const(text: bytes) -> Any:
    return np.frombuffer(text, dtype=np.uint8).copy()


_NULL = _const(b"null")
_TRUE = _const(b"true")
_FALSE = _const(b"false")
_VSD_SCALE = _const(b'{"scale":')
_VSD_VALUE = _const(b',"value":"')
# A value's rendering is at most this many bytes per source byte plus _SLACK (a string of
# control characters: 6 bytes each as \u00XX).
GROWTH = 6
SLACK = 64


@njit(cache=True)
def _copy(src: Any, s: int, e: int, out: Any, p: int) -> int:
    # An index loop: LLVM vectorizes it (about 15x faster here than a slice assignment).
    n = e - s
    for i in range(n):
        out[p + i] = src[s + i]
    return p + n


@njit(cache=True)
def scan(buf: Any, nfields: int, starts: Any, ends: Any) -> int:
    """Field boundaries of every line of `buf` (whole lines, each ending with a newline) into
    starts/ends [row, field]; the number of rows, or -(row + 1) of a line whose field count is
    not `nfields`."""
    n = buf.shape[0]
    row = 0
    field = 0
    start = 0
    for i in range(n):
        c = buf[i]
        if c == _TAB or c == _NL:  # noqa: PLR1714, SIM109 (plain compiled comparisons)
            if field >= nfields:
                return -(row + 1)
            starts[row, field] = start
            ends[row, field] = i
            field += 1
            start = i + 1
            if c == _NL:
                if field != nfields:
                    return -(row + 1)
                row += 1
                field = 0
    return row


@njit(cache=True)
def _is_null(buf: Any, s: int, e: int) -> bool:
    return e - s == 2 and buf[s] == _BSL and buf[s + 1] == 78  # \N


@njit(cache=True)
def _digits(buf: Any, s: int, e: int) -> bool:
    if s >= e:
        return False
    for i in range(s, e):  # noqa: SIM110 (a compiled loop, no generator)
        if buf[i] < 48 or buf[i] > 57:
            return False
    return True


@njit(cache=True)
def _number(buf: Any, s: int, e: int) -> int:
    v = 0
    for i in range(s, e):
        v = v * 10 + (buf[i] - 48)
    return v


@njit(cache=True)
def _write_int(v: int, out: Any, p: int) -> int:
    if v < 0:
        out[p] = _MINUS
        p += 1
        # -v overflows only for INT64_MIN, which no kernel produces (values stay below 10^18).
        v = -v
    if v == 0:
        out[p] = 48
        return p + 1
    n = 0
    t = v
    while t > 0:
        t //= 10
        n += 1
    for k in range(n - 1, -1, -1):
        out[p + k] = 48 + v % 10
        v //= 10
    return p + n


@njit(cache=True)
def _b64(data: Any, n: int, alphabet: Any, out: Any, p: int) -> int:
    """Base64 with '=' padding of data[:n] (as Java's encoders and Python's b64encode)."""
    i = 0
    while i + 3 <= n:
        v = (np.int64(data[i]) << 16) | (np.int64(data[i + 1]) << 8) | np.int64(data[i + 2])
        out[p] = alphabet[(v >> 18) & 63]
        out[p + 1] = alphabet[(v >> 12) & 63]
        out[p + 2] = alphabet[(v >> 6) & 63]
        out[p + 3] = alphabet[v & 63]
        p += 4
        i += 3
    rest = n - i
    if rest == 1:
        v = np.int64(data[i]) << 16
        out[p] = alphabet[(v >> 18) & 63]
        out[p + 1] = alphabet[(v >> 12) & 63]
        out[p + 2] = 61
        out[p + 3] = 61
        p += 4
    elif rest == 2:
        v = (np.int64(data[i]) << 16) | (np.int64(data[i + 1]) << 8)
        out[p] = alphabet[(v >> 18) & 63]
        out[p + 1] = alphabet[(v >> 12) & 63]
        out[p + 2] = alphabet[(v >> 6) & 63]
        out[p + 3] = 61
        p += 4
    return p


@njit(cache=True)
def _unscaled_b64(v: int, out: Any, p: int) -> int:
    """Base64 of Java BigInteger.toByteArray() of v: minimal big-endian two's complement."""
    magnitude = v if v >= 0 else ~v
    bits = 0
    while magnitude > 0:
        magnitude >>= 1
        bits += 1
    n = bits // 8 + 1
    raw = np.empty(8, dtype=np.uint8)
    for k in range(n):
        raw[n - 1 - k] = (v >> (8 * k)) & 0xFF
    return _b64(raw, n, _B64, out, p)


@njit(cache=True)
def _plain_decimal(buf: Any, s: int, e: int) -> tuple[bool, bool, int, int, int, int]:
    """[-]digits[.digits] of at most 18 digits: (ok, negative, int start, dot, end, digits)."""
    neg = buf[s] == _MINUS
    i = s + 1 if neg else s
    dot = -1
    count = 0
    for k in range(i, e):
        c = buf[k]
        if c == _DOT:
            if dot >= 0:
                return False, neg, i, dot, e, 0
            dot = k
        elif 48 <= c <= 57:
            count += 1
        else:
            return False, neg, i, dot, e, 0
    if count == 0 or count > 18 or dot == i or dot == e - 1:
        return False, neg, i, dot, e, 0
    return True, neg, i, dot, e, count


@njit(cache=True)
def _digits_value(buf: Any, s: int, e: int, skip: int) -> int:
    v = 0
    for k in range(s, e):
        if k != skip:
            v = v * 10 + (buf[k] - 48)
    return v


@njit(cache=True)
def _decimal(buf: Any, s: int, e: int, scale: int, out: Any, p: int) -> int:
    ok, neg, i, dot, end, _ = _plain_decimal(buf, s, e)
    if not ok or (end - dot - 1 if dot >= 0 else 0) != scale:
        return -1
    v = _digits_value(buf, i, end, dot)
    out[p] = _QUOTE
    p = _unscaled_b64(-v if neg else v, out, p + 1)
    out[p] = _QUOTE
    return p + 1


@njit(cache=True)
def _vsd(buf: Any, s: int, e: int, out: Any, p: int) -> int:
    ok, neg, i, dot, end, _ = _plain_decimal(buf, s, e)
    if not ok:
        return -1
    last = end
    if dot >= 0:
        while last > dot + 1 and buf[last - 1] == 48:
            last -= 1
        scale = last - dot - 1
        if scale == 0:
            last = dot
    else:
        scale = 0
    v = _digits_value(buf, i, last, dot)
    p = _copy(_VSD_SCALE, 0, _VSD_SCALE.shape[0], out, p)
    p = _write_int(scale, out, p)
    p = _copy(_VSD_VALUE, 0, _VSD_VALUE.shape[0], out, p)
    p = _unscaled_b64(-v if neg else v, out, p)
    out[p] = _QUOTE
    out[p + 1] = 125  # }
    return p + 2


@njit(cache=True)
def _decimal_string(buf: Any, s: int, e: int, scale: int, out: Any, p: int) -> int:
    """BigDecimal.toString() where it is the text itself: plain notation (adjusted exponent
    >= -6) and not a negative zero; scientific notation goes to the converter."""
    ok, neg, i, dot, end, _ = _plain_decimal(buf, s, e)
    if not ok:
        return -1
    fraction = end - dot - 1 if dot >= 0 else 0
    if scale >= 0 and fraction != scale:
        return -1
    first = -1  # the first non-zero digit
    for k in range(i, end):
        if k != dot and buf[k] != 48:
            first = k
            break
    if first < 0:
        if neg:
            return -1
        coefficient = 1
    else:
        coefficient = end - first - (1 if dot > first else 0)
    if coefficient - 1 - fraction < -6:
        return -1
    out[p] = _QUOTE
    p += 1
    for k in range(s, e):
        out[p] = buf[k]
        p += 1
    out[p] = _QUOTE
    return p + 1


@njit(cache=True)
def _days(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil)."""
    y = year - 1 if month <= 2 else year
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    mp = month - 3 if month > 2 else month + 9
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


@njit(cache=True)
def _valid_date(year: int, month: int, day: int) -> bool:
    if year < 1 or month < 1 or month > 12 or day < 1:
        return False
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return day <= (29 if leap else 28)
    if month == 4 or month == 6 or month == 9 or month == 11:  # noqa: PLR1714 (plain compiled comparisons)
        return day <= 30
    return day <= 31


@njit(cache=True)
def _date_days(buf: Any, s: int) -> int:
    """Days of YYYY-MM-DD at s, or -2**40 when it is not a valid four-digit-year date."""
    if (buf[s + 4] != _MINUS or buf[s + 7] != _MINUS or not _digits(buf, s, s + 4)
            or not _digits(buf, s + 5, s + 7) or not _digits(buf, s + 8, s + 10)):
        return -(1 << 40)
    year = _number(buf, s, s + 4)
    month = _number(buf, s + 5, s + 7)
    day = _number(buf, s + 8, s + 10)
    if not _valid_date(year, month, day):
        return -(1 << 40)
    return _days(year, month, day)


@njit(cache=True)
def _time_micros(buf: Any, s: int, e: int) -> int:
    """Microseconds of HH:MM:SS[.f{1,6}] filling [s, e), or -1."""
    n = e - s
    if n < 8 or buf[s + 2] != _COLON or buf[s + 5] != _COLON:
        return -1
    if not (_digits(buf, s, s + 2) and _digits(buf, s + 3, s + 5) and _digits(buf, s + 6, s + 8)):
        return -1
    hour = _number(buf, s, s + 2)
    minute = _number(buf, s + 3, s + 5)
    second = _number(buf, s + 6, s + 8)
    if minute > 59 or second > 59 or hour > 24:
        return -1
    micros = 0
    if n > 8:
        if buf[s + 8] != _DOT or n > 15 or n == 9 or not _digits(buf, s + 9, e):
            return -1
        micros = _number(buf, s + 9, e)
        for _ in range(15 - n):
            micros *= 10
    total = ((hour * 60 + minute) * 60 + second) * 1_000_000 + micros
    if hour == 24 and total != 86_400_000_000:
        return -1
    return total


@njit(cache=True)
def _timestamp_micros(buf: Any, s: int, e: int) -> tuple[bool, int]:
    if e - s < 19 or buf[s + 10] != _SPACE:
        return False, 0
    days = _date_days(buf, s)
    if days == -(1 << 40):
        return False, 0
    tod = _time_micros(buf, s + 11, e)
    if tod < 0 or tod >= 86_400_000_000:
        return False, 0
    return True, days * 86_400_000_000 + tod


@njit(cache=True)
def _zoned(buf: Any, s: int, e: int, width: int, out: Any, p: int) -> int:
    """types.zoned_timestamp_converter's fast path: UTC text (+00) moved into ISO form."""
    n = e - s
    full = 23 + width
    if n < 22 or n > full or buf[s + 4] != _MINUS or buf[e - 3] != _PLUS or buf[e - 2] != 48 \
            or buf[e - 1] != 48:
        return -1
    if width == 0 and n != 22:  # convert_iso copies whatever precedes +00; keep to plain
        return -1
    out[p] = _QUOTE
    p += 1
    for k in range(10):
        out[p + k] = buf[s + k]
    out[p + 10] = 84  # T
    p += 11
    if width == 0 or n == full:
        for k in range(s + 11, e - 3):
            out[p] = buf[k]
            p += 1
    else:
        for k in range(s + 11, s + 19):
            out[p] = buf[k]
            p += 1
        out[p] = _DOT
        p += 1
        have = e - 3 - (s + 20) if n > 22 else 0
        for k in range(width):
            out[p] = buf[s + 20 + k] if k < have else 48
            p += 1
    out[p] = 90  # Z
    out[p + 1] = _QUOTE
    return p + 2


@njit(cache=True)
def _hex_nibble(c: int) -> int:
    if 48 <= c <= 57:
        return c - 48
    if 97 <= c <= 102:
        return c - 87
    if 65 <= c <= 70:
        return c - 55
    return -1


@njit(cache=True)
def _bytea(buf: Any, s: int, e: int, mode: int, out: Any, p: int) -> int:
    """bytea hex output (COPY doubles its backslash: \\\\x0102ff) in binary.handling.mode."""
    if e - s < 3 or buf[s] != _BSL or buf[s + 1] != _BSL or buf[s + 2] != 120 \
            or (e - s - 3) % 2:
        return -1
    n = (e - s - 3) // 2
    raw = np.empty(n, dtype=np.uint8)
    for k in range(n):
        hi = _hex_nibble(buf[s + 3 + 2 * k])
        lo = _hex_nibble(buf[s + 4 + 2 * k])
        if hi < 0 or lo < 0:
            return -1
        raw[k] = hi * 16 + lo
    out[p] = _QUOTE
    p += 1
    if mode == BYTEA_HEX:
        for k in range(n):
            out[p] = _HEX[raw[k] >> 4]
            out[p + 1] = _HEX[raw[k] & 15]
            p += 2
    else:
        p = _b64(raw, n, _B64_URL if mode == BYTEA_BASE64_URL else _B64, out, p)
    out[p] = _QUOTE
    return p + 1


@njit(cache=True)
def _json_char(c: int, out: Any, p: int) -> int:
    """One byte of a str as orjson escapes it (UTF-8 continuation bytes pass through)."""
    if c == _QUOTE or c == _BSL:  # noqa: PLR1714, SIM109 (plain compiled comparisons)
        out[p] = _BSL
        out[p + 1] = c
        return p + 2
    if c >= 0x20:
        out[p] = c
        return p + 1
    out[p] = _BSL
    if c == 8:
        out[p + 1] = 98  # b
    elif c == 9:
        out[p + 1] = 116  # t
    elif c == 10:
        out[p + 1] = 110  # n
    elif c == 12:
        out[p + 1] = 102  # f
    elif c == 13:
        out[p + 1] = 114  # r
    else:
        out[p + 1] = 117  # u00XX
        out[p + 2] = 48
        out[p + 3] = 48
        out[p + 4] = _HEX[c >> 4]
        out[p + 5] = _HEX[c & 15]
        return p + 6
    return p + 2


@njit(cache=True)
def _string(buf: Any, s: int, e: int, out: Any, p: int) -> int:
    """COPY text escapes undone (snapshot.parse_copy_line), then a JSON string."""
    out[p] = _QUOTE
    p += 1
    k = s
    while k < e:
        c = buf[k]
        if c == _BSL:
            if k + 1 >= e:
                return -1
            d = buf[k + 1]
            k += 2
            if d == 98:
                c = 8
            elif d == 102:
                c = 12
            elif d == 110:
                c = 10
            elif d == 114:
                c = 13
            elif d == 116:
                c = 9
            elif d == 118:
                c = 11
            elif d >= 0x80:  # an escaped multi-byte character: let Python decode it
                return -1
            else:
                c = d
        else:
            k += 1
        p = _json_char(c, out, p)
    out[p] = _QUOTE
    return p + 1


@njit(cache=True)
def render(kind: int, param: int, buf: Any, s: int, e: int, out: Any, p: int) -> int:
    """The JSON of the non-null value buf[s:e] of a column of `kind` written at out[p:]: the
    position after it, or -1 when the value is not one this kernel handles."""
    if kind == INT:
        first = s + 1 if e - s > 1 and buf[s] == _MINUS else s
        if not _digits(buf, first, e):
            return -1
        for k in range(s, e):
            out[p] = buf[k]
            p += 1
        return p
    if kind == STRING:
        return _string(buf, s, e, out, p)
    if kind == DECIMAL:
        return _decimal(buf, s, e, param, out, p)
    if kind == ZONED_TIMESTAMP:
        return _zoned(buf, s, e, param, out, p)
    if kind == BOOL:
        if e - s != 1:
            return -1
        if buf[s] == 116:  # t
            return _copy(_TRUE, 0, 4, out, p)
        if buf[s] == 102:  # f
            return _copy(_FALSE, 0, 5, out, p)
        return -1
    if kind == VSD:
        return _vsd(buf, s, e, out, p)
    if kind == DECIMAL_STRING:
        return _decimal_string(buf, s, e, param, out, p)
    if kind == DATE:
        if e - s != 10:
            return -1
        days = _date_days(buf, s)
        return -1 if days == -(1 << 40) else _write_int(days, out, p)
    if kind == TIME_MICROS or kind == TIME_MILLIS:  # noqa: PLR1714, SIM109 (plain compiled comparisons)
        micros = _time_micros(buf, s, e)
        if micros < 0:
            return -1
        return _write_int(micros if kind == TIME_MICROS else micros // 1000, out, p)
    if kind == TIMESTAMP_MICROS or kind == TIMESTAMP_MILLIS:  # noqa: PLR1714, SIM109 (plain compiled comparisons)
        ok, micros = _timestamp_micros(buf, s, e)
        if not ok:
            return -1
        return _write_int(micros if kind == TIMESTAMP_MICROS else micros // 1000, out, p)
    if kind == BYTEA:
        return _bytea(buf, s, e, param, out, p)
    return -1


@njit(cache=True)
def check(kinds: Any, params: Any, fields: Any, buf: Any, starts: Any, ends: Any,
          rows: int) -> Any:
    """[row, column] True where a value needs the Python converter (FALLBACK columns, and
    values a kernel does not handle); nulls never do."""
    ncols = kinds.shape[0]
    slow = np.zeros((rows, ncols), dtype=np.bool_)
    longest = 0
    for r in range(rows):
        for j in range(ncols):
            f = fields[j]
            longest = max(longest, ends[r, f] - starts[r, f])
    scratch = np.empty(GROWTH * longest + SLACK, dtype=np.uint8)
    for r in range(rows):
        for j in range(ncols):
            f = fields[j]
            s = starts[r, f]
            e = ends[r, f]
            if _is_null(buf, s, e):
                continue
            if kinds[j] == FALLBACK or render(kinds[j], params[j], buf, s, e, scratch, 0) < 0:
                slow[r, j] = True
    return slow


@njit(cache=True)
def assemble(kinds: Any, params: Any, fields: Any, buf: Any, starts: Any, ends: Any,
             rows: int, slow: Any, over: Any, over_off: Any,
             pieces: Any, piece_off: Any, key_cols: Any, key_pieces: Any, key_piece_off: Any,
             values: Any, value_off: Any, keys: Any, key_off: Any) -> None:
    """Every row's value (pieces[0], value 0, pieces[1], ..., pieces[ncols]) and key
    (key_pieces[0], key value 0, ...) into values/keys, row r at [value_off[r],
    value_off[r + 1]).  A slow value is copied from `over` (the converter's JSON, row by row
    and column by column in `over_off` order)."""
    ncols = kinds.shape[0]
    nkeys = key_cols.shape[0]
    vs = np.empty(ncols, dtype=np.int64)
    ve = np.empty(ncols, dtype=np.int64)
    p = 0
    q = 0
    o = 0
    for r in range(rows):
        value_off[r] = p
        key_off[r] = q
        for j in range(ncols):
            p = _copy(pieces, piece_off[j], piece_off[j + 1], values, p)
            vs[j] = p
            f = fields[j]
            s = starts[r, f]
            e = ends[r, f]
            if slow[r, j]:
                p = _copy(over, over_off[o], over_off[o + 1], values, p)
                o += 1
            elif _is_null(buf, s, e):
                p = _copy(_NULL, 0, 4, values, p)
            else:
                p = render(kinds[j], params[j], buf, s, e, values, p)
            ve[j] = p
        p = _copy(pieces, piece_off[ncols], piece_off[ncols + 1], values, p)
        if nkeys:
            for k in range(nkeys):
                q = _copy(key_pieces, key_piece_off[k], key_piece_off[k + 1], keys, q)
                q = _copy(values, vs[key_cols[k]], ve[key_cols[k]], keys, q)
            q = _copy(key_pieces, key_piece_off[nkeys], key_piece_off[nkeys + 1], keys, q)
    value_off[rows] = p
    key_off[rows] = q


def warm_up() -> None:
    """Compiles every kernel into numba's cache (or loads it from there), for the argument
    types `ColumnarTable.render` passes (read-only buffers where it passes bytes).  The first
    compilation takes one to three minutes on a small machine; set-up calls this
    (`python -m headwater.connectors.postgres.columnar_kernels`) so that a first snapshot does
    not spend that time while its callers wait for it.  One call covers every column kind:
    the kinds are data to one compiled function."""
    one = np.int64
    buf = np.frombuffer(b"7\tx\n", dtype=np.uint8)
    starts = np.empty((1, 2), dtype=one)
    ends = np.empty((1, 2), dtype=one)
    rows = scan(buf, 2, starts, ends)
    kinds = np.array([1, 3], dtype=one)  # INT, STRING (columnar_kinds)
    params = np.zeros(2, dtype=one)
    fields = np.arange(2, dtype=one)
    slow = check(kinds, params, fields, buf, starts, ends, rows)
    pieces = np.frombuffer(b"{a}", dtype=np.uint8)
    piece_off = np.array([0, 1, 2, 3], dtype=one)
    key_pieces = np.frombuffer(b"{}", dtype=np.uint8)
    values = np.empty(256, dtype=np.uint8)
    keys = np.empty(256, dtype=np.uint8)
    assemble(kinds, params, fields, buf, starts, ends, rows, slow,
             np.frombuffer(b"", dtype=np.uint8), np.zeros(1, dtype=one), pieces, piece_off,
             np.array([0], dtype=one), key_pieces, np.array([0, 1, 2], dtype=one),
             values, np.empty(rows + 1, dtype=one), keys, np.empty(rows + 1, dtype=one))


if __name__ == "__main__":
    warm_up()
