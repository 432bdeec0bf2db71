"""Capture from a real PostgreSQL, materialize with a real Spark into JDBC targets (SCD1): every
common type, unchanged TOAST values across batches, and a column added at the source."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.decode import PLACEHOLDER
from headwater.pipeline.runner import start
from headwater.topics import reader
from tests.integration.postgres.conftest import Env, wait_for
from tests.pipeline_jdbc.conftest import TargetDb

pytestmark = pytest.mark.integration

COLUMNS = ("id", "name", "price", "day", "at", "atz", "ok", "big", "raw", "tags", "doc", "u",
           "f", "blob", "extra")


def run_once(spark: Any, env: Env, props: dict[str, Any]) -> None:
    query = start(spark, load_pipeline_config(env.config(props)), once=True)
    query.awaitTermination()
    assert query.exception() is None


def caught_up(env: Env, cap: Any) -> None:
    # The insert position: with synchronous_commit off (test servers) the write position
    # pg_current_wal_lsn() can lag behind the last commit, and the wait would end too early.
    lsn = env.sql("SELECT pg_current_wal_insert_lsn()::text")[0][0]
    hi, lo = lsn.split("/")
    end = (int(hi, 16) << 32) | int(lo, 16)
    wait_for(lambda: int((cap.runtime.offsets.load() or {}).get("lsn", 0)) >= end,
             timeout=60, what="capture caught up")


def source_rows(env: Env) -> dict[int, dict[str, Any]]:
    with env.conn.cursor() as cur:
        cur.execute("SELECT * FROM t")
        names = [d.name for d in cur.description]
        out = {}
        for r in cur.fetchall():
            row = dict(zip(names, r, strict=True))
            row["raw"] = None if row["raw"] is None else bytes(row["raw"])
            out[row["id"]] = row
        return out


def target_rows(target: TargetDb) -> dict[int, dict[str, Any]]:
    out = {}
    for r in target.rows("t"):
        for name in ("tags", "doc"):
            r[name] = None if r[name] is None else json.loads(r[name])
        if target.kind == "mariadb" and r["atz"] is not None:  # DATETIME(6): UTC wall time
            r["atz"] = r["atz"].replace(tzinfo=dt.UTC)
        out[r["id"]] = r
    return out


def assert_equal(env: Env, target: TargetDb) -> None:
    want, got = source_rows(env), target_rows(target)
    assert got.keys() == want.keys()
    for k, row in want.items():
        for name in COLUMNS:
            if name in row:
                assert got[k][name] == row[name], (k, name, got[k][name], row[name])


def test_types_toast_and_new_columns_equal_source(
        env: Env, target: TargetDb, jdbc_spark: Any) -> None:
    props = target.props(**{"headwater.pipeline.checkpoint.dir": env.tmp / "checkpoint"})
    env.sql("CREATE TABLE t (id int PRIMARY KEY, name text NOT NULL, price numeric(10,2), "
            "day date, at timestamp, atz timestamptz, ok boolean, big bigint, raw bytea, "
            "tags int[], doc jsonb, u uuid, f float8, blob text)")
    # blob: ~12 kB of random hex, too big to stay inline: TOASTed.
    env.sql("INSERT INTO t SELECT g, 'n' || g, g * 1.25, DATE '2024-01-01' + g, "
            "TIMESTAMP '2024-01-01 10:00:00.123456' + g * interval '1 hour', "
            "TIMESTAMPTZ '2024-01-01 10:00:00+02' + g * interval '1 minute', g % 2 = 0, "
            "g::bigint * 1000000000, decode(md5(g::text), 'hex'), ARRAY[g, NULL, g + 1], "
            "jsonb_build_object('g', g, 'nested', jsonb_build_array(1, 'x')), "
            "md5(g::text)::uuid, g / 3.0, "
            "CASE WHEN g <= 20 THEN (SELECT string_agg(md5(random()::text), '') "
            "FROM generate_series(1, 400 + g)) END FROM generate_series(1, 200) g")
    cap = env.capture(props)
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
    finally:
        cap.stop()
    run_once(jdbc_spark, env, props)
    assert_equal(env, target)
    # Updates that leave the TOASTed column alone: the source does not send it again.
    cap = env.capture(props)
    try:
        env.sql("UPDATE t SET name = 'changed', price = NULL WHERE id <= 30")
        env.sql("DELETE FROM t WHERE id BETWEEN 31 AND 40")
        env.sql("UPDATE t SET id = id + 1000 WHERE id BETWEEN 41 AND 45")  # key changes
        env.sql("ALTER TABLE t ADD COLUMN extra text")
        env.sql("UPDATE t SET extra = 'x' || id WHERE id BETWEEN 10 AND 60")
        env.sql("INSERT INTO t (id, name, extra) VALUES (5000, 'late', 'e')")
        caught_up(env, cap)
    finally:
        cap.stop()
    unavailable = sum(1 for r in reader.read(env.topics, f"{env.prefix}.public.t")
                      if r.value is not None and PLACEHOLDER.encode() in _bytes(r.value))
    assert unavailable >= 20, "the capture sent the TOASTed values: nothing is tested"
    run_once(jdbc_spark, env, props)
    assert_equal(env, target)
    assert target_rows(target)[1]["blob"] is not None
    # Nothing new: nothing changes.
    before = target.rows("t", bookkeeping=True)
    run_once(jdbc_spark, env, props)
    assert sorted(target.rows("t", bookkeeping=True), key=lambda r: r["id"]) == sorted(
        before, key=lambda r: r["id"])


def _bytes(v: Any) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode()
