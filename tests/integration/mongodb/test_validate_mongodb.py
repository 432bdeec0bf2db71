"""`headwater validate` with a MongoDB source: the real connector captures a collection of
varied BSON types (snapshot, then streamed patches, an insert and a delete), `headwater
pipeline --once` applies it into Delta (SCD1, the document path), validate says equal; then
the Delta table is altered behind the pipeline's back (a changed field, a deleted document, an
added one) and validate names each `_id` (and the changed field)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from typing import Any

import orjson
import pyarrow as pa
import pytest
from bson import Binary, Decimal128, Int64, ObjectId, Regex, Timestamp
from deltalake import DeltaTable, write_deltalake
from typer.testing import CliRunner

from headwater.cli import app

from .conftest import MongoEnv, wait

pytestmark = [pytest.mark.integration, pytest.mark.slow]

OID = ObjectId("65a1b2c3d4e5f60718293a4b")


def _docs() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [{
        "_id": OID, "qty": Int64(2**40), "price": 12.5, "dec": Decimal128("0.10"),
        "when": datetime(2024, 2, 29, 23, 59, 59, 999000, tzinfo=UTC),
        "bin": Binary(b"\x00\xff\x10", 0), "uid": Binary.from_uuid(uuid.UUID(int=7)),
        "re": Regex("^ab", "im"), "ts": Timestamp(1700000000, 5), "ok": True, "none": None,
        "tags": ["a", 1, {"k": Int64(3)}], "nested": {"s": "Zoë 😀 \"q\"\n", "n": -0.5},
    }]
    docs += [{"_id": i, "qty": i, "name": f"n{i}", "sub": {"v": i * 1.5}} for i in range(1, 40)]
    docs += [{"_id": f"s{i}", "qty": Int64(i), "when": datetime(2000 + i, 1, 1, tzinfo=UTC)}
             for i in range(5)]
    return docs


def _validate(config: Any) -> tuple[int, dict[str, Any], str]:
    runner = CliRunner()
    text = runner.invoke(app, ["validate", str(config), "--rechecks", "0", "--chunk-rows", "10"])
    out = runner.invoke(app, ["validate", str(config), "--rechecks", "0", "--chunk-rows", "10",
                              "--json"])
    assert out.exit_code == text.exit_code, (out.output, text.output)
    return out.exit_code, json.loads(out.output), text.output


def test_validate_names_changed_missing_and_extra_documents(env: MongoEnv) -> None:
    env.db.c.insert_many(_docs())
    config = env.config({
        "capture.mode": "change_streams",  # updates as patches: relaxed fields in __hw_doc
        "collection.include.list": f"{env.db_name}\\.c",
        "headwater.pipeline.delta.path": env.tmp / "delta",
        "headwater.pipeline.checkpoint.dir": env.tmp / "checkpoint",
    })
    cap = env.capture({})
    try:
        wait(lambda: len(env.values("c")) >= 45, "the snapshot", 120, capture=cap)
        env.db.c.update_one({"_id": OID}, {"$set": {"qty": Int64(5), "nested.n": 2.25},
                                           "$unset": {"none": ""}})
        env.db.c.update_one({"_id": 3}, {"$inc": {"qty": 10}, "$push": {"more": Int64(1)}})
        env.db.c.insert_one({"_id": "late", "at": datetime(2026, 1, 1, tzinfo=UTC)})
        env.db.c.delete_one({"_id": 4})
        wait(lambda: len(env.values("c")) >= 49, "the streamed changes", 60, capture=cap)
    finally:
        cap.stop()
    out = subprocess.run([sys.executable, "-m", "headwater.cli", "pipeline", str(config),
                          "--once", "--log-level", "WARNING"],
                         capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-3000:]

    code, result, text = _validate(config)
    assert code == 0, text
    (table,) = result["tables"]
    assert table["table"] == f"{env.db_name}.c" and table["equal"], table
    assert table["source_rows"] == table["target_rows"] == 45
    assert table["target"].endswith(f"/{env.db_name}/c"), table["target"]
    assert table["chunks"] > 1  # buckets of the `_id`: 45 documents, 10 per chunk

    path = table["target"]
    dt = DeltaTable(path)
    rows = {r["__hw_id"]: r for r in dt.to_pyarrow_table().to_pylist()}
    oid_key = '{"$oid":"65a1b2c3d4e5f60718293a4b"}'
    changed = orjson.loads(rows["7"]["__hw_doc"])
    changed["name"] = "renamed"
    dt.update(predicate="__hw_id = '7'",
              updates={"__hw_doc": "'" + orjson.dumps(changed).decode() + "'"})
    DeltaTable(path).delete(f"__hw_id = '{oid_key}'")
    extra = DeltaTable(path).to_pyarrow_table().filter(
        pa.compute.equal(pa.compute.field("__hw_id"), '"s1"'))
    extra = extra.set_column(extra.column_names.index("__hw_id"), "__hw_id",
                             pa.array(['"ghost"'], pa.string()))
    extra = extra.set_column(extra.column_names.index("__hw_doc"), "__hw_doc",
                             pa.array(['{"_id":"ghost","qty":1}'], pa.string()))
    write_deltalake(path, extra, mode="append")

    code, result, text = _validate(config)
    assert code == 1, text
    (table,) = result["tables"]
    assert not table["equal"]
    assert table["source_rows"] == 45 and table["target_rows"] == 45
    found = {(r["kind"], r["key"]["_id"]): r.get("columns") for r in table["rows"]}
    assert found == {
        ("changed", "7"): {"name": {"source": '"n7"', "target": '"renamed"'}},
        ("missing", oid_key): None,
        ("extra", '"ghost"'): None,
    }, table["rows"]
    assert f"missing in target: _id={oid_key}" in text
    assert "extra in target (not in source): _id=\"ghost\"" in text
    assert "changed _id=7: name: source '\"n7\"', target '\"renamed\"'" in text
