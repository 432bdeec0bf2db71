"""`headwater validate` against a real PostgreSQL source and Delta targets written the way the
pipeline writes them (same layout, Arrow types and bookkeeping column), built directly with
deltalake from the same generated dataset, so a 1M-row table takes seconds to build (its two
`validate` runs took 99 s under CI's load: the million runs with `--long`, CI compares 200,000
rows in the same default 100,000-row chunks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable, write_deltalake
from typer.testing import CliRunner

from headwater.cli import app
from tests.integration.postgres.conftest import Env, env, pg  # noqa: F401  (fixtures)

runner = CliRunner()


def source_table(e: Env, name: str, n: int, key: bool = True) -> None:
    pk = " PRIMARY KEY" if key else ""
    e.sql(f"CREATE TABLE {name} (id int{pk}, v text, amount numeric(12,2), at timestamp, "
          "day date, ok boolean, x float8, raw bytea)")
    e.sql(f"INSERT INTO {name} SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE 'v' || (i % 1000) "
          "END, (i % 100000) / 100.0, timestamp '2000-01-01' + i * interval '1 second', "
          "date '2000-01-01' + (i % 10000), i % 2 = 0, i / 4.0, '\\x00'::bytea "
          f"FROM generate_series(1, {n}) i")


def target_table(root: Path, name: str, n: int) -> Path:
    """What the SCD1 pipeline holds for `source_table(name, n)`."""
    i = np.arange(1, n + 1, dtype=np.int64)
    v = pc.binary_join_element_wise(pa.scalar("v"), pc.cast(pa.array(i % 1000), pa.string()), "")
    v = pc.if_else(pa.array(i % 7 == 0), pa.scalar(None, pa.string()), v)
    table = pa.table({
        "id": pa.array(i.astype(np.int32)),
        "v": v,
        "amount": pc.cast(pc.divide(pa.array((i % 100000).astype(np.float64)), 100.0)
                          .cast(pa.decimal128(14, 4)).cast(pa.decimal128(12, 2)),
                          pa.decimal128(12, 2)),
        "at": pa.array((946684800 + i) * 1_000_000, pa.timestamp("us")),
        "day": pa.array((10957 + i % 10000).astype(np.int32), pa.date32()),
        "ok": pa.array(i % 2 == 0),
        "x": pa.array(i / 4.0),
        "raw": pa.array([b"\x00"] * n, pa.binary()),
        "__hw_seq": pa.array(np.char.mod("%016x", i).astype(object), pa.string()),
    })
    path = root / "public" / name
    write_deltalake(str(path), table)
    return path


def config(e: Env) -> Path:
    return e.config({"headwater.pipeline.delta.path": str(e.tmp / "delta"),
                     "headwater.pipeline.mode": "scd1"})


def validate(e: Env, *args: str) -> tuple[int, dict[str, Any], str]:
    base = ["validate", str(config(e)), "--rechecks", "0"]
    as_json = runner.invoke(app, [*base, "--json", *args])
    text = runner.invoke(app, [*base, *args])
    assert as_json.exit_code == text.exit_code, (as_json.output, text.output)
    return as_json.exit_code, orjson.loads(as_json.stdout), text.output


@pytest.mark.parametrize(("rows", "changed", "chunks"), [
    # in CI: three chunks of the default 100,000 rows, the change in the second
    (200_000, 177_777, 3),
    pytest.param(1_000_000, 777_777, 11, marks=pytest.mark.long),  # the million (--long)
])
def test_finds_one_changed_value_in_a_million_rows(
        env: Env,  # noqa: F811
        rows: int, changed: int, chunks: int) -> None:
    env.conn.autocommit = True
    source_table(env, "big", rows)
    target_table(env.tmp / "delta", "big", rows)
    env.sql(f"UPDATE big SET amount = 12.35 WHERE id = {changed}")
    code, doc, text = validate(env)
    assert code == 1
    [t] = doc["tables"]
    assert (t["table"], t["source_rows"], t["target_rows"]) == ("public.big", rows, rows)
    assert t["chunks"] == chunks and t["differing_chunks"] == [changed // 100_000]
    assert t["rows"] == [{"key": {"id": str(changed)}, "kind": "changed",
                          "columns": {"amount": {"source": "12.35", "target": "777.77"}}}]
    assert t["not_compared"] == ["raw (target type binary not compared)"]
    assert f"changed id={changed}: amount: source '12.35', target '777.77'" in text


@pytest.mark.parametrize(("change", "kind", "key"), [
    ("INSERT INTO t (id, v) VALUES (5001, 'new')", "missing", "5001"),
    ("DELETE FROM t WHERE id = 4321", "extra", "4321"),
])
def test_missing_and_extra_rows(env: Env, change: str, kind: str, key: str) -> None:  # noqa: F811
    env.conn.autocommit = True
    source_table(env, "t", 5000)
    target_table(env.tmp / "delta", "t", 5000)
    env.sql(change)
    code, doc, text = validate(env, "--chunk-rows", "1000")
    assert code == 1
    [t] = doc["tables"]
    assert t["rows"] == [{"key": {"id": key}, "kind": kind}]
    assert t["differing_chunks"] == [int(key) // 1000]
    shown = "missing in target" if kind == "missing" else "extra in target (not in source)"
    assert f"{shown}: id={key}" in text


def test_equal_tables_exit_zero(env: Env) -> None:  # noqa: F811
    env.conn.autocommit = True
    source_table(env, "t", 5000)
    target_table(env.tmp / "delta", "t", 5000)
    code, doc, text = validate(env, "--chunk-rows", "1000")
    assert code == 0, text
    assert doc["equal"] is True and doc["tables"][0]["chunks"] == 6
    assert "public.t: EQUAL (source 5000 rows, target 5000; 6 chunks)" in text


def test_text_keys_are_chunked_by_hash(env: Env) -> None:  # noqa: F811
    env.conn.autocommit = True
    env.sql("CREATE TABLE k (code text PRIMARY KEY, n int)")
    env.sql("INSERT INTO k SELECT 'c' || i, i FROM generate_series(1, 3000) i")
    write_deltalake(str(env.tmp / "delta" / "public" / "k"), pa.table({
        "code": [f"c{i}" for i in range(1, 3001)],
        "n": pa.array(range(1, 3001), pa.int32()),
        "__hw_seq": ["0"] * 3000}))
    code, doc, _ = validate(env, "--chunk-rows", "500")
    assert code == 0 and doc["tables"][0]["chunks"] == 6
    env.sql("UPDATE k SET n = -1 WHERE code = 'c2024'")
    code, doc, _ = validate(env, "--chunk-rows", "500")
    assert code == 1
    assert doc["tables"][0]["rows"] == [{"key": {"code": "c2024"}, "kind": "changed",
                                         "columns": {"n": {"source": "-1", "target": "2024"}}}]


def test_keyless_table(env: Env) -> None:  # noqa: F811
    env.conn.autocommit = True
    source_table(env, "nokey", 2000, key=False)
    target_table(env.tmp / "delta", "nokey", 2000)
    code, doc, text = validate(env)
    assert code == 0 and doc["tables"][0]["key"] == [], text  # equal: compared as one chunk
    env.sql("UPDATE nokey SET v = 'x' WHERE id = 10")
    code, doc, text = validate(env)
    assert code == 1
    assert ("public.nokey has no primary key: the tables differ (source 2000 rows, target 2000) "
            "but rows cannot be matched to name them") in text
    assert doc["tables"][0]["problem"].startswith("public.nokey has no primary key")


def test_scd2_and_changelog_targets(env: Env) -> None:  # noqa: F811
    """Hand-built SCD2 and changelog targets of a PostgreSQL table: their current rows (open
    versions; the latest event per key unless a delete) are what is compared."""
    env.conn.autocommit = True
    source_table(env, "t", 3000)
    rows = pa.table(DeltaTable(str(target_table(env.tmp / "built", "t", 3000))).to_pyarrow_table()
                    .drop_columns(["__hw_seq"]))
    old = rows.slice(0, 100).set_column(1, "v", pa.array(["old"] * 100))

    def with_columns(table: pa.Table, **columns: Any) -> pa.Table:
        for name, value in columns.items():
            table = table.append_column(name, pa.array([value] * table.num_rows, pa.string()))
        return table

    root = env.tmp / "delta"
    write_deltalake(str(root / "public" / "t"), pa.concat_tables([
        with_columns(rows, __START_AT="2", __END_AT=None),
        with_columns(old, __START_AT="1", __END_AT="2")]))  # closed versions
    scd2 = env.config({"headwater.pipeline.delta.path": str(root),
                       "headwater.pipeline.mode": "scd2"})
    result = runner.invoke(app, ["validate", str(scd2), "--rechecks", "0", "--json"])
    assert result.exit_code == 0, result.output

    log = env.tmp / "log"
    write_deltalake(str(log / "public" / "t"), pa.concat_tables([
        with_columns(rows, __op="r", __hw_sequence="2"),
        with_columns(old, __op="u", __hw_sequence="1"),  # older: changes nothing
        with_columns(rows.slice(6, 1), __op="d", __hw_sequence="3")]))  # id 7 deleted
    changelog = env.config({"headwater.pipeline.delta.path": str(log),
                            "headwater.pipeline.mode": "changelog"})
    result = runner.invoke(app, ["validate", str(changelog), "--rechecks", "0", "--json"])
    assert result.exit_code == 1, result.output
    [t] = orjson.loads(result.stdout)["tables"]
    assert (t["mode"], t["source_rows"], t["target_rows"]) == ("changelog", 3000, 2999)
    assert t["rows"] == [{"key": {"id": "7"}, "kind": "missing"}]
