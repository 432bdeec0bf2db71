"""`headwater validate` with a MariaDB source: the real connector captures a table of mixed
types (snapshot, then streamed inserts, updates and deletes), the real pipeline materializes
it (`--once`) into Delta in each mode and into a PostgreSQL JDBC target, and validate must say
equal; then the target is changed behind the pipeline's back (one value, one row deleted, one
added) and validate must name each key and column."""

from __future__ import annotations

import datetime as dt
import itertools
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable, write_deltalake
from typer.testing import CliRunner

from headwater.cli import app
from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.runner import start
from headwater.testing.localpg import LocalPostgres
from headwater.testing.replay import replay
from tests.integration.postgres.conftest import pg  # noqa: F401  (fixture)
from tests.pipeline_jdbc.conftest import jdbc_spark_session

from .conftest import MariaEnv, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

runner = CliRunner()
_targets = itertools.count()

TABLE = """
CREATE TABLE things (
  id INT NOT NULL PRIMARY KEY,
  ver INT NOT NULL,
  name VARCHAR(40) CHARACTER SET utf8mb4,
  code CHAR(6) CHARACTER SET latin1,
  amount DECIMAL(12,2),
  big BIGINT UNSIGNED,
  small TINYINT,
  placed DATETIME(6),
  changed TIMESTAMP(3) NULL,
  due DATE,
  paid BIT(1),
  status ENUM('new','paid','shipped'),
  ratio DOUBLE,
  took TIME(3),
  raw VARBINARY(8)
) DEFAULT CHARSET=utf8mb4"""

# ratio: MariaDB's text of a DOUBLE is not the canonical one; took: a TIME the pipeline holds as
# text of its own form; raw: binary
NOT_COMPARED = {"ratio", "took", "raw"}


@pytest.fixture(scope="module")
def spark() -> Any:
    return jdbc_spark_session()  # Delta and the JDBC drivers in one JVM


def row(i: int) -> tuple[Any, ...]:
    return (i, 0, ["Zoë 😀", "O'Brien", "", None][i % 4], ["ÄÖÜ€", "abc", None][i % 3],
            Decimal(i * 37 % 100000) / 100 - 300, 2**64 - i if i % 5 == 0 else i,
            -(i % 128), dt.datetime(1999, 12, 31, 23, 59, 59, 123456) + dt.timedelta(hours=i),
            None if i % 6 == 0 else dt.datetime(2001, 2, 3, 4, 5, 6, 789000)
            + dt.timedelta(minutes=i),
            dt.date(1000, 1, 1) + dt.timedelta(days=i * 997), i % 2, ["new", "paid", None][i % 3],
            i / 3, dt.timedelta(milliseconds=i * 1001), bytes([i % 256]))


def capture(env: MariaEnv) -> None:
    """300 rows by snapshot, then streamed: 20 inserts, 40 updates, 15 deletes."""
    env.sql("SET SESSION time_zone = '+05:30'")  # TIMESTAMPs written there are UTC instants
    env.sql(TABLE)
    insert = f"INSERT INTO things VALUES ({', '.join(['%s'] * 15)})"
    for i in range(1, 301):
        env.sql(insert, row(i))
    cap = env.capture({"bigint.unsigned.handling.mode": "precise"})
    try:
        wait_for(env.snapshot_completed, timeout=60, what="the end of the snapshot")
        for i in range(301, 321):
            env.sql(insert, row(i))
        for i in range(10, 50):
            env.sql("UPDATE things SET ver = ver + 1, name = %s, amount = amount + 1, "
                    "changed = NOW(3) WHERE id = %s", (f"u{i}", i))
        env.sql("DELETE FROM things WHERE id BETWEEN 100 AND 114")

        def caught_up() -> bool:
            captured = {dict(k)["id"]: r["ver"]
                        for k, r in replay(env.topics, env.topic("things")).items()}
            return captured == dict(env.sql("SELECT id, ver FROM things"))

        wait_for(caught_up, timeout=90, what="the capture to catch up")
    finally:
        cap.stop()


