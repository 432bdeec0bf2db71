"""The per-record CRC-32C of the topic log: how a record line carries it, and its check.

Why: the framing rules (`headwater.topics.check`) catch a record that is missing, cut or not a
record line, but a byte changed inside a record that still parses - a digit of a value, a
letter of a string - would reach the pipeline as a wrong row.  Kafka stores a CRC-32C per
record batch for this; the topic log has no batches on disk (one JSON line per record, which
Spark's JSON source must still read), so each line carries its own, as its last member::

    {"offset":N,"timestamp":T,"key":K,"value":V,"crc":"1c2d3e4f"}
    {"offset":N,"timestamp":T,"key":K,"value":V,"headers":{...},"crc":"1c2d3e4f"}

The checksum is the CRC-32C (Castagnoli, as Kafka's) of the line's bytes before
``,"crc":"``, written as 8 lower-case hex digits, so the member has a fixed length
(`TAIL_LEN` bytes before the newline) and a reader finds it at the end of the line without
parsing anything.  A line without the member is a record of a log written before checksums
(topic log format 1): it is read as before, unchecked.  A line cannot end with the member by
accident: in the older layout the record closes right after its value or headers document,
never after a JSON string that follows ``,"crc":``.

CRC-32C is computed by google-crc32c (the C library; SSE 4.2 or ARMv8 instructions), also
from the writer's batch checksummer (`headwater.topics._crcfill`, C) and the column-wise
scanner's compiled code (`headwater.pipeline.scan_kernel`), which call the same library's
`crc32c_extend`.
"""

from __future__ import annotations

import glob
import os
from typing import Final

import google_crc32c

__all__ = [
    "MEMBER",
    "TAIL_FORMAT",
    "TAIL_LEN",
    "ChecksumError",
    "body_end",
    "crc32c",
    "crc32c_extend_address",
    "extend",
    "library_path",
    "tail",
    "with_checksum",
    "without_checksum",
]

if google_crc32c.implementation != "c":  # pragma: no cover - the wheels carry the C library
    raise ImportError("google-crc32c runs without its C library (pure Python, far too slow "
                      "for the topic log's checksums): reinstall google-crc32c from a wheel")

crc32c = google_crc32c.value
extend = google_crc32c.extend

MEMBER: Final = b',"crc":"'
# `,"crc":"` + 8 hex digits + `"}`: the bytes of a line after its checksummed part, newline
# not counted.
TAIL_LEN: Final = len(MEMBER) + 8 + 2
TAIL_FORMAT: Final = b',"crc":"%08x"}\n'


class ChecksumError(ValueError):
    """A record line whose bytes do not match its checksum."""


def tail(crc: int) -> bytes:
    """The end of a line whose bytes before it have CRC-32C `crc`: the member, `}`, newline."""
    return TAIL_FORMAT % crc


def body_end(line: bytes) -> int:
    """Where the checked part of a complete record line ends (the position of its
    ``,"crc":"``), -1 when the line carries no checksum (a format 1 record).  Raises
    `ChecksumError` when it carries one its bytes do not match."""
    end = len(line) - 1 if line.endswith(b"\n") else len(line)
    cut = end - TAIL_LEN
    if cut < 0 or line[end - 2:end] != b'"}' or line[cut:cut + len(MEMBER)] != MEMBER:
        return -1
    stored = line[cut + len(MEMBER):end - 2]
    computed = b"%08x" % google_crc32c.value(line[:cut])
    if stored != computed:
        raise ChecksumError(
            f"its CRC-32C checksum does not match its bytes (stored {stored.decode('latin-1')!r}, "
            f"computed '{computed.decode()}'): bytes inside the record were changed")
    return cut


def with_checksum(line: bytes) -> bytes:
    """A record line of the layout without checksum (format 1; with or without its newline)
    as the writer writes it now: its closing brace replaced by the checksum member."""
    body = line.rstrip(b"\n")
    if not body.endswith(b"}"):
        raise ValueError(f"not a record line: {line[-20:]!r} does not end with '}}'")
    body = body[:-1]
    return body + tail(google_crc32c.value(body))


def without_checksum(line: bytes) -> bytes:
    """A checksummed record line as a format 1 writer wrote it (the checksum not checked)."""
    end = len(line) - 1 if line.endswith(b"\n") else len(line)
    cut = end - TAIL_LEN
    if cut < 0 or line[cut:cut + len(MEMBER)] != MEMBER:
        return line
    return line[:cut] + b"}" + line[end:]


def library_path() -> str | None:
    """The shared library holding google-crc32c's `crc32c_extend` (for compiled callers), or
    None when it is not found beside the package (a build linked against a system library:
    then the dynamic loader may know it)."""
    pkg = os.path.dirname(os.path.abspath(google_crc32c.__file__))
    found = sorted(glob.glob(os.path.join(pkg + ".libs", "libcrc32c*.so*"))
                   + glob.glob(os.path.join(pkg, "libcrc32c*.so*")))
    return found[0] if found else None


def crc32c_extend_address() -> int:
    """The address of google-crc32c's C function `crc32c_extend`, from the shared library its
    Python module loaded (`library_path`; or the process's symbols, for a build
    linked against a system library)."""
    import ctypes

    path = library_path()
    lib = ctypes.CDLL(path) if path is not None else ctypes.CDLL(None)
    address = ctypes.cast(lib.crc32c_extend, ctypes.c_void_p).value
    if not address:
        raise OSError("crc32c_extend has a null address")
    return int(address)
