"""Row image decoding to natural values, from MariaDB-captured row events (every column type
with edge values; tests/fixtures/binlog/capture.py holds the SQL that wrote them) and from
hand-built images for formats MariaDB does not write."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal
from pathlib import Path

import pytest

from headwater.connectors.mysql.binlog import events as ev
from headwater.connectors.mysql.binlog.events import BinlogParser, RowsEvent, TableMap
from headwater.connectors.mysql.binlog.rows import (
    RowDecodeError,
    RowDecoder,
    make_decimal,
    make_time2,
    row_decoder,
)
from headwater.connectors.mysql.columns import ZERO_TEMPORAL, MySqlColumn, MySqlTable
from headwater.model.record import ABSENT

FIXTURES = Path(__file__).parents[2] / "fixtures" / "binlog"
D, T = dt.datetime, dt.timedelta


def table_events(name: str) -> list[tuple[TableMap, RowsEvent]]:
    parser = BinlogParser()
    maps: dict[int, TableMap] = {}
    out = []
    for raw in ev.split_binlog_file((FIXTURES / name).read_bytes()):
        body = parser.parse(raw).body
        if isinstance(body, TableMap):
            maps[body.table_id] = body
        elif isinstance(body, RowsEvent):
            out.append((maps[body.table_id], body))
    return out


@pytest.fixture(scope="module")
def fixture_rows() -> list[tuple[TableMap, RowsEvent]]:
    return table_events("types.bin")


def decoded(fixture_rows: list[tuple[TableMap, RowsEvent]], table: str, n: int = 0,
            mysql_table: MySqlTable | None = None) -> list:  # type: ignore[type-arg]
    pairs = [(tm, r) for tm, r in fixture_rows if tm.table == table]
    tm, rows = pairs[n]
    return RowDecoder(tm, mysql_table).decode(rows)


def test_integers_signed_unsigned_edges(fixture_rows: list[tuple[TableMap, RowsEvent]]) -> None:
    assert decoded(fixture_rows, "ints") == [
        (1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295,
         -9223372036854775808, 18446744073709551615, 2155, 1),
        (2, 127, 0, 32767, 0, 8388607, 0, 2147483647, 0, 9223372036854775807, 0, 1901, 0),
        (3, None, None, None, None, None, None, None, None, None, None, 0, None),
    ]


def test_floats_and_decimals(fixture_rows: list[tuple[TableMap, RowsEvent]]) -> None:
    rows = decoded(fixture_rows, "nums")
    assert rows[0] == (1, 1.5, -2.25e300, Decimal("-12345678.91"),
                       Decimal("12345678901234567890123456789012345.123456789012345678901234567891"),
                       Decimal("-99999"), Decimal("-123456789.123456789"), Decimal("0.9999"))
    assert rows[1] == (2, 0.0, 5e-324, Decimal("0.00"), Decimal("-1E-30"), Decimal("0"),
                       Decimal("1E-9"), Decimal("0.0000"))
    assert str(rows[1][3]) == "0.00" and str(rows[1][6]) == "1E-9"
    assert str(rows[0][4]) == "12345678901234567890123456789012345.123456789012345678901234567891"
    assert rows[2] == (3, None, None, Decimal("99999999.99"), None, Decimal("99999"),
                       Decimal("-999999999.999999999"), None)


def test_temporal_types(fixture_rows: list[tuple[TableMap, RowsEvent]]) -> None:
    rows = decoded(fixture_rows, "temporal")
    assert rows[0] == (
        1, dt.date(2024, 2, 29), D(2024, 2, 29, 13, 14, 15), D(9999, 12, 31, 23, 59, 59, 999999),
        D(1000, 1, 1, 0, 0, 0, 1000), D(2038, 1, 19, 3, 14, 7, 999999), D(1970, 1, 1, 0, 0, 1),
        T(hours=838, minutes=59, seconds=59), -T(hours=838, minutes=59, seconds=59),
        -T(microseconds=500000), T(hours=12, minutes=34, seconds=56, microseconds=789100), 2024)
    assert rows[1] == (
        # a zero TIMESTAMP is 0 seconds: the epoch (Debezium's RowDeserializers)
        2, ZERO_TEMPORAL, ZERO_TEMPORAL, ZERO_TEMPORAL, None, D(1970, 1, 1), None,
        -T(hours=12, minutes=34, seconds=56), -T(microseconds=1),
        -T(hours=12, minutes=34, seconds=56, microseconds=780000),
        -T(hours=1, microseconds=100), 0)
    assert rows[2] == (3, dt.date(1000, 1, 1), None, D(2000, 1, 1, 0, 0, 0, 500000),
                       D(2000, 1, 1), None, None, T(0), T(0), T(microseconds=10000), T(0), 1901)


def test_old_temporal_formats() -> None:
    [(tm, rows)] = table_events("old_temporal.bin")
    assert RowDecoder(tm).decode(rows) == [
        (1, D(2024, 2, 29, 13, 14, 15), -T(hours=838, minutes=59, seconds=59),
         D(2038, 1, 19, 3, 14, 7)),
        (2, ZERO_TEMPORAL, T(hours=12, seconds=1), None),
    ]


POINT_1_2 = bytes(4) + b"\x01\x01\x00\x00\x00" + struct.pack("<dd", 1.0, 2.0)
POINT_3_4_SRID = struct.pack("<I", 4326) + b"\x01\x01\x00\x00\x00" + struct.pack("<dd", 3, 4)


def test_strings_blobs_enum_set_bit_json_geometry(
        fixture_rows: list[tuple[TableMap, RowsEvent]]) -> None:
    rows = decoded(fixture_rows, "strs")
    assert rows[0] == (
        1, "ab", "\u00e9" * 255, "caf\u00e9\u20ac", "x" * 300, b"a \x00\x00", b"\x001", b"tiny",
        b"blob", b"medium", b"long", "tt", "text \U0001f600", "mt", "lt",
        '{"k": [1, "two", null]}', "c", "x,z,r", b"\x01", b"\x02\xaa", b"\xff" * 8,
        POINT_1_2, POINT_3_4_SRID)
    assert rows[1] == (2, "", "", "", "", bytes(4), b"", b"", b"", b"", b"", "", "", "", "", "[]",
                       "", "", b"\x00", b"\x00\x00", bytes(8), None, None)
    assert rows[2] == (3, *([None] * 22))
    invalid_enum = decoded(fixture_rows, "strs", 1)[0]
    assert invalid_enum[16] == ""  # index 0: the invalid-value member


def test_update_pairs_and_delete(fixture_rows: list[tuple[TableMap, RowsEvent]]) -> None:
    [(before, after)] = decoded(fixture_rows, "ints", 1)
    assert before[:2] == (1, -128) and after[:2] == (1, 5)
    assert before[11] == 2155 and after[11] == 2000
    assert before[2:11] == after[2:11]
    [deleted] = decoded(fixture_rows, "ints", 2)
    assert deleted[0] == 2


def test_multi_row_events_and_count(fixture_rows: list[tuple[TableMap, RowsEvent]]) -> None:
    pairs = [(tm, r) for tm, r in fixture_rows if tm.table == "many"][:2]
    got = []
    for tm, rows in pairs:
        dec = RowDecoder(tm)
        values = dec.decode(rows)
        assert dec.count(rows) == len(values)
        got.extend(values)
    assert got == [(i, f"row-{i}", None if i % 7 == 0 else i * 3) for i in range(1, 1001)]


def test_partial_images_mark_absent_columns(
        fixture_rows: list[tuple[TableMap, RowsEvent]]) -> None:
    [(before, after)] = decoded(fixture_rows, "ints", 3)  # binlog_row_image=MINIMAL
    assert before == (1, *([ABSENT] * 12))
    assert after == (ABSENT, ABSENT, ABSENT, 7, *([ABSENT] * 9))
    [deleted] = decoded(fixture_rows, "ints", 4)
    assert deleted == (3, *([ABSENT] * 12))
    [(nb_before, nb_after)] = decoded(fixture_rows, "strs", 2)  # NOBLOB: no BLOB/TEXT/JSON
    assert nb_before[7:16] == (ABSENT,) * 9 and nb_after[7:16] == (ABSENT,) * 9
    assert nb_before[5] == bytes(4)  # BINARY(4) '' padded to its length, as SELECT shows it
    assert nb_after[1] == "nb" and nb_before[1] == ""
    assert nb_after[16:] == ("", "", b"\x00", b"\x00\x00", bytes(8), None, None)


def test_compressed_rows_events(fixture_rows: list[tuple[TableMap, RowsEvent]]) -> None:
    inserted = decoded(fixture_rows, "many", 3)
    assert inserted == [(2000 + i, "z" * 20, i) for i in range(1, 51)]
    updated = decoded(fixture_rows, "many", 4)
    assert updated == [((2000 + i, "z" * 20, i), (2000 + i, "z" * 20, 0)) for i in (1, 2, 3)]
    assert [r[0] for r in decoded(fixture_rows, "many", 5)] == list(range(2041, 2051))


# ---- the schema history's table decides -------------------------------------------------------


def strs_table(**overrides: MySqlColumn) -> MySqlTable:
    names = ["id", "c", "c255", "vl", "v300", "bn", "vb", "tb", "bl", "mb", "lb", "tt", "tx",
             "mt", "lt", "j", "e", "st", "b1", "b10", "b64", "g", "p"]
    types = ["INT", "CHAR", "CHAR", "VARCHAR", "VARCHAR", "BINARY", "VARBINARY", "TINYBLOB",
             "BLOB", "MEDIUMBLOB", "LONGBLOB", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT",
             "JSON", "ENUM", "SET", "BIT", "BIT", "BIT", "GEOMETRY", "POINT"]
    cols = []
    for n, t in zip(names, types, strict=True):
        col = MySqlColumn(n.upper(), t, length=4 if n == "bn" else None,
                          charset="latin1" if n == "vl" else None)
        cols.append(overrides.get(n, col))
    return MySqlTable("fx", "strs", tuple(cols), primary_key=("ID",),
                      default_charset="utf8mb4")


def test_mysql_table_decides_names_members_and_pads_binary(
        fixture_rows: list[tuple[TableMap, RowsEvent]]) -> None:
    table = strs_table(e=MySqlColumn("e", "ENUM", members=("A", "B", "C")),
                       tb=MySqlColumn("tb", "TINYTEXT", charset="latin1"))
    tm = next(tm for tm, _ in fixture_rows if tm.table == "strs")
    dec = RowDecoder(tm, table)
    assert dec.column_names[:3] == ("ID", "C", "C255")
    row = decoded(fixture_rows, "strs", 0, table)[0]
    assert row[16] == "C"  # members from the MySqlTable, not the TABLE_MAP
    assert row[5] == b"a \x00\x00"  # BINARY(4) 'a ': the binlog sends b"a ", padded back
    assert row[7] == "tiny"  # TINYTEXT by the table, not bytes by the TABLE_MAP's collation


def test_mysql_table_with_wrong_column_count_is_an_error(
        fixture_rows: list[tuple[TableMap, RowsEvent]]) -> None:
    tm = next(tm for tm, _ in fixture_rows if tm.table == "ints")
    table = MySqlTable("fx", "ints", (MySqlColumn("id", "INT"),))
    with pytest.raises(RowDecodeError, match="history is out of date"):
        RowDecoder(tm, table)


def test_unsigned_from_mysql_table(fixture_rows: list[tuple[TableMap, RowsEvent]]) -> None:
    tm, rows = next((tm, r) for tm, r in fixture_rows if tm.table == "ints")
    names = ["id", "t", "tu", "s", "su", "m", "mu", "i", "iu", "b", "bu", "y", "bo"]
    types = ["INT", "TINYINT", "TINYINT", "SMALLINT", "SMALLINT", "MEDIUMINT", "MEDIUMINT",
             "INT", "INT", "BIGINT", "BIGINT", "YEAR", "BOOLEAN"]
    # Claim every integer column is signed: the table wins over the TABLE_MAP metadata.
    table = MySqlTable("fx", "ints", tuple(MySqlColumn(n, t) for n, t in zip(names, types,
                                                                               strict=True)))
    first = RowDecoder(tm, table).decode(rows)[0]
    assert first[2] == -1 and first[4] == -1 and first[6] == -1 and first[10] == -1


def test_without_optional_metadata_falls_back(
        fixture_rows: list[tuple[TableMap, RowsEvent]]) -> None:
    tm, rows = next((tm, r) for tm, r in fixture_rows if tm.table == "strs")
    bare = tm._replace(unsigned=None, collations=None, column_names=None, enum_values=None,
                       set_values=None)
    row = RowDecoder(bare).decode(rows)[0]
    assert row[1] == "ab" and row[7] == b"tiny" and row[12] == "text \U0001f600".encode()
    assert row[16] == 3 and row[17] == 0b100000101  # index / bitmask without members
    assert RowDecoder(bare).column_names[:2] == ("col0", "col1")


def test_row_decoder_cache_and_corrupt_rows(
        fixture_rows: list[tuple[TableMap, RowsEvent]]) -> None:
    maps = [tm for tm, _ in fixture_rows if tm.table == "ints"]
    assert maps[0].table_id == maps[1].table_id or maps[0].signature == maps[1].signature
    assert row_decoder(maps[0]) is row_decoder(maps[1])
    tm, rows = next((tm, r) for tm, r in fixture_rows if tm.table == "ints")
    with pytest.raises(RowDecodeError):
        RowDecoder(tm).decode(rows._replace(rows_end=rows.rows_end - 3))


# ---- hand-built values --------------------------------------------------------------------


def test_decimal_binary_format() -> None:
    size, dec = make_decimal(14, 4)  # MySQL manual's example: 1234567890.1234
    assert size == 7
    assert dec(bytes.fromhex("810DFB38D204D2")) == Decimal("1234567890.1234")
    assert dec(bytes.fromhex("7EF204C72DFB2D")) == Decimal("-1234567890.1234")
    size, dec = make_decimal(1, 0)
    assert size == 1 and dec(b"\x89") == Decimal("9") and dec(b"\x76") == Decimal("-9")


def test_time2_fractional_negative_edges() -> None:
    # '-00:00:00.000001' with fsp 6, written by MariaDB: 0x7FFFFFFFFFFF.
    assert make_time2(6)(bytes.fromhex("7fffffffffff")) == -T(microseconds=1)
    assert make_time2(0)(bytes.fromhex("800000")) == T(0)
    assert make_time2(0)(bytes.fromhex("b46efb")) == T(hours=838, minutes=59, seconds=59)


def test_mysql_json_column_type() -> None:
    # A TABLE_MAP with one JSON (245) column, length prefix 4 bytes.
    tm = TableMap(1, 0, "db", "t", bytes([ev.T_JSON]), (4,), (True,), None, None, None, None,
                  None, None, None, None, None, b"sig-json")
    jsonb = b"\x00\x01\x00\x0c\x00\x0b\x00\x01\x00\x05\x07\x00a"  # {"a": 7}
    data = b"\x00" + struct.pack("<I", len(jsonb)) + jsonb
    rows = RowsEvent("insert", 1, 1, 1, 1, None, data, 0, len(data))
    assert RowDecoder(tm).decode(rows) == [('{"a":7}',)]


def test_invalid_utf8_falls_back_to_replacement_characters() -> None:
    tm = TableMap(1, 0, "db", "t", bytes([ev.T_VARCHAR, ev.T_LONG]), (40, 0), (True, True),
                  None, (224, None), None, None, None, None, None, None, None, b"sig-utf8")
    good = b"\x00" + b"\x02ok" + struct.pack("<i", 1)
    bad = b"\x00" + b"\x03a\xffb" + struct.pack("<i", 2)
    dec = RowDecoder(tm)
    data = good + bad
    assert dec.decode(RowsEvent("insert", 1, 1, 2, 3, None, data, 0, len(data))) == [
        ("ok", 1), ("a\ufffdb", 2)]
    assert dec.decode(RowsEvent("insert", 1, 1, 2, 3, None, good, 0, len(good))) == [("ok", 1)]
