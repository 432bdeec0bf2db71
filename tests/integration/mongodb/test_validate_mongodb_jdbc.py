"""`headwater validate` of MongoDB collections against JDBC document tables: the real connector
captures a collection (snapshot, then streamed patches, an insert and a delete), the real
pipeline (`--once`) materializes it into PostgreSQL and MariaDB (SCD1 and SCD2), and
validate says equal (SCD2: the open versions only, the closed ones and the deleted document's
left out; a Delta SCD2 document table likewise); then one row's `__hw_doc` is changed with SQL
behind the pipeline's back, and validate names exactly that collection, `_id` and field."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from bson import Decimal128, Int64, ObjectId
from typer.testing import CliRunner

from headwater.cli import app
from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.runner import start
from headwater.testing.localpg import LocalPostgres
from headwater.validate import jdbc_side
from tests.integration.postgres.conftest import pg  # noqa: F401  (fixture)
from tests.pipeline_jdbc.conftest import (  # noqa: F401  (fixture)
    TargetDb,
    jdbc_spark_session,
    make_target,
    mariadb,
)

from .conftest import MongoEnv, wait

pytestmark = [pytest.mark.integration, pytest.mark.slow]

OID = ObjectId("65a1b2c3d4e5f60718293a4b")
DOCS = 24  # in the collection after the streamed changes
CHANGED = "7"  # the `_id` text of the row changed behind the pipeline's back


def _docs() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [{
        "_id": OID, "qty": Int64(2**40), "dec": Decimal128("0.10"),
        "when": datetime(2024, 2, 29, 23, 59, 59, 999000, tzinfo=UTC),
        "tags": ["a", 1, {"k": Int64(3)}], "nested": {"s": "Zoë 😀 \"q\"\n", "n": -0.5},
    }]
    docs += [{"_id": i, "qty": i, "name": f"n{i}", "sub": {"v": i * 1.5}} for i in range(1, 21)]
    docs += [{"_id": f"s{i}", "qty": Int64(i)} for i in range(3)]
    return docs


def _capture(env: MongoEnv) -> None:
    env.db.c.insert_many(_docs())
    cap = env.capture({"capture.mode": "change_streams",  # updates as patches
                       "collection.include.list": f"{env.db_name}\\.c"})
    try:
        wait(lambda: len(env.values("c")) >= 24, "the snapshot", 120, capture=cap)
        env.db.c.update_one({"_id": OID}, {"$set": {"qty": Int64(5), "nested.n": 2.25}})
        env.db.c.update_one({"_id": 3}, {"$inc": {"qty": 10}, "$push": {"more": Int64(1)},
                                         "$unset": {"name": ""}})
        env.db.c.insert_one({"_id": "late", "at": datetime(2026, 1, 1, tzinfo=UTC)})
        env.db.c.delete_one({"_id": 4})
        wait(lambda: len(env.values("c")) >= 28, "the streamed changes", 60, capture=cap)
    finally:
        cap.stop()


def _pipeline(env: MongoEnv, spark: Any, name: str, mode: str, target: dict[str, Any]
              ) -> Path:
    """The pipeline once into `target`; returns its configuration (a file of its own)."""
    name = f"{name}-{mode}"
    cfg = env.config({**target, "collection.include.list": f"{env.db_name}\\.c",
                      "headwater.pipeline.mode": mode,
                      "headwater.pipeline.delta.path": env.tmp / f"delta-{name}",
                      "headwater.pipeline.checkpoint.dir": env.tmp / f"checkpoint-{name}"})
    query = start(spark, load_pipeline_config(cfg), once=True)
    query.awaitTermination()
    assert query.exception() is None
    return cfg.rename(env.tmp / f"{name}.properties")


def _assert_equal(config: Path, env: MongoEnv, mode: str) -> dict[str, Any]:
    code, result, text = _validate(config)
    assert code == 0, (config, text)
    (table,) = result["tables"]
    assert table["equal"] and table["mode"] == mode, table
    assert table["table"] == f"{env.db_name}.c"
    assert table["source_rows"] == table["target_rows"] == DOCS
    return dict(table)


def _validate(config: Path) -> tuple[int, dict[str, Any], str]:
    base = ["validate", str(config), "--rechecks", "0", "--chunk-rows", "10"]
    runner = CliRunner()
    out = runner.invoke(app, [*base, "--json"])
    text = runner.invoke(app, base)
    assert out.exit_code == text.exit_code, (out.output, text.output)
    return out.exit_code, json.loads(out.output), text.output


def _table(target: TargetDb) -> str:
    q = '"' if target.kind == "postgres" else "`"
    return f"{q}{target.schema}{q}.{q}c{q}"


def _change_one_document(target: TargetDb, mode: str) -> None:
    """`name` of document 7 renamed in its (open) row's `__hw_doc`, with SQL."""
    q = '"' if target.kind == "postgres" else "`"
    open_only = f" AND {q}__END_AT{q} IS NULL" if mode == "scd2" else ""
    where = f"WHERE {q}__hw_id{q} = '{CHANGED}'{open_only}"
    table = _table(target)
    _, [(doc,)] = target.query(f"SELECT {q}__hw_doc{q} FROM {table} {where}")
    changed = orjson.loads(doc)
    assert changed["name"] == "n7"
    changed["name"] = "renamed"
    conn = target.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"UPDATE {table} SET {q}__hw_doc{q} = %s {where}",
                        (orjson.dumps(changed).decode(),))
            assert cur.rowcount == 1
        conn.commit()
    finally:
        conn.close()


def test_validate_compares_collections_with_jdbc_document_tables(
        env: MongoEnv, pg: LocalPostgres, request: pytest.FixtureRequest,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jdbc_side, "PAGE_ROWS", 5)  # the target read in several pages
    _capture(env)
    spark = jdbc_spark_session()
    # The Delta document table's SCD2 too: its open versions, read by the other side.
    _assert_equal(_pipeline(env, spark, "delta", "scd2", {}), env, "scd2")
    for kind, mode in (("postgres", "scd1"), ("postgres", "scd2"), ("mariadb", "scd1"),
                       ("mariadb", "scd2")):
        target = make_target(kind, pg, request)
        config = _pipeline(env, spark, target.database, mode, target.props())
        table = _assert_equal(config, env, mode)
        assert table["target"].startswith(f"{target.schema}.c ("), table["target"]
        if mode == "scd2":  # closed versions (3, the ObjectId) and the deleted 4 are there
            _, [(rows,)] = target.query(f"SELECT count(*) FROM {_table(target)}")
            assert rows == DOCS + 3

        _change_one_document(target, mode)
        code, result, text = _validate(config)
        assert code == 1, (kind, mode, text)
        (table,) = result["tables"]
        assert table["source_rows"] == table["target_rows"] == DOCS
        assert table["rows"] == [{"key": {"_id": CHANGED}, "kind": "changed", "columns": {
            "name": {"source": '"n7"', "target": '"renamed"'}}}], (kind, mode, table["rows"])
        assert f"{env.db_name}.c" in text
        assert f"changed _id={CHANGED}: name: source '\"n7\"', target '\"renamed\"'" in text
