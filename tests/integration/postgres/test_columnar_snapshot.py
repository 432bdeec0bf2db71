"""The column-wise snapshot writes exactly, byte for byte, what the row-wise snapshot writes.

Both paths of `PostgresSnapshotSource` read the same tables inside the same exported snapshot
with the clock frozen; their batches are rendered as the runtime renders them (records with the
format, then the pre-rendered ones) and every topic record - key, value, timestamp, headers, in
order - must be equal.  The tables: every type of test_all_types.py in every mode combination
there (its 5 rows, then copied 200 times so the chunks hold many rows), plus edge values aimed
at the kernels (escapes and control characters, decimals at and beyond 18 digits, BC and
5-digit years, infinities, fraction widths, bytea lengths for every base64 padding), a table
without a key, a one-row and an empty table; and once with column mappers (mask, hash,
truncate, propagate) and `message.key.columns` over several columns.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from headwater.connectors.postgres.catalog import describe_tables, list_tables
from headwater.connectors.postgres.config import validate_postgres_config
from headwater.connectors.postgres.connector import PostgresConnector
from headwater.connectors.postgres.position import PostgresSourceBlock
from headwater.connectors.postgres.snapshot import PostgresSnapshotSource
from headwater.connectors.postgres.tables import incoming_from_catalog
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.parallel import merge_rendered
from headwater.engine.queue import Batch
from headwater.engine.source import SourceRunContext
from headwater.formats.debezium_json import DebeziumJsonFormat
from headwater.model.record import SourceContext
from headwater.model.topic import TopicRecord

from .conftest import Env
from .test_all_types import (
    COLUMNS,
    MODES,
    POSTGIS_COLUMNS,
    Modes,
    create_table,
    has_postgis,
    insert_rows,
    numeric_specials,
)

pytestmark = pytest.mark.integration

EDGES = """
CREATE TABLE edges (
  id bigint, k2 text, s text, v varchar(10), b bool, sm smallint, n38 numeric(38,0),
  n2010 numeric(20,10), n108 numeric(10,8), nv numeric, n0 numeric(5,0), d date, t time,
  t0 time(0), t3 time(3), ts timestamp, ts0 timestamp(0), ts3 timestamp(3), tz timestamptz,
  tz0 timestamptz(0), tz3 timestamptz(3), by bytea, u uuid, j jsonb, js json,
  masked varchar(20), hashed text, trunc text, prop numeric(8,3))