def pipeline(env: MariaEnv, spark: Any, mode: str, **target: Any) -> Path:
    """Runs the pipeline once into a target of its own; returns its configuration."""
    n = next(_targets)
    cfg = env.config({"headwater.pipeline.mode": mode,
                      "headwater.pipeline.delta.path": env.tmp / f"delta-{n}",
                      "headwater.pipeline.checkpoint.dir": env.tmp / f"checkpoint-{n}",
                      "bigint.unsigned.handling.mode": "precise", **target})
    query = start(spark, load_pipeline_config(cfg), once=True)
    query.awaitTermination()
    assert query.exception() is None
    return cfg.rename(env.tmp / f"pipeline-{n}.properties")


def validate(cfg: Path) -> tuple[int, dict[str, Any], str]:
    base = ["validate", str(cfg), "--rechecks", "0", "--chunk-rows", "100"]
    as_json = runner.invoke(app, [*base, "--json"])
    text = runner.invoke(app, base)
    assert as_json.exit_code == text.exit_code, (as_json.output, text.output)
    return as_json.exit_code, orjson.loads(as_json.stdout), text.output


def assert_equal(cfg: Path, env: MariaEnv) -> dict[str, Any]:
    code, doc, text = validate(cfg)
    assert code == 0, text
    t: dict[str, Any]
    [t] = doc["tables"]
    assert (t["table"], t["source_rows"], t["target_rows"]) == (f"{env.db}.things", 305, 305)
    assert t["chunks"] == 4, t
    assert {c.split(" ")[0] for c in t["not_compared"]} == NOT_COMPARED, t["not_compared"]
    assert "took (source type time held as text: not compared)" in t["not_compared"]
    assert {"name", "code", "amount", "big", "small", "placed", "changed", "due", "paid",
            "status"} <= set(t["compared_columns"])
    return t


def delta_path(cfg: Path, env: MariaEnv) -> str:
    return str(load_pipeline_config(cfg).delta_path / env.db / "things")


def assert_tampering_found(cfg: Path, changed_to: str) -> None:
    code, doc, text = validate(cfg)
    assert code == 1, text
    assert doc["tables"][0]["rows"] == [
        {"key": {"id": "5"}, "kind": "changed",
         "columns": {"name": {"source": "O'Brien", "target": changed_to}}},
        {"key": {"id": "9"}, "kind": "missing"},
        {"key": {"id": "999"}, "kind": "extra"},
    ], text
    assert "missing in target: id=9" in text and "extra in target (not in source): id=999" in text


def test_scd1_delta(menv: MariaEnv, spark: Any) -> None:
    capture(menv)
    cfg = pipeline(menv, spark, "scd1")
    # validate reads TIMESTAMPs in UTC whatever the server's zone (the capture has stopped: no
    # other session of this worker's server is in use)
    (zone,) = menv.sql("SELECT @@GLOBAL.time_zone")[0]
    menv.sql("SET GLOBAL time_zone = '+03:00'")
    try:
        assert_equal(cfg, menv)
    finally:
        menv.sql("SET GLOBAL time_zone = %s", (zone,))
    table = DeltaTable(delta_path(cfg, menv))
    table.update(predicate="id = 5", updates={"name": "'tampered'"})
    table.delete("id = 9")
    extra = table.to_pyarrow_table(filters=[("id", "=", 8)])
    at = extra.schema.get_field_index("id")
    write_deltalake(table, extra.set_column(at, "id", pa.array([999], pa.int32())), mode="append")
    assert_tampering_found(cfg, "tampered")


