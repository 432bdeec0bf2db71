"""Discover on a real PostgreSQL: a table with every type of the README's type mapping
table, the Datastream discover shape at each depth, source types, unified types, keys,
nullability, length/precision/scale."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from typer.testing import CliRunner

from headwater.cli import app

from .conftest import Env
from .test_all_types import COLUMNS, POSTGIS_COLUMNS, create_table, has_postgis


def _discover(env: Env, tmp: Path, *args: str) -> Any:
    runner = CliRunner()
    d = ["--data-dir", str(tmp)]
    result = runner.invoke(app, ["profiles", "create", "pg", "--kind", "postgresql",
                                 "--replace", "-p", "database.hostname=127.0.0.1",
                                 "-p", f"database.port={env.pg.port}",
                                 "-p", f"database.user={env.pg.user}",
                                 "-p", f"database.dbname={env.db}", *d])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["profiles", "discover", "pg", "--json", *args, *d])
    assert result.exit_code == 0, result.output
    return orjson.loads(result.output)


# column -> (dataType, Datastream unified type), as docs/streams.md's table says.
EXPECTED: dict[str, tuple[str, str]] = {
    "i2": ("smallint", "INTEGER"),
    "i4": ("integer", "INTEGER"),
    "i8": ("bigint", "LONG"),
    "o": ("oid", "LONG"),
    "f4": ("real", "FLOAT"),
    "f8": ("double precision", "DOUBLE"),
    "n": ("numeric", "NUMBER"),
    "n102": ("numeric", "DECIMAL"),
    "mn": ("money", "DOUBLE"),
    "bo": ("boolean", "BOOLEAN"),
    "b1": ("bit", "BYTES"),
    "b10": ("bit", "BYTES"),
    "vb": ("bit varying", "BYTES"),
    "tx": ("text", "STRING"),
    "vc": ("character varying", "STRING"),
    "bp": ("character", "STRING"),
    "nm": ("name", "STRING"),
    "ci": ("citext", "STRING"),
    "by": ("bytea", "BYTES"),
    "u": ("uuid", "STRING"),
    "j": ("json", "JSON"),
    "jb": ("jsonb", "JSON"),
    "x": ("xml", "STRING"),
    "tsv": ("tsvector", "STRING"),  # Google: STRING (was UNSUPPORTED)
    "lt": ("ltree", "STRING"),
    "ip": ("inet", "STRING"),
    "cr": ("cidr", "STRING"),
    "mac": ("macaddr", "STRING"),
    "mac8": ("macaddr8", "STRING"),
    "r4": ("int4range", "STRING"),
    "r8": ("int8range", "STRING"),
    "rn": ("numrange", "STRING"),
    "rts": ("tsrange", "STRING"),
    "rtz": ("tstzrange", "STRING"),
    "rd": ("daterange", "STRING"),
    "d": ("date", "DATE"),
    "t": ("time without time zone", "TIME"),
    "t3": ("time without time zone", "TIME"),
    "ts": ("timestamp without time zone", "TIMESTAMP"),
    "ts3": ("timestamp without time zone", "TIMESTAMP"),
    "tz": ("timestamp with time zone", "TIMESTAMP_WITH_TIME_ZONE"),
    "tz0": ("timestamp with time zone", "TIMESTAMP_WITH_TIME_ZONE"),
    "ttz": ("time with time zone", "TIME_WITH_TIME_ZONE"),
    "iv": ("interval", "INTERVAL"),
    "hs": ("hstore", "STRING"),
    "m": ("mood", "STRING"),
    "pp": ("positive_price", "DECIMAL"),
    "pt": ("point", "UNSUPPORTED"),
    "ia": ("integer[]", "ARRAY"),
    "ta": ("text[]", "ARRAY"),
    "na": ("numeric[]", "ARRAY"),
    "tza": ("timestamp with time zone[]", "ARRAY"),
    "da": ("date[]", "ARRAY"),
    "ba": ("bytea[]", "ARRAY"),
    "ma": ("mood[]", "ARRAY"),
    "mna": ("money[]", "ARRAY"),
    "iva": ("interval[]", "ARRAY"),
    "ha": ("hstore[]", "ARRAY"),
    "pa": ("point[]", "ARRAY"),
    "ua": ("uuid[]", "ARRAY"),
    "jba": ("jsonb[]", "ARRAY"),
    "fa": ("double precision[]", "ARRAY"),
    "vba": ("bit varying[]", "ARRAY"),
    "ila": ("int_list", "ARRAY"),
    "lsn": ("pg_lsn", "UNSUPPORTED"),
    "bx": ("box", "UNSUPPORTED"),
    "ls": ("lseg", "UNSUPPORTED"),
    "pth": ("path", "UNSUPPORTED"),
    "pgn": ("polygon", "UNSUPPORTED"),
    "cir": ("circle", "UNSUPPORTED"),
    "li": ("line", "UNSUPPORTED"),
    "bxa": ("box[]", "ARRAY"),
    "pga": ("polygon[]", "ARRAY"),
    "lia": ("line[]", "ARRAY"),
    "g": ("geometry", "UNSUPPORTED"),
    "gg": ("geography", "UNSUPPORTED"),
}
POSTGIS = {"g", "gg"}


def test_discover_every_type(env: Env, tmp_path: Path) -> None:
    postgis = has_postgis(env)
    create_table(env, [*COLUMNS, *(POSTGIS_COLUMNS if postgis else [])], postgis)
    env.sql("CREATE SCHEMA other; CREATE TABLE other.t (a int NOT NULL, b text, "
            "PRIMARY KEY (a))")
    doc = _discover(env, tmp_path, "--full-hierarchy")
    schemas = {s["schema"]: s for s in doc["postgresqlRdbms"]["postgresqlSchemas"]}
    assert {"public", "other"} <= set(schemas) and not any(
        s.startswith("pg_") or s == "information_schema" for s in schemas)
    tables = {t["table"]: t for t in schemas["public"]["postgresqlTables"]}
    cols = tables["all_types"]["postgresqlColumns"]
    names = ["id", *(c.name for c in COLUMNS), *(c.name for c in POSTGIS_COLUMNS
                                                if postgis)]
    assert [c["column"] for c in cols] == names
    assert [c["ordinalPosition"] for c in cols] == list(range(1, len(names) + 1))
    expected = {k: v for k, v in EXPECTED.items() if postgis or k not in POSTGIS}
    assert {c["column"]: (c["dataType"], c["unifiedType"]) for c in cols[1:]} == expected
    by = {c["column"]: c for c in cols}
    assert by["id"]["primaryKey"] and not by["id"]["nullable"]
    assert not any(c["primaryKey"] for c in cols[1:]) and all(c["nullable"] for c in cols[1:])
    assert (by["n102"]["precision"], by["n102"]["scale"]) == (10, 2)
    assert (by["pp"]["precision"], by["pp"]["scale"]) == (10, 2)  # domain over a domain
    assert by["vc"]["length"] == 5 and by["bp"]["length"] == 6 and by["b10"]["length"] == 10
    assert by["ts3"]["precision"] == 3 and by["i8"]["precision"] == 64
    assert set(by["id"]) == {"column", "dataType", "unifiedType", "length", "precision",
                             "scale", "primaryKey", "nullable", "ordinalPosition"}
    other = schemas["other"]["postgresqlTables"][0]["postgresqlColumns"]
    assert [(c["column"], c["primaryKey"], c["nullable"]) for c in other] == [
        ("a", True, False), ("b", False, True)]


def test_discover_depth_and_object(env: Env, tmp_path: Path) -> None:
    env.sql("CREATE SCHEMA other; CREATE TABLE other.t (a int PRIMARY KEY); "
            "CREATE TABLE other.u (b int); CREATE TABLE public.p (c int)")
    one = _discover(env, tmp_path, "--depth", "1")["postgresqlRdbms"]["postgresqlSchemas"]
    assert {"schema": "other"} in one and all(set(s) == {"schema"} for s in one)
    two = _discover(env, tmp_path, "--depth", "2")["postgresqlRdbms"]["postgresqlSchemas"]
    assert {"schema": "other", "postgresqlTables": [{"table": "t"}, {"table": "u"}]} in two
    narrowed = _discover(env, tmp_path, "--object", "other.u")
    assert narrowed == {"postgresqlRdbms": {"postgresqlSchemas": [{
        "schema": "other", "postgresqlTables": [{"table": "u", "postgresqlColumns": [{
            "column": "b", "dataType": "integer", "unifiedType": "INTEGER", "length": None,
            "precision": 32, "scale": 0, "primaryKey": False, "nullable": True,
            "ordinalPosition": 1}]}]}]}}
