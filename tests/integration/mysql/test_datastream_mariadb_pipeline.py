"""A real MariaDB captured into Datastream Avro files, primary-key changes included
(UPDATE-DELETE + UPDATE-INSERT at one binlog position, one row and many rows per statement),
applied by the real pipeline: the Delta table (SCD1, and SCD2's current versions) equals the
source table, every column typed from the Avro schema."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from fastavro import reader

from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.delta_target import read_table
from headwater.pipeline.runner import start
from headwater.testing.localpg import wait_for

from .conftest import MariaEnv

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from headwater.pipeline.runner import spark_session

    session = spark_session("headwater-datastream-maria", master="local[1]")
    try:
        yield session
    finally:
        session.stop()


def events(root: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted(root.rglob("*.avro")) if root.exists() else []:
        if ".inflight" in path.parts:
            continue  # being written
        with path.open("rb") as fh:
            out.extend(dict(r) for r in reader(fh))  # type: ignore[arg-type]
    return out


def test_mariadb_key_changes_through_the_pipeline(menv: MariaEnv, spark: Any) -> None:
    menv.sql("CREATE TABLE t (id INT PRIMARY KEY, ver INT NOT NULL, amount DECIMAL(8,2), "
             "day DATE)")
    menv.sql("INSERT INTO t VALUES (1, 0, 1.25, '2024-01-02'), (2, 0, NULL, NULL), "
             "(3, 0, 3.50, '2024-03-04')")
    menv.sql("COMMIT")
    root = menv.tmp / "files"
    cap = menv.capture({
        "headwater.event.format": "datastream",
        "headwater.datastream.stream.name": "projects/p/locations/l/streams/maria-ds",
        "headwater.destination": "files", "headwater.destination.files.dir": str(root),
        "headwater.destination.files.format": "avro",
        "headwater.destination.files.max.ms": 200})
    try:
        wait_for(lambda: len(events(root)) >= 3, what="backfill", timeout=60)
        menv.sql("UPDATE t SET id = 10, ver = 1 WHERE id = 1")  # key change of one row
        menv.sql("UPDATE t SET id = id + 100, ver = 2 WHERE id IN (2, 3)")  # of many rows
        menv.sql("UPDATE t SET ver = 3, amount = 9.99 WHERE id = 103")
        menv.sql("INSERT INTO t VALUES (2, 4, 2.00, '2025-05-06')")  # the old key again
        menv.sql("DELETE FROM t WHERE id = 102")
        menv.sql("COMMIT")
        wait_for(lambda: any(e["source_metadata"]["change_type"] == "DELETE"
                             for e in events(root)), what="binlog events", timeout=60)
    finally:
        cap.stop()
    kinds = {e["source_metadata"]["change_type"] for e in events(root)}
    assert {"UPDATE-DELETE", "UPDATE-INSERT"} <= kinds
    want = {int(r[0]): (int(r[1]), None if r[2] is None else Decimal(str(r[2])), r[3])
            for r in menv.sql("SELECT id, ver, amount, day FROM t")}
    for mode in ("scd1", "scd2"):
        config = menv.tmp / f"pipeline-{mode}.properties"
        config.write_text(
            f"topic.prefix=maria\nheadwater.pipeline.source=datastream-files\n"
            f"headwater.pipeline.datastream.files.dir={root}\n"
            f"headwater.pipeline.delta.path={menv.tmp / mode}\n"
            f"headwater.pipeline.checkpoint.dir={menv.tmp / ('ck-' + mode)}\n"
            f"headwater.pipeline.mode={mode}\n"
            "headwater.pipeline.datastream.max.files.per.trigger=1\n")
        query = start(spark, load_pipeline_config(config), once=True)
        query.awaitTermination()
        assert query.exception() is None
        rows = read_table(menv.tmp / mode / menv.db / "t").to_pylist()
        if mode == "scd2":
            rows = [r for r in rows if r["__END_AT"] is None]
        got = {r["id"]: (r["ver"], r["amount"], r["day"]) for r in rows}
        assert len(got) == len(rows)
        assert got == want, mode