def test_scd2_and_changelog_delta(menv: MariaEnv, spark: Any) -> None:
    capture(menv)
    scd2 = pipeline(menv, spark, "scd2")
    assert_equal(scd2, menv)
    history = DeltaTable(delta_path(scd2, menv))
    versions = history.to_pyarrow_table().num_rows
    assert versions == 305 + 40 + 15, versions  # the versions closed by updates and deletes
    # close key 20's open version: the current rows lose it
    history.update(predicate='id = 20 AND "__END_AT" IS NULL', updates={"__END_AT": "'z'"})
    code, doc, _ = validate(scd2)
    assert code == 1 and doc["tables"][0]["rows"] == [{"key": {"id": "20"}, "kind": "missing"}]

    changelog = pipeline(menv, spark, "changelog")
    assert_equal(changelog, menv)
    log = DeltaTable(delta_path(changelog, menv))
    events = log.to_pyarrow_table()
    assert events.num_rows == 300 + 20 + 40 + 15
    # the latest event per key counts: a newer update of key 30 changes it, an older one of
    # key 31 does not, a newer delete of key 32 removes it
    newest = max(events.column("__hw_sequence").to_pylist())
    oldest = min(events.column("__hw_sequence").to_pylist())
    rows = events.filter(pc.is_in(events.column("id"),
                                          pa.array([30, 31, 32], pa.int32()))).to_pylist()
    rows = sorted({r["id"]: r for r in rows}.values(), key=lambda r: r["id"])
    rows[0].update(name="later", __op="u", __hw_sequence=newest + "1")
    rows[1].update(name="earlier", __op="u", __hw_sequence=oldest[:-1])
    rows[2].update(__op="d", __hw_sequence=newest + "2")
    write_deltalake(log, pa.Table.from_pylist(rows, schema=events.schema), mode="append")
    code, doc, text = validate(changelog)
    assert code == 1, text
    assert doc["tables"][0]["rows"] == [
        {"key": {"id": "30"}, "kind": "changed",
         "columns": {"name": {"source": "u30", "target": "later"}}},
        {"key": {"id": "32"}, "kind": "missing"}]


def test_scd1_jdbc_postgres_target(menv: MariaEnv, spark: Any,
                                   pg: LocalPostgres) -> None:  # noqa: F811
    capture(menv)
    database = f"hw_validate_{next(_targets)}"
    pg.create_database(database)
    cfg = pipeline(menv, spark, "scd1", **{
        "headwater.pipeline.target": "jdbc",
        "headwater.pipeline.jdbc.url": f"jdbc:postgresql://127.0.0.1:{pg.port}/{database}",
        "headwater.pipeline.jdbc.user": pg.user})
    t = assert_equal(cfg, menv)
    assert t["target"] == f"public.things (postgresql://127.0.0.1:{pg.port}/{database})"
    conn = pg.connect(database)
    try:
        with conn.cursor() as cur:
            cur.execute("UPDATE things SET name = 'jdbc' WHERE id = 5")
            cur.execute("DELETE FROM things WHERE id = 9")
            cur.execute("CREATE TEMP TABLE copied AS SELECT * FROM things WHERE id = 8")
            cur.execute("UPDATE copied SET id = 999")
            cur.execute("INSERT INTO things SELECT * FROM copied")
    finally:
        conn.close()
    assert_tampering_found(cfg, "jdbc")


