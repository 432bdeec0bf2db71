"""MySQL binary JSON (column type 245) to JSON text, from hand-built bytes laid out as in
MySQL's json_binary.h (MariaDB writes JSON as text, so no server here produces these)."""

from __future__ import annotations

import struct

import pytest

from headwater.connectors.mysql.binlog.jsonb import (
    JsonBinaryError,
    decode_json_binary,
    parse_json_binary,
)


def test_small_object_with_inline_int() -> None:
    data = b"\x00" + b"\x01\x00\x0c\x00" + b"\x0b\x00\x01\x00" + b"\x05\x07\x00" + b"a"
    assert decode_json_binary(data) == '{"a":7}'


def test_small_array_with_literal_string_and_double() -> None:
    data = (b"\x02" + b"\x03\x00\x18\x00" + b"\x04\x01\x00" + b"\x0c\x0d\x00" + b"\x0b\x10\x00"
            + b"\x02hi" + struct.pack("<d", 1.5))
    assert decode_json_binary(data) == '[true,"hi",1.5]'


def test_nested_object_in_array_and_non_ascii() -> None:
    # {"k": "\u00e9"}: header 4 + key entry 4 + value entry 3, then the key and the string.
    inner = b"\x01\x00" + struct.pack("<H", 4 + 4 + 3 + 1 + 3) + b"\x0b\x00\x01\x00" \
        + b"\x0c\x0c\x00" + b"k" + b"\x02\xc3\xa9"
    outer = b"\x01\x00" + struct.pack("<H", 4 + 3 + len(inner)) + b"\x00\x07\x00" + inner
    assert decode_json_binary(b"\x02" + outer) == '[{"k":"\u00e9"}]'


def test_scalars_at_top_level() -> None:
    assert decode_json_binary(b"\x04\x00") == "null"
    assert decode_json_binary(b"\x04\x02") == "false"
    assert decode_json_binary(b"\x09" + struct.pack("<q", -2**63)) == str(-2**63)
    assert decode_json_binary(b"\x0a" + struct.pack("<Q", 2**64 - 1)) == str(2**64 - 1)
    assert decode_json_binary(b"\x07" + struct.pack("<i", -5)) == "-5"
    assert decode_json_binary(b"\x0c\x03a\"b") == '"a\\"b"'
    assert decode_json_binary(b"") == "null"


def test_large_object_uses_four_byte_offsets() -> None:
    # {"x": 70000} large: count 4, size 4, key entry (4 + 2), value entry (1 + 4): int32 inline.
    body = struct.pack("<II", 1, 8 + 6 + 5 + 1) + struct.pack("<IH", 19, 1) \
        + b"\x07" + struct.pack("<i", 70000) + b"x"
    assert decode_json_binary(b"\x01" + body) == '{"x":70000}'


def test_opaque_decimal_and_temporal() -> None:
    dec = bytes([14, 4]) + bytes.fromhex("810DFB38D204D2")
    assert decode_json_binary(b"\x0f\xf6" + bytes([len(dec)]) + dec) == "1234567890.1234"
    ymd = ((2024 * 13 + 2) << 5) | 29
    date = struct.pack("<q", (ymd << 17) << 24)
    assert decode_json_binary(b"\x0f\x0a\x08" + date) == '"2024-02-29"'
    hms = (13 << 12) | (14 << 6) | 15
    datetime = struct.pack("<q", (((ymd << 17) | hms) << 24) | 500)
    assert decode_json_binary(b"\x0f\x0c\x08" + datetime) == '"2024-02-29 13:14:15.000500"'
    time = struct.pack("<q", -(hms << 24))
    assert decode_json_binary(b"\x0f\x0b\x08" + time) == '"-13:14:15"'
    assert decode_json_binary(b"\x0f\xfc\x02ab") == '"base64:type252:YWI="'


def test_malformed_input() -> None:
    with pytest.raises(JsonBinaryError):
        parse_json_binary(b"\x20")
    with pytest.raises(JsonBinaryError):
        parse_json_binary(b"\x00\x01\x00\xff\x00")
    with pytest.raises(JsonBinaryError):
        parse_json_binary(b"\x04\x07")
