"""`headwater validate` of MongoDB collections against Iceberg document tables: the real
connector captures a collection (snapshot, then streamed patches, an insert and a delete; the
JDBC test's workload), the real pipeline (`--once`) materializes it into Iceberg
(`headwater.pipeline.target=iceberg`, SCD1 and SCD2) and validate says equal (SCD2: the open
versions only, the closed ones left out).  Then, with the pipeline not running, a document is
changed in MongoDB and one document's (open) row is deleted from each Iceberg table with Spark
SQL: validate names the changed `_id` and its field, the missing `_id`, and exits 1.  The
changelog is refused by property name, with its reason.  One Spark session for the module (the
pipeline tests' fixture): the pipeline and validate both run in it."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from headwater.cli import app
from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.runner import start
from tests.pipeline.conftest import _spark_sessions, spark  # noqa: F401  (fixtures)

from .conftest import MongoEnv
from .test_validate_mongodb_jdbc import CHANGED, DOCS, _capture, _validate

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MISSING = "9"  # the `_id` text of the document deleted from the Iceberg tables


def _pipeline(env: MongoEnv, spark: Any, mode: str) -> tuple[Path, str]:  # noqa: F811
    """The pipeline once into an Iceberg warehouse of its own; returns its configuration and
    the collection's table in Spark SQL (a catalog of its own: a session keeps a catalog's
    warehouse once loaded)."""
    catalog = f"ice_{uuid.uuid4().hex[:10]}"
    cfg = env.config({"collection.include.list": f"{env.db_name}\\.c",
                      "headwater.pipeline.mode": mode,
                      "headwater.pipeline.target": "iceberg",
                      "headwater.pipeline.iceberg.warehouse": env.tmp / f"iceberg-{mode}",
                      "headwater.pipeline.iceberg.catalog": catalog,
                      "headwater.pipeline.checkpoint.dir": env.tmp / f"checkpoint-{mode}"})
    query = start(spark, load_pipeline_config(cfg), once=True)
    query.awaitTermination()
    assert query.exception() is None
    return cfg.rename(env.tmp / f"iceberg-{mode}.properties"), f"{catalog}.{env.db_name}.c"


def test_validate_compares_collections_with_iceberg_document_tables(
        env: MongoEnv, spark: Any) -> None:  # noqa: F811
    _capture(env)
    targets = {mode: _pipeline(env, spark, mode) for mode in ("scd1", "scd2")}
    for mode, (config, name) in targets.items():
        code, result, text = _validate(config)
        assert code == 0, (mode, text)
        (table,) = result["tables"]
        assert table["equal"] and table["mode"] == mode, table
        assert table["table"] == f"{env.db_name}.c"
        assert table["target"].startswith(f"{name} ("), table["target"]
        assert table["source_rows"] == table["target_rows"] == DOCS
        assert table["chunks"] > 1  # buckets of the `_id`: 24 documents, 10 per chunk
        assert f"{env.db_name}.c: EQUAL (source {DOCS} rows, target {DOCS};" in text
    # SCD2's closed versions (3 and the ObjectId, patched) and the deleted 4 are in the table
    # but not compared.
    scd2 = targets["scd2"][1]
    assert spark.sql(f"SELECT count(*) FROM {scd2}").collect()[0][0] == DOCS + 3
    assert spark.sql(f"SELECT count(*) FROM {scd2} WHERE __END_AT IS NULL").collect()[0][0] \
        == DOCS

    # With the pipeline not running: a document changed at the source, one deleted from each
    # target (SCD2: its open version, 9's only one).
    env.db.c.update_one({"_id": int(CHANGED)}, {"$set": {"name": "renamed"}})
    for mode, (config, name) in targets.items():
        open_only = " AND __END_AT IS NULL" if mode == "scd2" else ""
        spark.sql(f"DELETE FROM {name} WHERE __hw_id = '{MISSING}'{open_only}")
        code, result, text = _validate(config)
        assert code == 1, (mode, text)
        (table,) = result["tables"]
        assert not table["equal"]
        assert (table["source_rows"], table["target_rows"]) == (DOCS, DOCS - 1), table
        found = {(r["kind"], r["key"]["_id"]): r.get("columns") for r in table["rows"]}
        assert found == {
            ("changed", CHANGED): {"name": {"source": '"renamed"', "target": '"n7"'}},
            ("missing", MISSING): None,
        }, (mode, table["rows"])
        assert f"changed _id={CHANGED}: name: source '\"renamed\"', target '\"n7\"'" in text
        assert f"missing in target: _id={MISSING}" in text

    # The changelog: refused by property name, with why (its patch rows hold no document).
    changelog = env.tmp / "iceberg-changelog.properties"
    changelog.write_text(targets["scd1"][0].read_text().replace(
        "headwater.pipeline.mode=scd1", "headwater.pipeline.mode=changelog"))
    out = CliRunner().invoke(app, ["validate", str(changelog)])
    assert out.exit_code == 2, out.output
    assert ("headwater.pipeline.mode: validate compares MongoDB collections with scd1 and scd2 "
            "targets, not 'changelog' (a document changelog's patch rows hold no document to "
            "compare)") in " ".join(out.output.split()), out.output