def test_scd2_and_changelog_jdbc_postgres_target(menv: MariaEnv, spark: Any,
                                                 pg: LocalPostgres) -> None:  # noqa: F811
    """The current rows of SCD2 and changelog JDBC targets, chosen by PostgreSQL's own SQL."""
    capture(menv)
    configs = {}
    for mode in ("scd2", "changelog"):
        database = f"hw_validate_{next(_targets)}"
        pg.create_database(database)
        configs[mode] = (database, pipeline(menv, spark, mode, **{
            "headwater.pipeline.target": "jdbc",
            "headwater.pipeline.jdbc.url": f"jdbc:postgresql://127.0.0.1:{pg.port}/{database}",
            "headwater.pipeline.jdbc.user": pg.user}))
        assert_equal(configs[mode][1], menv)
    conn = pg.connect(configs["scd2"][0])
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM things")
            assert cur.fetchone() == (305 + 40 + 15,)
            cur.execute("UPDATE things SET \"__END_AT\" = 'z' WHERE id = 20 "
                        "AND \"__END_AT\" IS NULL")
    finally:
        conn.close()
    code, doc, _ = validate(configs["scd2"][1])
    assert code == 1 and doc["tables"][0]["rows"] == [{"key": {"id": "20"}, "kind": "missing"}]
    conn = pg.connect(configs["changelog"][0])
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*), max(__hw_sequence) FROM things")
            count, newest = cur.fetchone()
            assert count == 300 + 20 + 40 + 15
            # a newer delete of key 32: the key is gone
            cur.execute("CREATE TEMP TABLE copied AS SELECT * FROM things WHERE id = 32 LIMIT 1")
            cur.execute("UPDATE copied SET __op = 'd', __hw_sequence = %s", (newest + "1",))
            cur.execute("INSERT INTO things SELECT * FROM copied")
    finally:
        conn.close()
    code, doc, _ = validate(configs["changelog"][1])
    assert code == 1 and doc["tables"][0]["rows"] == [{"key": {"id": "32"}, "kind": "missing"}]
    conn = pg.connect(configs["changelog"][0])
    try:
        with conn.cursor() as cur:  # then a truncate (no image): no event before it counts
            cur.execute("INSERT INTO things (__op, __hw_sequence) VALUES ('t', %s)",
                        (newest + "2",))
    finally:
        conn.close()
    code, doc, _ = validate(configs["changelog"][1])
    [t] = doc["tables"]
    assert code == 1 and (t["source_rows"], t["target_rows"]) == (305, 0)


def test_scd1_and_changelog_jdbc_mariadb_target(menv: MariaEnv, spark: Any) -> None:
    """MariaDB JDBC targets, hashed by MariaDB, in a database of the source's own server: the
    target table `things` then has two namesakes among the source's schemas (the source and the
    target itself), and the topic log tells which one is captured."""
    capture(menv)
    configs = {}
    for mode in ("scd1", "changelog"):
        database = f"hw_validate_{next(_targets)}"
        menv.server.create_database(database)
        configs[mode] = (database, pipeline(menv, spark, mode, **{
            "headwater.pipeline.target": "jdbc",
            "headwater.pipeline.jdbc.url": menv.server.jdbc_url(database),
            "headwater.pipeline.jdbc.user": menv.server.user,
            "headwater.pipeline.jdbc.password": menv.server.password}))
    try:
        for _, cfg in configs.values():
            t = assert_equal(cfg, menv)
            assert "paid" in t["compared_columns"]  # BOOLEAN, tinyint(1) there
        menv.sql(f"UPDATE `{configs['scd1'][0]}`.things SET name = 'jdbc' WHERE id = 5")
        menv.sql(f"DELETE FROM `{configs['scd1'][0]}`.things WHERE id = 9")
        menv.sql(f"CREATE TEMPORARY TABLE copied AS SELECT * FROM `{configs['scd1'][0]}`.things "
                 "WHERE id = 8")
        menv.sql("UPDATE copied SET id = 999")
        menv.sql(f"INSERT INTO `{configs['scd1'][0]}`.things SELECT * FROM copied")
        assert_tampering_found(configs["scd1"][1], "jdbc")
        log = f"`{configs['changelog'][0]}`.things"
        [(newest,)] = menv.sql(f"SELECT MAX(__hw_sequence) FROM {log}")
        menv.sql("CREATE TEMPORARY TABLE deleted AS SELECT * FROM "
                 f"{log} WHERE id = 32 LIMIT 1")
        menv.sql("UPDATE deleted SET __op = 'd', __hw_sequence = %s", (newest + "1",))
        menv.sql(f"INSERT INTO {log} SELECT * FROM deleted")
        code, doc, _ = validate(configs["changelog"][1])
        assert code == 1 and doc["tables"][0]["rows"] == [
            {"key": {"id": "32"}, "kind": "missing"}]
    finally:
        for database, _ in configs.values():
            menv.sql(f"DROP DATABASE IF EXISTS `{database}`")
