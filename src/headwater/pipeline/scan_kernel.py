"""Compiled line scanner of topic log segments for the column-wise pipeline path.

The segment format (`headwater.topics.log`) is JSON lines of
``{"offset":N,"timestamp":T,"key":<key doc>,"value":<value doc>}``, where every data record of a
table version carries the same key schema and value schema text in front of its payloads.  Cut
out in Python, the payloads cost about 5 µs per record (a dozen bytecode operations per line,
two `bytes` objects per record); this scanner does the same walk in machine code (numba) and
returns positions in arrays.  Each line is first delimited with glibc's `memchr` and its schema
texts compared byte for byte with `memcmp` (a schema of the same length with another column type
must not slip through), both vectorised, and searches inside a line jump from brace to brace:
a byte loop over the ~2.5 KB line cost 1.7 µs per record, this ~0.3 µs, near the 0.25 µs it
takes to read the bytes once from the page cache (bench/pipeline_delta.py prints that floor).

It mirrors `columnar.scan`'s rules exactly: lines below the range's first offset are skipped,
the scan stops at the range's end, tombstones (``"value":null``) are skipped, and any other
layout stops with a status that the caller turns into `NotColumnar`.  It also checks the topic
log's own rules (`headwater.topics.check`) on the way, at no measurable cost since the offset is
parsed anyway: each line's offset is the previous one + 1 (else GAP), and a last line without
its newline is reported (TORN: the end of an in-progress segment, damage in a sealed one).  In a
compacted segment offsets may skip ahead inside its range (`limit`, the range's end): the same
compare, one more on a skip only, so a compacted segment scans at the same speed.  A line that
carries a checksum (`headwater.topics.checksum`) is checked by google-crc32c's C library,
called from the compiled code (`crc32c_extend`, the same code the writer uses); a mismatch
stops the scan (CHECKSUM: damage).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np
from llvmlite import binding as llvm_binding
from llvmlite import ir
from numba import types
from numba.core import cgutils as _cgutils
from numba.extending import intrinsic

from headwater.topics import checksum

OK = 0
LAYOUT = 1  # not a record line of the topic log
NO_SCHEMA = 2  # a value without an embedded schema
OTHER_SHAPE = 3  # another schema, a null key
GAP = 4  # a record whose offset is not the previous one + 1 (damage)
TORN = 5  # a last line without its newline: the end of an in-progress segment, else damage
CHECKSUM = 6  # a line whose bytes do not match its checksum (damage)

_HEAD = np.frombuffer(b'{"offset":', np.uint8)
_TIMESTAMP = np.frombuffer(b'"timestamp":', np.uint8)
_KEY = np.frombuffer(b',"key":', np.uint8)
_VALUE = np.frombuffer(b'},"value":', np.uint8)
_SCHEMA = np.frombuffer(b'{"schema":', np.uint8)
_NULL = np.frombuffer(b"null", np.uint8)  # a tombstone's value, the record closing after it
_NULL_HEADERS = np.frombuffer(b'null,"headers":{', np.uint8)  # a tombstone with headers
_HEADERS = np.frombuffer(b'},"headers":{', np.uint8)
_CRC_MEMBER = np.frombuffer(checksum.MEMBER, np.uint8)
_HEX = np.frombuffer(b"0123456789abcdef", np.uint8)
_CRC_TAIL = checksum.TAIL_LEN
_QUOTE = 34
_NL = 10
_SP = 32
_COMMA = 44
_BRACE = 125

# Columns of the position matrix the scanner fills, one row per data record.
OFFSET, KEY_BEGIN, KEY_END, VALUE_BEGIN, VALUE_END = range(5)

_F = TypeVar("_F", bound=Callable[..., Any])


def _jit(function: _F) -> _F:
    """numba.njit with the kernel's options, typed: njit's result is untyped, so without the
    cast every compiled function would lose its signature to mypy."""
    return cast(_F, numba.njit(cache=True, nogil=True, boundscheck=False)(function))


def _libc_call(name: str, ret: ir.Type, params: list[ir.Type], builder: Any,
               args: list[Any]) -> Any:
    """Calls a C library function by symbol name: the JIT resolves it in the process (libc is
    always loaded), and unlike a ctypes address the symbol keeps the function cacheable."""
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ret, params), name)
    return builder.call(fn, args)


cgutils: Any = _cgutils  # (untyped)
_I8P = ir.IntType(8).as_pointer()
_I64 = ir.IntType(64)
_I32 = ir.IntType(32)


@intrinsic
def _memchr_ir(typingctx: Any, data: Any, lo: Any, hi: Any, byte: Any) -> Any:
    """Index of the first `byte` in data[lo:hi], or -1 (glibc's vectorised memchr)."""
    sig = types.intp(data, lo, hi, byte)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        base = builder.bitcast(ary.data, _I8P)
        found = _libc_call("memchr", _I8P, [_I8P, _I32, _I64], builder, [
            builder.gep(base, [args[1]]), builder.trunc(args[3], _I32),
            builder.sub(args[2], args[1])])
        index = builder.sub(builder.ptrtoint(found, _I64), builder.ptrtoint(base, _I64))
        return builder.select(cgutils.is_null(builder, found), ir.Constant(_I64, -1), index)

    return sig, codegen


@intrinsic
def _memeq_ir(typingctx: Any, data: Any, at: Any, pattern: Any) -> Any:
    """data[at:at + len(pattern)] == pattern, the caller having checked the bounds (glibc's
    vectorised memcmp: every byte of a 2 KB schema text is compared, at memory speed)."""
    sig = types.boolean(data, at, pattern)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        pat = context.make_array(signature.args[2])(context, builder, args[2])
        length = builder.extract_value(pat.shape, 0)
        diff = _libc_call("memcmp", _I32, [_I8P, _I8P, _I64], builder, [
            builder.gep(builder.bitcast(ary.data, _I8P), [args[1]]),
            builder.bitcast(pat.data, _I8P), length])
        return builder.icmp_signed("==", diff, ir.Constant(_I32, 0))

    return sig, codegen


def _load_crc32c() -> None:
    """Makes google-crc32c's `crc32c_extend` resolvable by name for the JIT: the library the
    Python module loaded is private to it (RTLD_LOCAL), so it is loaded again, globally."""
    path = checksum.library_path()
    if path is not None:
        llvm_binding.load_library_permanently(path)
    elif llvm_binding.address_of_symbol("crc32c_extend") is None:  # pragma: no cover
        raise ImportError("google-crc32c's shared library (crc32c_extend) was not found beside "
                          "the google_crc32c package")


_load_crc32c()


@intrinsic
def _crc32c_ir(typingctx: Any, data: Any, lo: Any, hi: Any) -> Any:
    """CRC-32C of data[lo:hi] (google-crc32c's `crc32c_extend` from 0)."""
    sig = types.int64(data, lo, hi)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        base = builder.bitcast(ary.data, _I8P)
        crc = _libc_call("crc32c_extend", _I32, [_I32, _I8P, _I64], builder, [
            ir.Constant(_I32, 0), builder.gep(base, [args[1]]), builder.sub(args[2], args[1])])
        return builder.zext(crc, _I64)

    return sig, codegen


_memchr = cast(Callable[[Any, int, int, int], int], _memchr_ir)
_memeq = cast(Callable[[Any, int, Any], bool], _memeq_ir)
_crc32c = cast(Callable[[Any, int, int], int], _crc32c_ir)


@_jit
def _same(data: Any, at: int, pattern: Any) -> bool:
    """data[at:at + len(pattern)] == pattern, byte for byte (a schema text of the same length
    with another column type must not slip through)."""
    m = pattern.shape[0]
    if at < 0 or at + m > data.shape[0]:
        return False
    return m == 0 or _memeq(data, at, pattern)


@_jit
def _find_before(data: Any, pattern: Any, lo: int, stop: int) -> int:
    """Index of `pattern` (which starts with a closing brace) in data[lo:stop], or -1.  Braces
    are rare in a payload, so jumping from one to the next is faster than a byte loop."""
    i = _memchr(data, lo, stop, _BRACE)
    while i >= 0:
        if i + pattern.shape[0] <= stop and _same(data, i, pattern):
            return i
        i = _memchr(data, i + 1, stop, _BRACE)
    return -1


@_jit
def _newline(data: Any, lo: int, n: int) -> int:
    return _memchr(data, lo, n, _NL) if lo < n else -1


@_jit
def _digits(data: Any, i: int, n: int) -> tuple[int, int]:
    """(value, index after) of the decimal digits at i; index -1 if none or the data ends."""
    value = 0
    start = i
    while i < n and 48 <= data[i] <= 57:
        value = value * 10 + (data[i] - 48)
        i += 1
    if i == start or i >= n:
        return 0, -1
    return value, i


@_jit
def _close(data: Any, pos: int, stop: int) -> int:
    """Where the record of the line data[pos:stop] (`stop` its newline) closes: the index of
    its closing brace, or of its checksum member (which replaces the brace, the checked part
    ending there); -1 when the line's bytes do not match its checksum."""
    cut = stop - _CRC_TAIL
    if (cut < pos or data[stop - 1] != _BRACE or data[stop - 2] != _QUOTE
            or not _same(data, cut, _CRC_MEMBER)):
        return stop - 1  # no checksum: a line of a format 1 log
    crc = _crc32c(data, pos, cut)
    at = cut + _CRC_MEMBER.shape[0]
    for i in range(8):
        if data[at + i] != _HEX[(crc >> (28 - 4 * i)) & 15]:
            return -1
    return cut


# What `_line` found at a position (besides the error statuses above).
_DATA = -1  # a data record in the range
_SKIP = -2  # a line before the range, or a tombstone
_END = -3  # the range ends here
_TORN = -4  # no complete line: the end of an in-progress segment


@_jit
def _line(data: Any, pos: int, start: int, end: int, key_head: Any,
          value_head: Any) -> tuple[int, int, int, int, int, int]:
    """Reads the line at `pos`: (what, offset, key document start, `},"value":` position,
    position after the line's newline, the value document's closing brace).  With empty
    heads, a data record is not checked against them (the caller reads them from it).  A line
    without a newline is torn whatever it holds, since a torn line can break any rule."""
    stop = _newline(data, pos, data.shape[0])
    if stop < 0:
        return _TORN, -1, -1, -1, data.shape[0], -1
    close = _close(data, pos, stop)
    if close < 0:
        return CHECKSUM, -1, -1, -1, stop + 1, -1
    what, offset, k, v = _line_checked(data, pos, close, start, end, key_head, value_head)
    if what == _DATA and (data[close - 1] != _BRACE
                          or (close == stop - 1 and data[close] != _BRACE)):
        what = OTHER_SHAPE
    value_end = close - 1
    # Headers (Debezium 3.x context headers, key-change headers) follow the value: outside
    # JSON strings a quote is never escaped, so ``},"headers":{`` can only be the writer's
    # headers member, and the value document closes at its brace.
    if what == _DATA and value_head.shape[0]:
        h = _find_before(data, _HEADERS, v + value_head.shape[0], close)
        if h >= 0:
            value_end = h
    return what, offset, k, v, stop + 1, value_end


@_jit
def _line_checked(data: Any, pos: int, stop: int, start: int, end: int, key_head: Any,
                  value_head: Any) -> tuple[int, int, int, int]:
    """`_line`'s reading of the record data[pos:stop], `stop` where the record closes (its
    closing brace, or its checksum member)."""
    if not _same(data, pos, _HEAD):
        return LAYOUT, -1, -1, -1
    offset, i = _digits(data, pos + _HEAD.shape[0], stop)
    if i < 0 or data[i] != _COMMA:
        return LAYOUT, -1, -1, -1
    if offset >= end:
        return _END, offset, -1, -1
    if offset < start:
        return _SKIP, offset, -1, -1
    if not _same(data, i + 1, _TIMESTAMP):
        return LAYOUT, offset, -1, -1
    _, j = _digits(data, i + 1 + _TIMESTAMP.shape[0], stop)
    if j < 0 or not _same(data, j, _KEY):
        return LAYOUT, offset, -1, -1
    k = j + _KEY.shape[0]
    lk = key_head.shape[0]
    key_same = lk > 0 and k + lk <= stop and _same(data, k, key_head)
    # the key document holds no `},"value":` before its payload when it has the known head
    v = _find_before(data, _VALUE, k + lk if key_same else k, stop)
    if v < 0:
        return LAYOUT, offset, k, -1
    after = v + _VALUE.shape[0]
    if ((after + 4 == stop and _same(data, after, _NULL)) or _same(data, after, _NULL_HEADERS)):
        return _SKIP, offset, k, v  # a tombstone
    if not _same(data, after, _SCHEMA):
        return NO_SCHEMA, offset, k, v
    lv = value_head.shape[0]
    if lv and (not key_same or v + lv > stop or not _same(data, v, value_head)):
        return OTHER_SHAPE, offset, k, v
    return _DATA, offset, k, v


@_jit
def first_record(data: Any, pos: int, start: int, end: int) -> tuple[int, int, int]:
    """(status, line start, key document start) of the first data record with offset in
    [start, end) from `pos`; line start -1 when there is none (or only a torn line)."""
    n = data.shape[0]
    none = np.empty(0, np.uint8)
    while pos < n:
        what, _, k, _, after, _ = _line(data, pos, start, end, none, none)
        if what == _DATA:
            return OK, pos, k
        if what in (_END, _TORN):
            break
        if what != _SKIP:
            return what, pos, -1
        pos = after
    return OK, -1, -1


@_jit
def scan_records(data: Any, pos: int, start: int, end: int, expect: int, limit: int, key_head: Any,
          value_head: Any, out: Any) -> tuple[int, int, int, int, int]:
    """Fills `out` (OFFSET, KEY_BEGIN, KEY_END, VALUE_BEGIN, VALUE_END per record) from `pos`,
    where the line of offset `expect` must start (in a compacted segment, whose range ends at
    `limit`, the first line at or after `expect`; -1 for any other segment).

    Returns (status, records, position, last offset read or -1, next offset expected: the
    offset of the line at the returned position, if any).  The position is after the last
    line read, or that of the line the status is about: GAP for a line whose offset is not
    `expect` (counted from line to line; in a compacted segment, not in `expect`..`limit`-1),
    TORN for a last line without its newline (the caller knows whether the segment is sealed,
    i.e. damaged).
    `value_head` starts with ``},"value":{"schema":`` and ends with ``,"payload":``; the key
    payload lies between the key head and it, the value payload between it and the ``}}`` that
    closes the value document and the record.  With empty heads (the range holds no data
    record) only the offsets and framing are checked."""
    n = data.shape[0]
    lk = key_head.shape[0]
    lv = value_head.shape[0]
    count = 0
    last = -1
    while pos < n and expect < end:  # (not a line further: it may be a crash tail)
        what, offset, k, v, after, value_end = _line(data, pos, start, end, key_head,
                                                     value_head)
        if what == _TORN:
            return TORN, count, pos, last, expect
        if what in (_DATA, _SKIP, _END) and offset != expect:
            if not expect < offset < limit:
                return GAP, count, pos, last, expect
            expect = offset  # a compacted gap
        if what == _END:
            break
        if what == _DATA:
            if count == out.shape[0]:
                return LAYOUT, count, pos, last, expect  # cannot happen: `out` is sized
            out[count, OFFSET] = offset
            out[count, KEY_BEGIN] = k + lk
            out[count, KEY_END] = v
            out[count, VALUE_BEGIN] = v + lv
            out[count, VALUE_END] = value_end
            count += 1
        elif what != _SKIP:
            return what, count, pos, last, expect
        if offset >= start:
            last = offset
        expect += 1
        pos = after
    return OK, count, pos, last, expect


@_jit
def _gather(data: Any, begin: Any, end: Any, out: Any) -> int:
    """Copies data[begin[i]:end[i]] followed by a newline, for every i, to `out`."""
    p = 0
    for i in range(begin.shape[0]):
        m = end[i] - begin[i]
        out[p:p + m] = data[begin[i]:end[i]]
        out[p + m] = _NL
        p += m + 1
    return p


@_jit
def _gather_lines(data: Any, begin: Any, end: Any, out: Any) -> int:
    """As `_gather`, with each newline inside a range written as a space."""
    p = 0
    for i in range(begin.shape[0]):
        for j in range(begin[i], end[i]):
            b = data[j]
            out[p] = _SP if b == _NL else b
            p += 1
        out[p] = _NL
        p += 1
    return p


def gather_into(data: np.ndarray, begin: np.ndarray, end: np.ndarray, out: np.ndarray) -> int:
    """Copies the byte ranges [begin, end) of `data`, each followed by a newline, to the front
    of `out` (large enough); returns the number of bytes written."""
    return _gather(data, begin, end, out)


def gather_lines_into(data: np.ndarray, begin: np.ndarray, end: np.ndarray,
                      out: np.ndarray) -> int:
    """`gather_into` for documents that may hold newlines (JSON whitespace, as a
    pretty-printing producer writes it), each written as a space so that every document stays
    one line: the check rides on the copy (a separate pass over a batch's buffers to look for
    a newline cost more than the copy itself)."""
    return _gather_lines(data, begin, end, out)
