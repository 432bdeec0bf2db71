"""The JDBC target's pure parts, without servers: URLs, jars, the driver check, types, JSON
for nested values, staging forms, and the shape of the merge statements."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from headwater.pipeline.config import PipelineConfig
from headwater.pipeline.jdbc_dialect import (
    DIALECTS,
    JdbcUrlError,
    parse_jdbc_url,
    to_json,
)
from headwater.pipeline.jdbc_target import JdbcDriverMissingError, JdbcTarget, jdbc_jars
from headwater.pipeline.jdbc_target import require_driver as check_driver

PG, MARIA = DIALECTS["postgresql"], DIALECTS["mariadb"]


@pytest.mark.parametrize(("url", "dialect", "host", "port", "db", "spark_url"), [
    ("jdbc:postgresql://h:6543/db?currentSchema=s&sslmode=require", "postgresql", "h", 6543,
     "db", "jdbc:postgresql://h:6543/db?currentSchema=s&sslmode=require"),
    ("jdbc:postgresql://h/db", "postgresql", "h", 5432, "db", "jdbc:postgresql://h/db"),
    ("jdbc:postgresql://h1:1,h2:2/db", "postgresql", "h1", 1, "db",
     "jdbc:postgresql://h1:1,h2:2/db"),
    ("jdbc:postgresql://[::1]:5433/db", "postgresql", "::1", 5433, "db",
     "jdbc:postgresql://[::1]:5433/db"),
    ("jdbc:mysql://m:3307/shop", "mariadb", "m", 3307, "shop",
     "jdbc:mysql://m:3307/shop?permitMysqlScheme"),
    ("jdbc:mysql://m/shop?permitMysqlScheme&useSSL=false", "mariadb", "m", 3306, "shop",
     "jdbc:mysql://m/shop?permitMysqlScheme&useSSL=false"),
    ("jdbc:mariadb://m/shop?x=1", "mariadb", "m", 3306, "shop",
     "jdbc:mysql://m/shop?x=1&permitMysqlScheme"),
])
def test_jdbc_urls(url: str, dialect: str, host: str, port: int, db: str,
                   spark_url: str) -> None:
    loc = parse_jdbc_url(url)
    assert (loc.dialect, loc.host, loc.port, loc.database, loc.spark_url) == (
        dialect, host, port, db, spark_url)


@pytest.mark.parametrize("url", ["postgresql://h/db", "jdbc:oracle:thin:@h:1521/x",
                                 "jdbc:sqlserver://h", "jdbc:postgresql:db",
                                 "jdbc:mysql://h:port/db"])
def test_bad_jdbc_urls_are_refused(url: str) -> None:
    with pytest.raises(JdbcUrlError):
        parse_jdbc_url(url)


def test_jars_are_debians() -> None:
    jars = jdbc_jars()
    if not jars:
        pytest.skip("libpostgresql-jdbc-java / libmariadb-java are not installed")
    assert all(Path(j).is_file() for j in jars)
    assert {Path(j).name for j in jars} == {"postgresql.jar", "mariadb-java-client.jar"}


class _MissingClasses:
    """A JVM view whose class loader knows no JDBC driver."""

    def __getattr__(self, name: str) -> Any:
        return self

    def classForName(self, name: str, *args: Any) -> None:  # noqa: N802 (Java's name)
        raise RuntimeError(f"An error occurred: java.lang.ClassNotFoundException: {name}")


class _Session:
    _jvm = _MissingClasses()


def test_a_session_without_the_driver_is_refused_with_the_fix() -> None:
    with pytest.raises(JdbcDriverMissingError) as info:
        check_driver(_Session(), MARIA)
    message = str(info.value)
    assert "org.mariadb.jdbc.Driver" in message and "spark.jars" in message
    for jar in jdbc_jars():
        assert jar in message
    check_driver(object(), PG)  # Spark Connect (no JVM here): nothing to check


def test_a_jdbc_target_needs_a_url(tmp_path: Path) -> None:
    cfg = PipelineConfig(topic_prefix="p", topics_dir=tmp_path, delta_path=tmp_path,
                         checkpoint_dir=tmp_path, topics_glob="p.*", target="jdbc")
    with pytest.raises(ValueError, match=r"jdbc\.url"):
        JdbcTarget(cfg)


@pytest.mark.parametrize(("arrow", "pg", "maria"), [
    (pa.int8(), "smallint", "TINYINT"),
    (pa.int16(), "smallint", "SMALLINT"),
    (pa.int32(), "integer", "INT"),
    (pa.int64(), "bigint", "BIGINT"),
    (pa.float32(), "real", "FLOAT"),
    (pa.float64(), "double precision", "DOUBLE"),
    (pa.bool_(), "boolean", "BOOLEAN"),
    (pa.decimal128(12, 3), "numeric(12, 3)", "DECIMAL(12, 3)"),
    (pa.date32(), "date", "DATE"),
    (pa.timestamp("us"), "timestamp", "DATETIME(6)"),
    (pa.timestamp("ms"), "timestamp", "DATETIME(6)"),
    (pa.timestamp("us", tz="UTC"), "timestamptz", "DATETIME(6)"),
    (pa.binary(), "bytea", "LONGBLOB"),
    (pa.string(), "text", "LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"),
    (pa.list_(pa.int32()), "text", "LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"),
    (pa.map_(pa.string(), pa.int32()), "text",
     "LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"),
])
def test_types(arrow: pa.DataType, pg: str, maria: str) -> None:
    assert PG.column_type(arrow) == pg
    assert MARIA.column_type(arrow) == maria
    # Back (`arrow_type`, what Datastream's JSON columns keep): a type giving the same SQL.
    assert PG.column_type(PG.arrow_type(pg)) == pg
    assert MARIA.column_type(MARIA.arrow_type(maria)) == maria


@pytest.mark.parametrize(("dialect", "reported", "arrow"), [
    (PG, "timestamp with time zone", pa.timestamp("us", tz="UTC")),
    (PG, "timestamp without time zone", pa.timestamp("us")),
    (PG, "double precision", pa.float64()),
    (PG, "numeric(12,3)", pa.decimal128(12, 3)),
    (PG, "numeric(50,2)", pa.decimal256(50, 2)),
    (PG, "character varying(10)", None),  # not a type the target writes
    (MARIA, "bigint(20)", pa.int64()),
    (MARIA, "bigint(20) unsigned", pa.uint64()),
    (MARIA, "tinyint(1)", pa.bool_()),
    (MARIA, "tinyint(4)", pa.int8()),
    (MARIA, "varchar(700)", pa.string()),
    (MARIA, "varbinary(350)", pa.binary()),
    (MARIA, "decimal(12,3)", pa.decimal128(12, 3)),
    (MARIA, "datetime(6)", pa.timestamp("us")),  # zoned or not: the UTC wall time
    (MARIA, "datetime(3)", None),
])
def test_declared_types_as_the_database_reports_them(dialect: Any, reported: str,
                                                     arrow: pa.DataType | None) -> None:
    assert dialect.arrow_type(reported) == arrow


def test_mariadb_keys_fit_innodb() -> None:
    one = MARIA.key_lengths([pa.string()])
    two = MARIA.key_lengths([pa.string(), pa.binary()])
    assert MARIA.column_type(pa.string(), one) == (
        "VARCHAR(700) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin")
    assert MARIA.column_type(pa.binary(), two) == "VARBINARY(350)"
    assert MARIA.key_lengths([pa.int64()]) is None
    assert PG.key_lengths([pa.string()]) is None


def test_nested_values_as_json() -> None:
    assert to_json([1, None], pa.list_(pa.int32())) == "[1,null]"
    assert to_json([("a", 1)], pa.map_(pa.string(), pa.int32())) == '{"a":1}'
    assert to_json([(2, "x")], pa.map_(pa.int32(), pa.string())) == '[[2,"x"]]'
    st = pa.struct([("d", pa.decimal128(5, 2)), ("b", pa.binary()), ("t", pa.date32())])
    assert to_json({"d": Decimal("1.50"), "b": b"\x00", "t": dt.date(2024, 1, 2)}, st) == (
        '{"d":"1.50","b":"AA==","t":"2024-01-02"}')
    assert to_json(None, st) is None


def test_timestamps_are_staged_as_text_in_utc() -> None:
    at = dt.datetime(2024, 1, 1, 12, 0, 0, 5, tzinfo=dt.UTC)
    zoned = pa.array([at, None], pa.timestamp("us", tz="UTC"))
    assert PG.stage_array(zoned).to_pylist() == ["2024-01-01 12:00:00.000005Z", None]
    assert MARIA.stage_array(zoned).to_pylist() == ["2024-01-01 12:00:00.000005", None]
    naive = pa.array([at.replace(tzinfo=None)], pa.timestamp("us"))
    assert PG.stage_array(naive).to_pylist() == ["2024-01-01 12:00:00.000005"]
    assert PG.from_stage("s.x", pa.timestamp("us", tz="UTC")) == "CAST(s.x AS timestamptz)"
    assert MARIA.from_stage("s.x", pa.timestamp("us")) == "CAST(s.x AS DATETIME(6))"
    assert PG.from_stage("s.x", pa.int32()) == "s.x"


def test_mariadb_updates_the_sequence_last() -> None:
    # MySQL/MariaDB evaluate ON DUPLICATE KEY UPDATE assignments left to right, each seeing
    # the ones before: the guard reads the sequence, so it must change after the columns.
    sql = MARIA.upsert_newer("`db`.`t`", "`db`.`s`", [("id", pa.int32()), ("v", pa.string()),
                                                      ("w", pa.string())], ("id",))
    updates = sql.split("ON DUPLICATE KEY UPDATE", 1)[1]
    assert updates.index("`db`.`t`.`v` =") < updates.index("`db`.`t`.`__hw_sequence` =")
    assert updates.index("`db`.`t`.`w` =") < updates.index("`db`.`t`.`__hw_sequence` =")
    assert "`db`.`t`.`id` =" not in updates  # keys are not reassigned


def test_postgres_upsert_is_guarded_by_the_sequence() -> None:
    sql = PG.upsert_newer('"p"."t"', '"p"."s"', [("id", pa.int32()), ("v", pa.string())],
                          ("id",))
    assert 'ON CONFLICT ("id") DO UPDATE SET "v" = EXCLUDED."v"' in sql
    assert sql.endswith('WHERE t."__hw_sequence" < EXCLUDED."__hw_sequence"')
