"""Avro object container framing for datums the renderer already encoded.

The renderer encodes each event once (fastavro's schemaless writer); the file destination only
frames them: a header with the schema and a sync marker, then one block per append.  Writing
the framing here rather than handing records to `fastavro.writer` avoids decoding and
re-encoding every event, and lets a file stay open across appends with complete blocks only.
"""

from __future__ import annotations

import os

MAGIC = b"Obj\x01"


def _long(value: int) -> bytes:
    """Avro's zig-zag varint encoding of a long."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _bytes(data: bytes) -> bytes:
    return _long(len(data)) + data


def new_sync_marker() -> bytes:
    return os.urandom(16)


def header(schema_json: bytes, sync: bytes) -> bytes:
    """The file header: magic, the metadata map (schema, null codec) and the sync marker."""
    meta = (_long(2) + _bytes(b"avro.schema") + _bytes(schema_json)
            + _bytes(b"avro.codec") + _bytes(b"null") + _long(0))
    return MAGIC + meta + sync


def block(datums: list[bytes], sync: bytes) -> bytes:
    """One data block: object count, byte size, the datums, the sync marker."""
    data = b"".join(datums)
    return _long(len(datums)) + _long(len(data)) + data + sync
