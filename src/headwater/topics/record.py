"""One record line of a topic log segment: its parsed form and the strict positional parser.

The format is documented in `headwater.topics.log` and docs/topic-log.md.  The parser knows the
writer's fixed field order, so keys and values come back as the exact raw JSON bytes that were
appended (big integers, number formatting and whitespace survive), header values as the bytes
the header converter wrote (headwater.topics.log, "Record format"), and it is the
one definition of "a valid record line" that the readers and the checker (`headwater.topics.check`)
share.
"""

from __future__ import annotations

import json
from typing import NamedTuple

import orjson

from headwater.model.topic import HeaderBytes
from headwater.topics.checksum import ChecksumError, body_end

__all__ = ["BadLineError", "Record", "parse_line", "split_line"]


class Record(NamedTuple):
    """One record read back from a topic: key/value are raw JSON bytes, header values the
    header converter's bytes (None for a null value)."""

    topic: str
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: HeaderBytes


_DECODER = json.JSONDecoder()
_SCAN = _DECODER.raw_decode
_WS = " \t\n\r"
_P_OFFSET = '{"offset":'
_P_TS = ',"timestamp":'
_P_KEY = ',"key":'
_P_VALUE = ',"value":'
_P_HEADERS = ',"headers":{'


class BadLineError(ValueError):
    """A complete line that is not a record line of the writer's layout."""


def _skip_ws(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] in _WS:
        i += 1
    return i


def _raw(s: str, i: int) -> tuple[str | None, int]:
    """Scan the JSON document starting at `i`; (its raw text or None for null, end index)."""
    j = _skip_ws(s, i)
    try:
        obj, end = _SCAN(s, j)
    except json.JSONDecodeError as exc:
        raise BadLineError(f"invalid JSON at column {exc.pos}") from None
    k = _skip_ws(s, end)
    return (None if obj is None else s[i:k]), k


def _expect(s: str, i: int, token: str) -> int:
    if not s.startswith(token, i):
        raise BadLineError(f"expected {token!r} at column {i}")
    return i + len(token)


def _int_until(s: str, i: int, token: str) -> tuple[int, int]:
    j = s.find(token, i)
    if j < 0:
        raise BadLineError(f"expected {token!r} after column {i}")
    text = s[i:j]
    if not text.isascii() or not text.isdigit():
        raise BadLineError(f"expected an integer at column {i}, got {text[:30]!r}")
    return int(text), j + len(token)


def _header_bytes(raw: str | None) -> bytes | None:
    """A header value of a line: a JSON string holds the header's bytes as text; any other
    JSON document is an older log's JsonConverter envelope, whose text is those bytes."""
    if raw is None:
        return None
    text = raw.strip(_WS)
    if text.startswith('"'):
        value = json.loads(text)
        assert isinstance(value, str)
        return value.encode("utf-8")
    return text.encode("utf-8")


def _checked(line: bytes) -> bytes:
    """The line as a record without a checksum: a checksummed line checked (BadLineError if
    its bytes do not match) and its ``,"crc":...`` member taken out, others as they are."""
    try:
        cut = body_end(line)
    except ChecksumError as exc:
        raise BadLineError(str(exc)) from None
    return line if cut < 0 else line[:cut] + b"}"


def parse_line(topic: str, line: bytes) -> Record:
    """Parse one complete line of a segment (with or without its trailing newline); a line
    carrying a checksum (`headwater.topics.checksum`) is checked first."""
    line = _checked(line)
    try:
        s = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadLineError(f"not UTF-8: {exc}") from None
    i = _expect(s, 0, _P_OFFSET)
    offset, i = _int_until(s, i, _P_TS)
    # A timestamp may in principle be negative (before 1970).
    neg = s.startswith("-", i)
    ts, i = _int_until(s, i + neg, _P_KEY)
    if neg:
        ts = -ts
    key, i = _raw(s, i)
    i = _expect(s, i, _P_VALUE)
    value, i = _raw(s, i)
    headers: HeaderBytes = ()
    if s.startswith(_P_HEADERS, i):
        i += len(_P_HEADERS)
        pairs: list[tuple[str, bytes | None]] = []
        i = _skip_ws(s, i)
        if s.startswith("}", i):
            i += 1
        else:
            while True:
                name, i = _raw(s, i)
                if name is None or not name.strip().startswith('"'):
                    raise BadLineError(f"expected a header name before column {i}")
                i = _expect(s, i, ":")
                hval, i = _raw(s, i)
                pairs.append((json.loads(name), _header_bytes(hval)))
                if s.startswith(",", i):
                    i += 1
                    continue
                i = _expect(s, i, "}")
                break
        headers = tuple(pairs)
    i = _expect(s, i, "}")
    if s[i:].strip(_WS):
        raise BadLineError(f"trailing data at column {i}")
    return Record(
        topic,
        offset,
        ts,
        None if key is None else key.encode(),
        None if value is None else value.encode(),
        headers,
    )


_B_HEAD = b'{"offset":'
_B_KEY = b',"key":'
_B_VALUE = b',"value":'
_B_HEADERS = b',"headers":{'


def split_line(line: bytes) -> tuple[int, bytes | None, bytes | None] | None:
    """(offset, key, value) of a record line in the writer's layout, or None (another layout:
    then `parse_line`, the reference, decides).  The fast path of the pipeline's event reader
    and of compaction: only the key document is parsed, to find where it ends.  A line carrying
    a checksum is checked (None when its bytes do not match: `parse_line` then says so)."""
    if not line.startswith(_B_HEAD):
        return None
    try:
        cut = body_end(line)
    except ChecksumError:
        return None
    k = line.find(_B_KEY)
    if k < 0:
        return None
    digits = line[len(_B_HEAD):line.find(b",", len(_B_HEAD))]
    if not digits.isdigit():
        return None
    offset = int(digits)
    start = k + len(_B_KEY)
    # the record's closing brace, or where the checksum member replaces it
    end = cut if cut >= 0 else len(line.rstrip(b"\r\n")) - 1
    headers = line.rfind(_B_HEADERS, 0, end)
    if headers >= 0:
        # Headers follow the value; outside JSON strings a quote is never escaped, so the
        # last ``,"headers":{`` is the record's own member (header values are strings).
        end = headers
    pos = line.find(_B_VALUE, start)
    while pos >= 0:
        key_text = line[start:pos]
        try:
            orjson.loads(key_text)  # the key is the JSON document before this separator
        except orjson.JSONDecodeError:
            pos = line.find(_B_VALUE, pos + 1)
            continue
        value = line[pos + len(_B_VALUE):end]
        return (offset, None if key_text == b"null" else key_text,
                None if value == b"null" else value)
    return None