"""
EDGE_COLUMNS = ("id, k2, s, v, b, sm, n38, n2010, n108, nv, n0, d, t, t0, t3, ts, ts0, ts3, tz, "
                "tz0, tz3, by, u, j, js, masked, hashed, trunc, prop")
UUID = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
EDGE_ROWS: list[tuple[Any, ...]] = [
    (1, "a", "plain", "x", "t", "-32768", "12345678901234567890123456789012345678",
     "1234567890.0123456789", "0.00000010", "1.5e-7", "-7", "2024-02-29", "24:00:00",
     "23:59:59", "00:00:00.001", "1969-12-31 23:59:59.999999", "1970-01-01 00:00:00",
     "1969-12-31 23:59:59.999", "2016-11-04 13:51:30.1+00", "2016-11-04 13:51:30+05:30",
     "2016-11-04 13:51:30.12+00", "\\x", UUID, '{"a": "\\u0001"}', '{ "k" : [1, 2.50] }',
     "secret", "hash me", "truncate this text", "12345.678"),
    (2, "b\tc", '\x01\x02\x08\t\n\x0b\x0c\r\x1f\x7f"\\/é😀 \\N', "", "f", "32767",
     "-99999999999999999999999999999999999999", "-0.0000000001", "0.00000000", "0.000", "0",
     "0001-01-01", "00:00:00", "12:34:56", "12:34:56.5", "0001-01-01 00:00:00",
     "2000-01-01 00:00:00", "1900-01-01 00:00:00.001", "0001-01-01 00:00:00+00",
     "1970-01-01 00:00:00+00", "2020-01-01 00:00:00.5+00", "\\x00", UUID.upper(), '"\\\\"',
     '"tab\\there"', "", "", "", "-0.001"),
    (3, "c", "NULL", "\\N", None, "0", "0", "9999999999.9999999999", "-0.00000001",
     "-123.456000", "99999", "0044-03-15 BC", "12:00:00.000001", "00:00:00", "23:59:59.999",
     "infinity", "-infinity", "0044-03-15 12:00:00 BC", "-infinity", "21016-11-04 06:51:30+00",
     "0044-03-15 12:00:00+00 BC", "\\x0001", None, "null", "[]", "é", "ü", "ab", "0"),
    (4, "d", None, None, None, None, None, None, None, None, None, None, None, None, None,
     None, None, None, None, None, None, "\\x000102", None, None, None, None, None, None,
     None),
    (5, "e", "x" * 300, "0123456789", "t", "1", "1", "0.5", "0.12345678", "100", "-99999",
     "1970-01-01", "13:51:30.123456", "23:59:59", "00:00:00", "2016-11-04 13:51:30.123456",
     "9999-12-31 23:59:59", "9999-12-31 23:59:59.999", "9999-12-31 23:59:59.999999+00",
     "1969-12-31 23:59:59+00", "1969-12-31 23:59:59.999+00", "\\x00010203", UUID, "1e400",
     "1e400", "m", "h", "t", "99999.999"),
]
MAPPERS = {
    "column.mask.with.4.chars": r"public\.edges\.masked",
    "column.mask.hash.SHA-256.with.salt.CzQMA0cB5K": r"public\.edges\.hashed",
    "column.truncate.to.3.chars": r"public\.edges\.trunc",
    "column.propagate.source.type": r"public\.edges\.prop",
    "message.key.columns": "public.edges:id,k2;public.keyless:b",
}
FROZEN_S = 1_700_000_000.123
TABLES = ("all_types", "edges", "keyless", "one_row", "empty")


def make_tables(env: Env, modes: Modes) -> list[str]:
    """The test tables; the names of the columns of all_types."""
    postgis = has_postgis(env)
    columns = [*COLUMNS, numeric_specials(modes), *(POSTGIS_COLUMNS if postgis else [])]
    create_table(env, columns, postgis)
    insert_rows(env, columns, 0)
    env.sql("INSERT INTO all_types SELECT t.id + 1000 * copy_no, "
            + ", ".join(f"t.{c.name}" for c in columns)
            + " FROM all_types t, generate_series(1, 200) copy_no")
    env.sql(EDGES)
    placeholders = ", ".join(["%s"] * len(EDGE_ROWS[0]))
    for _ in range(40):
        for row in EDGE_ROWS:
            env.sql(f"INSERT INTO edges ({EDGE_COLUMNS}) VALUES ({placeholders})", row)
    env.sql("CREATE TABLE keyless (a int, b text); "
            "INSERT INTO keyless SELECT g, 'row ' || g FROM generate_series(1, 3000) g")
    env.sql("CREATE TABLE one_row (id int PRIMARY KEY, x text); "
            "INSERT INTO one_row VALUES (1, 'x')")
    env.sql("CREATE TABLE empty (id int PRIMARY KEY)")
    return [c.name for c in columns]


def snapshot_output(env: Env, modes: Modes, extra: dict[str, str], columnar: bool,
                    monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """Every topic record the snapshot writes, as (topic, record), in write order."""
    raw = {"name": "columnar", "connector.class":
           "io.debezium.connector.postgresql.PostgresConnector",
           "topic.prefix": env.prefix, "database.hostname": "127.0.0.1",
           "database.port": str(env.pg.port), "database.user": env.pg.user,
           "database.dbname": env.db, **{k: str(v) for k, v in modes.props().items()}, **extra}
    cfg, _ = validate_postgres_config(raw, env={})
    connector = PostgresConnector(cfg)
    connector.database = env.db
    cur = env.conn.cursor()
    oids = [oid for oid, schema, name in list_tables(cur)
            if schema == "public" and name in TABLES]
    infos = describe_tables(cur, oids)
    tables = [(info, connector._codec_for(info, incoming_from_catalog(info)))
              for info in sorted(infos.values(), key=lambda i: i.name)]
    exporter = env.pg.connect(env.db, autocommit=False)
    try:
        xcur = exporter.cursor()
        xcur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        xcur.execute("SELECT pg_export_snapshot()")
        snapshot_name = xcur.fetchone()[0]
        fmt = DebeziumJsonFormat(PostgresSourceBlock(), run_id="columnar-test")
        source = PostgresSnapshotSource(
            dsn=cfg.dsn_kwargs(), context=SourceContext("postgresql", env.prefix, "test"),
            snapshot_name=snapshot_name, consistent_lsn=0x16B3748, tables=tables,
            fetch_size=500, lock_timeout_ms=10_000, metrics=CaptureMetrics(),
            columnar=columnar, columnar_min_blocks=0)
        batches: list[Batch] = []
        monkeypatch.setattr(time, "time", lambda: FROZEN_S)
        source.execute(SourceRunContext(batches.append, threading.Event(), fmt))
        monkeypatch.undo()
    finally:
        exporter.close()
    out: list[tuple[str, Any]] = []
    for batch in batches:  # as CaptureRuntime._write: records first, then the rendered ones
        rendered: dict[str, Sequence[TopicRecord]] = {}
        if batch.records:
            merge_rendered(rendered, fmt.render_batch(batch.records))
        if batch.rendered is not None:
            merge_rendered(rendered, batch.rendered)
        out.extend((topic, r) for topic, records in rendered.items() for r in records)
    return out


_TXID = re.compile(rb'"txId":\d+')


def compare(env: Env, modes: Modes, extra: dict[str, str], monkeypatch: pytest.MonkeyPatch,
            caplog: pytest.LogCaptureFixture) -> None:
    row_wise = snapshot_output(env, modes, extra, False, monkeypatch)
    with caplog.at_level(logging.INFO, logger="headwater.connectors.postgres.snapshot"):
        column_wise = snapshot_output(env, modes, extra, True, monkeypatch)
    logged = caplog.text
    for table in ("all_types", "edges", "keyless", "one_row"):
        assert f"read public.{table} column-wise" in logged, table
    # Kernel columns' odd values (BC dates, 20+ digit decimals, infinities...) are counted.
    assert "read public.edges: " in logged and "went through their converter" in logged
    # all_types has columns without kernels (floats, arrays, ...): they are named in the log.
    assert "f8, " in logged and "use their per-value converter" in logged
    topics = {topic for topic, _ in row_wise}
    assert {f"{env.prefix}.public.{t}" for t in ("all_types", "edges", "keyless", "one_row")} \
        <= topics
    assert len(column_wise) == len(row_wise) == 5 * 201 + 5 * 40 + 3000 + 1
    for n, (row, col) in enumerate(zip(row_wise, column_wise, strict=True)):
        # Each snapshot is its own transaction: its id differs when anything (an automatic
        # ANALYZE, say) took an id between the two; everything else must be equal byte for byte.
        want = (row[0], row[1]._replace(value=_TXID.sub(b'"txId":0', row[1].value or b"")))
        got = (col[0], col[1]._replace(value=_TXID.sub(b'"txId":0', col[1].value or b"")))
        if want != got:
            raise AssertionError(f"record {n} of {want[0]} differs:\nrow-wise    {want[1]}\n"
                                 f"column-wise {got[1]}")


@pytest.mark.parametrize("modes", MODES, ids=lambda m: "-".join(
    [m.time, m.decimal, m.hstore, m.interval, m.binary, "unknown" if m.unknown else "known"]))
def test_column_wise_equals_row_wise_in_every_mode(
        env: Env, modes: Modes, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    make_tables(env, modes)
    compare(env, modes, {}, monkeypatch, caplog)


def test_column_wise_equals_row_wise_with_mappers_and_key_columns(
        env: Env, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    make_tables(env, Modes())
    compare(env, Modes(), MAPPERS, monkeypatch, caplog)
