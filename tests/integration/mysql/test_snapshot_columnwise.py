"""The snapshot's column-wise conversion (`RelationalTableCodec.convert_rows`, issue 27) gives the
row-wise `convert`'s values, byte for byte as the event JSON writes them, for every type of
test_mysql_all_types (its table and edge rows, read as the snapshot reads them) in every mode it
runs, with column mappers (mask, hash, truncate, propagated source types), `message.key.columns`
and a left-out column.  A chunk holding a NOBLOB placeholder marker (`ABSENT`, never in a
snapshot's rows) must still come out as `convert` fills it.
"""

from __future__ import annotations

from typing import Any

import orjson
import pymysql  # type: ignore[import-untyped]
import pymysql.cursors  # type: ignore[import-untyped]
import pytest

from headwater.connectors.mysql.config import validate_mysql_config
from headwater.connectors.mysql.connection import SESSION_STATEMENTS
from headwater.connectors.mysql.schema_catalog import MySqlSchema
from headwater.connectors.mysql.tables import MySqlTableCodec, build_codec
from headwater.connectors.mysql.text_values import (
    select_list,
    snapshot_conversions,
)
from headwater.connectors.mysql.types import MySqlTypeModes
from headwater.converters.connect_json import json_default
from headwater.model.record import ABSENT
from headwater.relational.connector import modes_from_config

from .conftest import MariaEnv
from .test_mysql_all_types import MODES, Modes, columns_for, create_table, insert_rows

pytestmark = pytest.mark.integration

_BASE = {"topic.prefix": "p", "database.hostname": "h", "database.user": "u",
         "database.server.id": "5"}


def _configs(db: str) -> list[dict[str, str]]:
    table = f"{db}.all_types"
    mapped = {
        **Modes().props(),
        "column.mask.with.6.chars": f"{table}.vc",
        "column.mask.hash.SHA-256.with.salt.pepper": f"{table}.tx",
        "column.truncate.to.3.chars": f"{table}.ch,{table}.l1",
        "column.propagate.source.type": f"{table}.d102",
        "message.key.columns": f"{table}:bi,id",
        "column.exclude.list": f"{table}.mt",
    }
    return [m.props() for m in MODES] + [mapped]


def _codec(table: Any, props: dict[str, str]) -> MySqlTableCodec:
    cfg, _ = validate_mysql_config({**_BASE, **props})
    return build_codec(table, modes_from_config(MySqlTypeModes, cfg), cfg.column_filter,
                       cfg.key_columns(table.database, table.name), cfg.column_mappers)


def _json(row: tuple[Any, ...]) -> list[tuple[str, bytes]]:
    return [(type(v).__name__, orjson.dumps(v, default=json_default)) for v in row]


def test_column_wise_conversion_is_the_row_wise_one(menv: MariaEnv) -> None:
    columns = columns_for(menv)
    create_table(menv, columns)
    for base in (0, 10, 20):  # three copies: columns of several rows of each kind
        insert_rows(menv, columns, base)
    schema = MySqlSchema()
    schema.apply(menv.sql("SHOW CREATE TABLE all_types")[0][1], menv.db)
    table = schema.table(menv.db, "all_types")
    assert table is not None
    server = menv.server
    conn = pymysql.connect(host="127.0.0.1", port=server.port, user=server.user,
                           password=server.password, database=menv.db, charset="utf8mb4",
                           conv=snapshot_conversions())
    try:
        cur = conn.cursor(pymysql.cursors.SSCursor)
        for statement in SESSION_STATEMENTS:
            cur.execute(statement)
        cur.execute(f"SELECT {select_list(table)} FROM all_types ORDER BY id")
        rows = list(cur.fetchall())
    finally:
        conn.close()
    assert len(rows) == 15
    passed_on = 0
    for props in _configs(menv.db):
        codec = _codec(table, props)
        want = [_json(codec.convert(r)) for r in rows]
        got = codec.convert_rows(rows)
        assert all(type(r) is tuple for r in got)
        assert [_json(r) for r in got] == want, props
        for chunk in (rows[:1], rows[4:5], rows[3:11]):  # a lone row, the NULL row, a mix
            assert [_json(r) for r in codec.convert_rows(chunk)] == [
                _json(codec.convert(r)) for r in chunk]
        passed_on += sum(c in (int, str, float) for c in codec.converters)
    assert passed_on, "no column took the pass-on path: the test would not cover it"
    assert codec.convert_rows([]) == []


def test_a_chunk_with_a_left_out_text_value_goes_row_by_row(menv: MariaEnv) -> None:
    menv.sql("CREATE TABLE t (id INT PRIMARY KEY, tx TEXT, bl BLOB, n INT)")
    schema = MySqlSchema()
    schema.apply(menv.sql("SHOW CREATE TABLE t")[0][1], menv.db)
    table = schema.table(menv.db, "t")
    assert table is not None
    codec = _codec(table, Modes(binary="base64").props())
    rows = [(1, "a", b"x", 7), (2, ABSENT, ABSENT, None), (3, None, None, 9)]
    got = codec.convert_rows(rows)
    assert got == [codec.convert(r) for r in rows]
    assert got[1][1] == "__debezium_unavailable_value"
