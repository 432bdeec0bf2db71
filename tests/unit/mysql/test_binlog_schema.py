"""Table definitions from TABLE_MAP metadata (binlog_schema.py) against the DDL-built ones.

The fixtures (tests/fixtures/binlog, MariaDB 10.11 with binlog_row_metadata=FULL) hold the
CREATE TABLE statements and the TABLE_MAPs of the same tables, one per type family: the
derived table must match the history's, decode the same rows to the same Connect values, and
the history table must never look stale against its own TABLE_MAP.  Hand-built TABLE_MAPs
cover the binlog types MariaDB does not write (MySQL's JSON, VAR_STRING, unknown codes).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from headwater.connectors.mysql.binlog import events as ev
from headwater.connectors.mysql.binlog.events import Query, RowsEvent, TableMap
from headwater.connectors.mysql.binlog.rows import RowDecoder
from headwater.connectors.mysql.binlog_schema import (
    TableMetadataError,
    table_from_map,
    table_map_mismatch,
)
from headwater.connectors.mysql.columns import MySqlColumn, MySqlTable
from headwater.connectors.mysql.schema_catalog import MySqlSchema
from headwater.connectors.mysql.tables import build_codec
from headwater.connectors.mysql.types import MySqlTypeModes

from .test_binlog_events import file_events

# DDL types the binlog writes as another type (documented in docs/mysql.md).
KNOWN_DIFFERENCES = {"BOOLEAN": "TINYINT", "JSON": "LONGTEXT"}


def _pairs(name: str) -> list[tuple[TableMap, MySqlTable, list[RowsEvent]]]:
    """(TABLE_MAP, the history's table at that point, its rows events) of a fixture file."""
    schema = MySqlSchema()
    out: list[tuple[TableMap, MySqlTable, list[RowsEvent]]] = []
    by_id: dict[int, list[RowsEvent]] = {}
    for event in file_events(name):
        body = event.body
        if isinstance(body, Query) and not body.sql.upper().startswith(("BEGIN", "COMMIT",
                                                                         "XA ")):
            schema.apply(body.sql, body.database or None)
        elif isinstance(body, TableMap):
            table = schema.table(body.database, body.table)
            assert table is not None
            by_id[body.table_id] = []
            out.append((body, table, by_id[body.table_id]))
        elif isinstance(body, RowsEvent):
            by_id[body.table_id].append(body)
    return out


@pytest.fixture(scope="module")
def pairs() -> list[tuple[TableMap, MySqlTable, list[RowsEvent]]]:
    found = _pairs("types.bin") + _pairs("old_temporal.bin")
    assert {tm.table for tm, _, _ in found} >= {"ints", "nums", "temporal", "strs", "many",
                                                "oldt"}
    return found


def test_derived_tables_match_the_ddl_built_ones(
        pairs: list[tuple[TableMap, MySqlTable, list[RowsEvent]]]) -> None:
    checked = set()
    for tm, history, _ in pairs:
        derived = table_from_map(tm)
        assert (derived.database, derived.name) == (history.database, history.name)
        assert derived.primary_key == history.primary_key
        assert len(derived.columns) == len(history.columns)
        for got, want in zip(derived.columns, history.columns, strict=True):
            where = f"{tm.table}.{want.name}"
            assert got.name == want.name, where
            assert got.type_name == KNOWN_DIFFERENCES.get(want.type_name, want.type_name), where
            assert got.nullable == want.nullable, where
            if want.type_name in ("TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT",
                                  "DECIMAL", "FLOAT", "DOUBLE"):
                assert got.unsigned == want.unsigned, where
            if want.type_name in ("CHAR", "VARCHAR", "BINARY", "VARBINARY", "DECIMAL", "BIT",
                                  "DATETIME", "TIMESTAMP", "TIME"):
                assert (got.length or 0, got.scale or 0) == (want.length or 0,
                                                              want.scale or 0), where
            if want.type_name in ("ENUM", "SET"):
                assert got.members == want.members, where
            if want.charset is not None and want.type_name != "JSON":
                assert got.charset == want.charset, where
            checked.add(want.type_name)
    assert checked >= {"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "YEAR", "BOOLEAN",
                       "FLOAT", "DOUBLE", "DECIMAL", "DATE", "DATETIME", "TIMESTAMP", "TIME",
                       "CHAR", "VARCHAR", "BINARY", "VARBINARY", "TINYBLOB", "BLOB",
                       "MEDIUMBLOB", "LONGBLOB", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT",
                       "JSON", "ENUM", "SET", "BIT", "GEOMETRY", "POINT"}


def test_history_tables_never_look_stale_against_their_own_table_map(
        pairs: list[tuple[TableMap, MySqlTable, list[RowsEvent]]]) -> None:
    for tm, history, _ in pairs:
        assert table_map_mismatch(tm, history) is None, tm.table
        assert table_map_mismatch(tm, table_from_map(tm)) is None, tm.table


def test_derived_tables_decode_to_the_same_connect_values(
        pairs: list[tuple[TableMap, MySqlTable, list[RowsEvent]]]) -> None:
    modes = MySqlTypeModes()
    rows_seen = 0
    for tm, history, rows_events in pairs:
        derived = table_from_map(tm)
        codecs = [build_codec(t, modes, lambda *_: True) for t in (history, derived)]
        decoders = [RowDecoder(tm, t) for t in (history, derived)]
        same = [i for i, c in enumerate(history.columns)
                if c.type_name not in KNOWN_DIFFERENCES]
        for i in same:
            assert codecs[0].schema.columns[i].schema == codecs[1].schema.columns[i].schema, \
                f"{tm.table}.{history.columns[i].name}"
        assert codecs[0].schema.key_columns == codecs[1].schema.key_columns
        for event in rows_events:
            images = [_images(d.decode(event)) for d in decoders]
            for a, b in zip(*images, strict=True):
                va, vb = codecs[0].convert(a), codecs[1].convert(b)
                assert [va[i] for i in same] == [vb[i] for i in same], tm.table
                rows_seen += 1
    assert rows_seen > 1000


def _images(rows: list[Any]) -> list[Any]:
    out = []
    for row in rows:
        if len(row) == 2 and isinstance(row[0], tuple):
            out.extend(row)
        else:
            out.append(row)
    return out


def _history(pairs: list[tuple[TableMap, MySqlTable, list[RowsEvent]]],
             name: str) -> tuple[TableMap, MySqlTable]:
    tm, table, _ = next(p for p in pairs if p[0].table == name)
    return tm, table


def _with(table: MySqlTable, column: str, /, **changes: Any) -> MySqlTable:
    columns = tuple(replace(c, **changes) if c.name == column else c for c in table.columns)
    return replace(table, columns=columns)


@pytest.mark.parametrize(("table", "column", "changes", "message"), [
    ("ints", "i", {"type_name": "VARCHAR", "length": 10}, "binlog type code 3"),
    ("ints", "i", {"name": "renamed"}, "named 'i' in the binlog"),
    ("ints", "iu", {"unsigned": False}, "signedness"),
    ("nums", "d1", {"length": 12}, "DECIMAL(10,2) in the binlog"),
    ("nums", "d1", {"scale": 3}, "DECIMAL(10,2) in the binlog"),
    ("temporal", "dt6", {"length": 3}, "fractional-second precision 6"),
    ("strs", "b10", {"length": 12}, "BIT(10) in the binlog"),
    ("strs", "e", {"members": ("a", "b", "c", "d")}, "ENUM/SET members"),
    ("strs", "st", {"members": ("x", "y")}, "ENUM/SET members"),
    ("strs", "e", {"members": ("a", "B", "c")}, "ENUM/SET members"),
])
def test_a_stale_history_table_is_detected(
        pairs: list[tuple[TableMap, MySqlTable, list[RowsEvent]]], table: str, column: str,
        changes: dict[str, Any], message: str) -> None:
    tm, history = _history(pairs, table)
    problem = table_map_mismatch(tm, _with(history, column, **changes))
    assert problem is not None and message in problem


def test_column_count_mismatch_names_both_counts(
        pairs: list[tuple[TableMap, MySqlTable, list[RowsEvent]]]) -> None:
    tm, history = _history(pairs, "many")
    shorter = replace(history, columns=history.columns[:-1])
    assert table_map_mismatch(tm, shorter) == "the binlog has 3 columns, the schema history 2"


def test_trailing_spaces_and_non_ascii_members_are_not_a_mismatch(
        pairs: list[tuple[TableMap, MySqlTable, list[RowsEvent]]]) -> None:
    tm, history = _history(pairs, "strs")
    assert table_map_mismatch(tm, _with(history, "e", members=("a ", "b", "c"))) is None


def test_without_column_names_there_is_no_table() -> None:
    tm = _map([ev.T_LONG], [0], names=None)
    with pytest.raises(TableMetadataError, match=r"db\.t carries no column names"):
        table_from_map(tm)


def test_enum_without_members_is_an_error() -> None:
    tm = _map([ev.T_STRING], [ev.T_ENUM << 8 | 1], names=("e",))
    with pytest.raises(TableMetadataError, match="no members for ENUM column 'e'"):
        table_from_map(tm)


def _map(types: list[int], meta: list[int], *, names: tuple[str, ...] | None,
         collations: tuple[int | None, ...] | None = None,
         geometry: tuple[int | None, ...] | None = None,
         unsigned: tuple[bool, ...] | None = None) -> TableMap:
    n = len(types)
    return TableMap(7, 0, "db", "t", bytes(types), tuple(meta), (True,) * n, unsigned,
                    collations, names, None, None, geometry, (0,), (0,), None, b"sig")


def test_types_mariadb_does_not_write() -> None:
    tm = _map([ev.T_JSON, ev.T_VAR_STRING, ev.T_VAR_STRING, ev.T_BLOB, ev.T_BLOB, ev.T_BLOB,
               ev.T_BLOB, ev.T_GEOMETRY, ev.T_GEOMETRY, ev.T_DOUBLE, ev.T_LONGLONG],
              [4, 40, 12, 1, 2, 3, 4, 4, 4, 8, 0],
              names=tuple("abcdefghijk"),
              collations=(None, 33, 63, 8, 63, 45, 63, 63, 63, None, None),
              geometry=(None,) * 7 + (2, 7, None, None),
              unsigned=(False,) * 10 + (True,))
    table = table_from_map(tm)
    assert [(c.type_name, c.length, c.charset) for c in table.columns] == [
        ("JSON", None, None), ("VARCHAR", 13, "utf8mb3"), ("VARBINARY", 12, None),
        ("TINYTEXT", None, "latin1"), ("BLOB", None, None), ("MEDIUMTEXT", None, "utf8mb4"),
        ("LONGBLOB", None, None), ("LINESTRING", None, None),
        ("GEOMETRYCOLLECTION", None, None), ("DOUBLE", None, None), ("BIGINT", None, None)]
    assert table.columns[-1].unsigned and table.primary_key == ("a",)
    assert all(c.nullable for c in table.columns)
    build_codec(table, MySqlTypeModes(), lambda *_: True)  # every derived type maps


def test_an_unknown_type_code_is_an_error() -> None:
    with pytest.raises(TableMetadataError, match="binlog type code 6"):
        table_from_map(_map([ev.T_NULL], [0], names=("n",)))


def test_nullability_comes_from_the_table_map_bitmap(
        pairs: list[tuple[TableMap, MySqlTable, list[RowsEvent]]]) -> None:
    tm, _ = _history(pairs, "ints")
    table = table_from_map(tm)
    assert [c.nullable for c in table.columns] == [False] + [True] * 12
    assert isinstance(table.columns[0], MySqlColumn)
