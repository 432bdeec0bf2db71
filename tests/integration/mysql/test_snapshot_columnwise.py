"""The snapshot's column-wise conversion (`RelationalTableCodec.convert_rows`, issue 27) gives the
row-wise `convert`'s values, byte for byte as the event JSON writes them, for every type of
test_mysql_all_types (its table and edge rows, read as the snapshot reads them) in every mode it
runs, with column mappers (mask, hash, truncate, propagated source types), `message.key.columns`
and a left-out column.  A chunk holding a NOBLOB placeholder marker (`ABSENT`, never in a
snapshot's rows) must still come out as `convert` fills it.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Sequence
from typing import Any

import orjson
import pymysql  # type: ignore[import-untyped]
import pymysql.cursors  # type: ignore[import-untyped]
import pytest

from headwater.connectors.mysql.config import validate_mysql_config
from headwater.connectors.mysql.connection import SESSION_STATEMENTS
from headwater.connectors.mysql.connector import MySqlConnector
from headwater.connectors.mysql.position import MySqlSourceBlock
from headwater.connectors.mysql.schema_catalog import MySqlSchema
from headwater.connectors.mysql.snapshot import MySqlSnapshotSource
from headwater.connectors.mysql.tables import MySqlTableCodec, build_codec
from headwater.connectors.mysql.text_values import (
    select_list,
    snapshot_conversions,
)
from headwater.connectors.mysql.types import MySqlTypeModes
from headwater.converters.connect_json import json_default
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.parallel import merge_rendered
from headwater.engine.queue import Batch
from headwater.engine.source import SourceRunContext
from headwater.formats.debezium_json import DebeziumJsonFormat
from headwater.model.record import ABSENT
from headwater.model.topic import TopicRecord
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


# -- the snapshot's records: chunks rendered together (relational/snapshot_splice.py) ----------

FROZEN_S = 1_700_000_000.123


def _snapshot_records(menv: MariaEnv, props: dict[str, str], fmt_options: dict[str, Any],
                      columnar: bool, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """Every topic record a serial snapshot of the test database writes, in write order (as
    CaptureRuntime._write lays out a batch: its records, then its rendered ones)."""
    server = menv.server
    cfg, _ = validate_mysql_config({
        **_BASE, "database.hostname": "127.0.0.1", "database.port": str(server.port),
        "database.user": server.user, "database.password": server.password,
        "database.include.list": menv.db, "max.batch.size": "7",
        "schema.history.internal.file.filename": str(menv.tmp / f"h-{columnar}.jsonl"),
        **props})
    connector = MySqlConnector(cfg)
    fmt = DebeziumJsonFormat(MySqlSourceBlock("mariadb"), run_id="splice-test", **fmt_options)
    source = MySqlSnapshotSource(cfg, connector.state, CaptureMetrics(), columnar=columnar)
    batches: list[Batch] = []
    monkeypatch.setattr(time, "time", lambda: FROZEN_S)
    try:
        assert source.execute(SourceRunContext(batches.append, threading.Event(), fmt))
    finally:
        monkeypatch.undo()
    out: list[tuple[str, Any]] = []
    for batch in batches:
        rendered: dict[str, Sequence[TopicRecord]] = {}
        if batch.records:
            merge_rendered(rendered, fmt.render_batch(batch.records))
        if batch.rendered is not None:
            merge_rendered(rendered, batch.rendered)
        out.extend((topic, r) for topic, records in rendered.items() for r in records)
    return out


_POINT = re.compile(rb'"(file|pos|gtid|ts_ms|ts_us|ts_ns)":("[^"]*"|\d+|null)')


@pytest.mark.parametrize("fmt_options", [{}, {"key_schemas": False, "value_schemas": False},
                                         {"provide_transaction_metadata": True}],
                         ids=["schemas", "no-schemas", "tx-metadata"])
def test_chunks_rendered_together_equal_the_row_wise_records(
        menv: MariaEnv, fmt_options: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    columns = columns_for(menv)
    create_table(menv, columns)
    for base in range(0, 200, 10):  # 20 copies of the edge rows: chunks of 7 rows of each kind
        insert_rows(menv, columns, base)
    menv.sql("CREATE TABLE keyless (msg TEXT, n INT)")
    menv.sql("INSERT INTO keyless VALUES ('a', 1), (NULL, 2), ('},{\"msg\":', 3), ('x', NULL)"
             ", ('\"', 5), ('', 6), ('\\\\', 7), ('z', 8), ('y', 9), ('w', 10)")
    menv.sql("CREATE TABLE pair (a INT, b VARCHAR(5), v TEXT, PRIMARY KEY (a, b))")
    menv.sql("INSERT INTO pair VALUES " + ", ".join(f"({i % 3}, 'k{i}', 'v{i}')"
                                                    for i in range(20)))
    menv.sql("CREATE TABLE one_row (id INT PRIMARY KEY)")
    menv.sql("INSERT INTO one_row VALUES (1)")
    menv.sql("CREATE TABLE empty (id INT PRIMARY KEY)")
    for props in _configs(menv.db):
        row_wise = _snapshot_records(menv, props, fmt_options, False, monkeypatch)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="headwater.connectors.mysql"):
            column_wise = _snapshot_records(menv, props, fmt_options, True, monkeypatch)
        for table in ("all_types", "keyless", "pair"):
            assert f"read {menv.db}.{table} column-wise" in caplog.text, table
        assert sum(1 for t, _ in row_wise if t.endswith(".all_types")) == 100
        assert len(column_wise) == len(row_wise)
        for n, (row, col) in enumerate(zip(row_wise, column_wise, strict=True)):
            # The two snapshots differ only in their binlog point (and, frozen, no time).
            want = (row[0], row[1]._replace(value=_POINT.sub(b"", row[1].value or b"")))
            got = (col[0], col[1]._replace(value=_POINT.sub(b"", col[1].value or b"")))
            if want != got:
                raise AssertionError(f"record {n} of {want[0]} differs ({props}):\n"
                                     f"row-wise    {want[1]}\ncolumn-wise {got[1]}")
