"""Issue 30, Must show 1 (MySQL source, on the MariaDB server here): a table holding each type
of Google's MySQL table, captured into Datastream JSON and Avro files and discovered; every
column's unified type, Avro type and JSON form compared with its reference row (tests/
datastream_reference.py): 0 differences.  Rows the reference leaves unsettled (⚠) are printed
with what differs; types this server cannot create would be listed as skipped."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest
from fastavro import reader

from headwater.streams.discover import discover_mysql
from headwater.testing.localpg import wait_for
from tests import datastream_reference as ref

from .conftest import MariaEnv

pytestmark = pytest.mark.integration

STREAM = "projects/p/locations/l/streams/maria-types"
MAX_UNSIGNED = 18446744073709551615

# reference name -> (column type, value literal)
COLUMNS: dict[str, tuple[str, str]] = {
    "BIGINT(size)": ("BIGINT", "9223372036854775807"),
    "BIGINT (unsigned)": ("BIGINT UNSIGNED", str(MAX_UNSIGNED)),
    "BINARY(size)": ("BINARY(2)", "X'0102'"), "BLOB(size)": ("BLOB", "X'03'"),
    "LONGBLOB": ("LONGBLOB", "X'04'"), "MEDIUMBLOB": ("MEDIUMBLOB", "X'05'"),
    "TINYBLOB": ("TINYBLOB", "X'06'"), "VARBINARY(size)": ("VARBINARY(4)", "X'07'"),
    "BIT(size)": ("BIT(3)", "b'101'"), "BOOL": ("BOOL", "1"),
    "CHAR(size)": ("CHAR(3)", "'abc'"), "VARCHAR": ("VARCHAR(10)", "'v'"),
    "TEXT(size)": ("TEXT", "'t'"), "TINYTEXT": ("TINYTEXT", "'t'"),
    "MEDIUMTEXT": ("MEDIUMTEXT", "'m'"), "LONGTEXT": ("LONGTEXT", "'l'"),
    "ENUM(...)": ("ENUM('a','b')", "'b'"), "SET(...)": ("SET('a','b')", "'a,b'"),
    "DATE": ("DATE", "'2024-01-02'"), "DATETIME(fsp)": ("DATETIME(6)", "'2024-01-02 03:04:05.5'"),
    "DECIMAL(precision, scale)": ("DECIMAL(10,2)", "12.30"),
    "DOUBLE(size,d)": ("DOUBLE", "1.5"), "FLOAT(precision)": ("FLOAT", "2.5"),
    "FLOAT(size,d)": ("FLOAT(7,2)", "3.25"), "INTEGER(size)": ("INT", "7"),
    "INTEGER (unsigned)": ("INT UNSIGNED", "4294967295"), "MEDIUMINT(size)": ("MEDIUMINT", "8"),
    "SMALLINT(size)": ("SMALLINT", "9"), "TINYINT(size)": ("TINYINT(1)", "1"),
    "YEAR": ("YEAR", "2024"),
    "TIME(fsp)": ("TIME(6)", "'-01:00:00'"),
    "TIMESTAMP(fsp)": ("TIMESTAMP(6)", "'2024-01-02 03:04:05'"),
}
UNSETTLED = {"BIGINT (unsigned)": "MySQL `BIGINT UNSIGNED`",
             **{r: "MySQL binary/blob types" for r in (
                 "BINARY(size)", "BLOB(size)", "LONGBLOB", "MEDIUMBLOB", "TINYBLOB",
                 "VARBINARY(size)")}}
# reference name -> why this server cannot create it
SKIPPED: dict[str, str] = {
    "JSON": "MariaDB has no JSON type: JSON is an alias of LONGTEXT with a json_valid check "
            "(the capture and discover see a LONGTEXT: STRING); MySQL 5.7+ only"}


def _col(name: str) -> str:
    return "c_" + re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _code_name(row: str) -> str:
    if "(unsigned)" in row:
        return row.replace(" (unsigned)", " UNSIGNED").upper()
    return re.sub(r"\(.*\)", "", row).strip()


def _files(menv: MariaEnv, fmt: str) -> dict[str, Any]:
    return {"headwater.event.format": "datastream", "headwater.datastream.stream.name": STREAM,
            "headwater.destination": "files",
            "headwater.destination.files.dir": str(menv.tmp / f"files-{fmt}"),
            "headwater.destination.files.format": fmt,
            "headwater.destination.files.max.ms": 300}


def _capture(menv: MariaEnv, fmt: str) -> list[Any]:
    base = menv.tmp / f"files-{fmt}"
    suffix = ".jsonl" if fmt == "json" else ".avro"
    menv.offsets = menv.tmp / f"offsets-{fmt}.json"
    menv.history = menv.tmp / f"history-{fmt}.jsonl"
    cap = menv.capture(_files(menv, fmt))
    try:
        wait_for(lambda: any(base.rglob(f"*{suffix}")), what=f"{fmt} file", timeout=60)
    finally:
        cap.stop()
    path = next(p for p in base.rglob(f"*{suffix}") if not p.name.startswith("."))
    if fmt == "json":
        return [orjson.loads(line) for line in path.read_bytes().splitlines()]
    with path.open("rb") as fh:
        return [reader(fh).writer_schema]


def test_every_type_of_googles_mysql_table(menv: MariaEnv) -> None:
    rows = ref.bigquery_rows("MySQL")
    code = ref.google_code_rows("MySQL")
    forms = ref.unified_forms()
    unsettled = set(ref.unsettled_readings())
    assert set(COLUMNS) | set(SKIPPED) == set(rows), "reference rows and columns differ"
    for row, why in SKIPPED.items():
        print(f"{row}: skipped — {why}")
    cols = {_col(n): (n, t, v) for n, (t, v) in COLUMNS.items()}
    menv.sql("CREATE TABLE types (id INT PRIMARY KEY, "
             + ", ".join(f"{c} {t}" for c, (_, t, _) in cols.items()) + ")")
    menv.sql(f"INSERT INTO types (id, {', '.join(cols)}) VALUES (1, "
             + ", ".join(v for _, _, v in cols.values()) + ")")
    menv.sql("COMMIT")

    (event,) = _capture(menv, "json")
    (schema,) = _capture(menv, "avro")
    payload = next(f for f in schema["fields"] if f["name"] == "payload")["type"]
    fields = {f["sourceName"]: f for f in payload["fields"]}
    discovered = {c["column"]: c["unifiedType"] for c in discover_mysql(
        menv.conn, 3, menv.db, "types")["mysqlRdbms"]["mysqlDatabases"][0]["mysqlTables"][0][
        "mysqlColumns"]}
    # BIGINT UNSIGNED above 2^63-1 keeps its value (Connect's long wrapped it)
    assert event["payload"][_col("BIGINT (unsigned)")] == MAX_UNSIGNED

    differences: list[str] = []
    for column, (row, _, _) in cols.items():
        f = fields[column]
        found = ref.compare(f["unifiedType"], f["type"], event["payload"][column],
                            discovered[column], rows[row], code.get(_code_name(row)), forms)
        note = UNSETTLED.get(row)
        status = "differs: " + "; ".join(found) if found else "agrees"
        if note is not None:
            assert note in unsettled, f"{note} is not marked ⚠ in the reference"
            print(f"{row}: {f['unifiedType']} ({status}) — unsettled in the reference: {note}")
            continue
        print(f"{row}: {f['unifiedType']} ({status})")
        differences += [f"{row} ({column}): {d}" for d in found]
    assert differences == [], "\n".join(differences)
