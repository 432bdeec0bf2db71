"""Binary types: bytea (under ``binary.handling.mode``), bit and varbit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from headwater.connectors.postgres.types.base import Factory, PgType
from headwater.connectors.postgres.types.oids import BIT_OID, BYTEA_OID, VARBIT_OID
from headwater.convert import (
    ColumnMapping,
    TypeModes,
    binary_encoder,
    binary_fallback,
    binary_schema,
)
from headwater.model.schema import BOOLEAN, BYTES, ConnectSchema

BITS_NAME = "io.debezium.data.Bits"
# pgjdbc's length of a varbit without one (Integer.MAX_VALUE): the Bits "length" parameter.
UNBOUNDED_BITS_LENGTH = 2_147_483_647


def bytea_from_text(text: str) -> bytes:
    """bytea text output: hex (``\\x0102ff``) or the escape format (``ab\\000\\\\``)."""
    if text[:2] == "\\x":
        return bytes.fromhex(text[2:])
    out = bytearray()
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
        elif text[i + 1 : i + 2] == "\\":
            out.append(0x5C)
            i += 2
        else:
            octal = text[i + 1 : i + 4]
            if len(octal) != 3 or not all(ch in "01234567" for ch in octal):
                raise ValueError(f"invalid bytea escape at {i} in {text!r}")
            out.append(int(octal, 8))
            i += 4
    return bytes(out)


def _bytea(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    mode = modes.binary_handling_mode
    if mode == "bytes":
        convert: Callable[[str], Any] = bytea_from_text
    else:
        encode = binary_encoder(mode)

        def convert(text: str) -> Any:
            return encode(bytea_from_text(text))

    return ColumnMapping(binary_schema(mode, optional), convert, binary_fallback(mode))


def bit_as_bool(text: str) -> bool:
    """``bit(1)`` text → BOOLEAN (``Integer.valueOf(text, 2) != 0``)."""
    if text.strip("01"):
        raise ValueError(f"invalid bit string {text!r}")
    return "1" in text


def bits_from_text(text: str) -> bytes:
    """Bit string text → Debezium's ``Bits`` bytes: the string as a binary number, little-endian,
    in as few bytes as its highest set bit needs (``BitSet.toByteArray()``): ``101`` →
    ``05``, ``1000000001`` → ``01 02``, all zeros → empty."""
    if not text:
        return b""
    value = int(text, 2)
    return value.to_bytes((value.bit_length() + 7) >> 3, "little")


def _bits(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    if t.oid == VARBIT_OID or t.name in {"varbit", "bit varying"}:
        length = t.typmod if t.typmod >= 0 else UNBOUNDED_BITS_LENGTH
    else:
        length = t.typmod if t.typmod >= 0 else 1  # "bit" is bit(1)
    if length <= 1:
        return ColumnMapping(ConnectSchema(BOOLEAN, optional), bit_as_bool, False)
    schema = ConnectSchema(BYTES, optional, BITS_NAME, 1, {"length": str(length)})
    return ColumnMapping(schema, bits_from_text, b"")


BY_OID: dict[int, Factory] = {
    BYTEA_OID: _bytea,
    BIT_OID: _bits,
    VARBIT_OID: _bits,
}

BY_NAME: dict[str, Factory] = {
    "bytea": _bytea,
    "bit": _bits,
    "varbit": _bits,
    "bit varying": _bits,
}
