"""Discover on a real MariaDB: a table with every type of the MySQL type mapping
(tests/integration/mysql/test_mysql_all_types.py), in Datastream's mysqlRdbms shape, with
source types, unified types, collations, keys and nullability; and a stream whose start is
refused (wrong password) goes back to NOT_STARTED with an AUTHENTICATION_FAILED error."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any

import orjson
from typer.testing import CliRunner

from headwater.cli import app
from headwater.streams.catalog import Catalog

from .conftest import MariaEnv
from .test_mysql_all_types import columns_for, create_table


def _cli(tmp: Path, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, [*args, "--data-dir", str(tmp)])
    assert result.exit_code == code, result.output
    return result.output


def _profile(menv: MariaEnv, tmp: Path, password: str) -> None:
    _cli(tmp, "profiles", "create", "maria", "--kind", "mariadb", "--replace",
         "-p", "database.hostname=127.0.0.1", "-p", f"database.port={menv.server.port}",
         "-p", f"database.user={menv.server.user}", "-p", f"database.password={password}")


# column -> (dataType, Datastream unified type), as docs/streams.md's table says (MariaDB's
# JSON is a LONGTEXT, so it is a STRING; the newer MariaDB types only where the server has
# them).
EXPECTED: dict[str, tuple[str, str]] = {
    "ti": ("TINYINT", "INTEGER"),
    "tiu": ("TINYINT", "INTEGER"),
    "si": ("SMALLINT", "INTEGER"),
    "siu": ("SMALLINT", "INTEGER"),
    "mi": ("MEDIUMINT", "INTEGER"),
    "miu": ("MEDIUMINT", "INTEGER"),
    "i": ("INT", "INTEGER"),
    "iu": ("INT", "LONG"),
    "bi": ("BIGINT", "LONG"),
    "biu": ("BIGINT", "DECIMAL"),
    "bo": ("TINYINT", "INTEGER"),
    "b1": ("BIT", "LONG"),
    "b10": ("BIT", "LONG"),
    "b64": ("BIT", "LONG"),
    "d6530": ("DECIMAL", "DECIMAL"),  # Google: DECIMAL at any precision
    "d4030": ("DECIMAL", "DECIMAL"),
    "d102": ("DECIMAL", "DECIMAL"),
    "dec": ("DECIMAL", "DECIMAL"),
    "f": ("FLOAT", "FLOAT"),
    "f53": ("FLOAT", "FLOAT"),
    "dbl": ("DOUBLE", "DOUBLE"),
    "vc": ("VARCHAR", "STRING"),
    "ch": ("CHAR", "STRING"),
    "tt": ("TINYTEXT", "STRING"),
    "tx": ("TEXT", "STRING"),
    "mt": ("MEDIUMTEXT", "STRING"),
    "lt": ("LONGTEXT", "STRING"),
    "l1": ("VARCHAR", "STRING"),
    "l1c": ("CHAR", "STRING"),
    "l1t": ("TEXT", "STRING"),
    "en": ("ENUM", "STRING"),
    "st": ("SET", "STRING"),
    "js": ("LONGTEXT", "STRING"),
    "bn": ("BINARY", "BYTES"),
    "vb": ("VARBINARY", "BYTES"),
    "tb": ("TINYBLOB", "BYTES"),
    "bl": ("BLOB", "BYTES"),
    "mb": ("MEDIUMBLOB", "BYTES"),
    "lb": ("LONGBLOB", "BYTES"),
    "dt": ("DATE", "DATE"),
    "dz": ("DATE", "DATE"),
    "dnn": ("DATE", "DATE"),
    "t0": ("TIME", "TIME_INTERVAL"),
    "t3": ("TIME", "TIME_INTERVAL"),
    "t6": ("TIME", "TIME_INTERVAL"),
    "dt0": ("DATETIME", "DATETIME"),
    "dt1": ("DATETIME", "DATETIME"),
    "dt2": ("DATETIME", "DATETIME"),
    "dt3": ("DATETIME", "DATETIME"),
    "dt4": ("DATETIME", "DATETIME"),
    "dt5": ("DATETIME", "DATETIME"),
    "dt6": ("DATETIME", "DATETIME"),
    "dtz": ("DATETIME", "DATETIME"),
    "dtnn": ("DATETIME", "DATETIME"),
    "ts0": ("TIMESTAMP", "TIMESTAMP"),
    "ts3": ("TIMESTAMP", "TIMESTAMP"),
    "ts6": ("TIMESTAMP", "TIMESTAMP"),
    "tsnn": ("TIMESTAMP", "TIMESTAMP"),
    "yr": ("YEAR", "INTEGER"),
    "g": ("GEOMETRY", "UNSUPPORTED"),
    "pt": ("POINT", "UNSUPPORTED"),
    "ls": ("LINESTRING", "UNSUPPORTED"),
    "pg": ("POLYGON", "UNSUPPORTED"),
    "u": ("UUID", "STRING"),
    "ip4": ("INET4", "STRING"),
    "ip6": ("INET6", "STRING"),
    "ip6m": ("INET6", "STRING"),
}


def test_discover_every_type(menv: MariaEnv, tmp_path: Path) -> None:
    columns = columns_for(menv)
    create_table(menv, columns)
    menv.sql("CREATE TABLE k (a INT NOT NULL, b VARCHAR(7) COLLATE utf8mb4_bin, "
             "PRIMARY KEY (a))")
    _profile(menv, tmp_path, menv.server.password)
    doc: Any = orjson.loads(_cli(tmp_path, "profiles", "discover", "maria", "--json",
                                 "--object", menv.db))
    (database,) = doc["mysqlRdbms"]["mysqlDatabases"]
    assert database["database"] == menv.db
    tables = {t["table"]: t["mysqlColumns"] for t in database["mysqlTables"]}
    assert set(tables) == {"all_types", "k"}
    cols = tables["all_types"]
    names = ["id", *(c.name for c in columns)]
    assert [c["column"] for c in cols] == names
    assert [c["ordinalPosition"] for c in cols] == list(range(1, len(names) + 1))
    assert {c["column"]: (c["dataType"], c["unifiedType"]) for c in cols[1:]} == {
        k: v for k, v in EXPECTED.items() if k in names}
    by = {c["column"]: c for c in cols}
    assert by["id"]["primaryKey"] and not by["id"]["nullable"]
    assert not by["dnn"]["nullable"] and by["dt"]["nullable"]
    assert (by["d102"]["precision"], by["d102"]["scale"]) == (10, 2)
    assert by["vc"]["length"] == 20 and by["vc"]["collation"].startswith("utf8mb4")
    assert by["l1"]["collation"].startswith("latin1") and by["bn"]["collation"] is None
    assert by["t3"]["precision"] == 3 and by["biu"]["columnType"] == "bigint(20) unsigned"
    assert [(c["column"], c["primaryKey"], c["nullable"], c["collation"])
            for c in tables["k"]] == [("a", True, False, None), ("b", False, True,
                                                                  "utf8mb4_bin")]
    one = orjson.loads(_cli(tmp_path, "profiles", "discover", "maria", "--json", "--depth",
                            "1"))
    assert {"database": menv.db} in one["mysqlRdbms"]["mysqlDatabases"]
    assert not {"mysql", "sys", "information_schema", "performance_schema"} & {
        d["database"] for d in one["mysqlRdbms"]["mysqlDatabases"]}


def test_refused_start_is_not_started(menv: MariaEnv, tmp_path: Path) -> None:
    _profile(menv, tmp_path, "not-the-password")
    _cli(tmp_path, "profiles", "create", "out", "--kind", "topics", "--dir",
         str(tmp_path / "topics"))
    _cli(tmp_path, "streams", "create", "s", "--source", "maria", "--destination", "out",
         "--include", menv.db)
    refused = CliRunner().invoke(app, ["streams", "start", "s", "--wait", "60", "--json",
                                       "--data-dir", str(tmp_path)])
    assert refused.exit_code == 1, refused.output  # `--wait`: it did not get to RUNNING
    doc = orjson.loads(refused.stdout)
    assert doc["state"] == "NOT_STARTED"
    errors = orjson.loads(_cli(tmp_path, "streams", "errors", "s", "--json"))["errors"]
    assert [e["reason"] for e in errors] == ["AUTHENTICATION_FAILED"]
    assert "Access denied" in errors[0]["message"]
    assert "not-the-password" not in orjson.dumps(errors).decode()
    _profile(menv, tmp_path, menv.server.password)  # fixed: it starts
    try:
        assert orjson.loads(_cli(tmp_path, "streams", "start", "s", "--wait", "60", "--json")
                            )["state"] == "RUNNING"
        assert orjson.loads(_cli(tmp_path, "streams", "drain", "s", "--json")
                            )["state"] == "PAUSED"
    finally:
        pid = Catalog(tmp_path).stream("s").pid
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
