"""Issue 30, Must show 1 (SQL Server, on the CDC emulation): a table holding each type of
Google's SQL Server table that the emulation can represent, captured into Datastream JSON and
Avro files; every column's unified type, Avro type and JSON form compared with its reference
row (tests/datastream_reference.py), and the column's `unifiedType` in `discover`
(streams/discover.py, the same type table) with the events': 0 differences.  The types the
emulation cannot hold are listed as skipped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from fastavro import reader

from headwater.streams.discover import discover_sqlserver
from headwater.testing.capture_thread import Capture
from headwater.testing.localpg import wait_for
from headwater.testing.sqlserver_emulation import dbapi
from tests import datastream_reference as ref
from tests.conformance.driver import properties_text
from tests.sqlserver.conftest import enable_cdc, tsql

pytestmark = pytest.mark.integration

STREAM = "projects/hw/locations/local/streams/ss-types"
# reference name -> (column type, value literal)
COLUMNS: dict[str, tuple[str, str]] = {
    "BIGINT": ("bigint", "-9223372036854775808"), "INT": ("int", "2147483647"),
    "SMALLINT": ("smallint", "-32768"), "TINYINT": ("tinyint", "255"),
    "BINARY": ("binary(3)", r"'\x0001ff'"), "VARBINARY": ("varbinary(8)", r"'\x0001ff'"),
    "VARBINARY(MAX)": ("varbinary(max)", r"'\x02'"), "BIT": ("bit", "'1'"),
    "CHAR": ("char(3)", "'ab'"), "NCHAR": ("nchar(2)", "'ž'"), "NTEXT": ("ntext", "'n'"),
    "NVARCHAR": ("nvarchar(20)", "'žš'"), "NVARCHAR(MAX)": ("nvarchar(max)", "'long'"),
    "TEXT": ("text", "'t'"), "VARCHAR": ("varchar(20)", "'v'"),
    "VARCHAR(MAX)": ("varchar(max)", "'vm'"),
    "UNIQUEIDENTIFIER": ("uniqueidentifier", "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'"),
    "XML": ("xml", "'<a>1</a>'"), "DATE": ("date", "'2016-11-04'"),
    "DATETIME": ("datetime", "'2016-11-04 13:51:30.123'"),
    "DATETIME2": ("datetime2(6)", "'2016-11-04 13:51:30.123456'"),
    "SMALLDATETIME": ("smalldatetime", "'2016-11-04 13:51:00'"),
    "DECIMAL": ("decimal(10,2)", "-12345678.91"), "NUMERIC": ("numeric(5,0)", "12345"),
    "FLOAT": ("float", "4.44"), "REAL": ("real", "3.3"),
    "MONEY": ("money", "922337203685477.5807"), "SMALLMONEY": ("smallmoney", "-214748.3648"),
    "TIME": ("time(6)", "'13:51:30.123456'"),
}
EMULATION = "the CDC emulation (PostgreSQL underneath) cannot represent it"
SKIPPED = {"IMAGE": EMULATION, "TIMESTAMP/ROWVERSION": EMULATION,
           "DATETIMEOFFSET": EMULATION + " (PostgreSQL keeps no offset)",
           "GEOMETRY": EMULATION, "GEOGRAPHY": EMULATION}
# Declared types whose name the emulation's record of them loses (sqlglot writes them so);
# a live server's INFORMATION_SCHEMA keeps them.  Their unified types agree regardless.
EMULATION_RENAMES = {"NTEXT": "VARCHAR", "TEXT": "VARCHAR", "DECIMAL": "NUMERIC"}
UNSETTLED = {"DECIMAL": "thresholds lost", "NUMERIC": "thresholds lost"}


def _col(name: str) -> str:
    return "c_" + "".join(ch if ch.isalnum() else "_" for ch in name.lower())


def _capture(db: dict[str, Any], tmp: Path, fmt: str) -> list[Any]:
    root = tmp / f"files-{fmt}"
    config = tmp / f"connector-{fmt}.properties"
    config.write_text(properties_text({
        "name": f"ss-types-{fmt}", "connector.class": "sqlserver", "topic.prefix": "ss",
        "database.hostname": db["server"], "database.port": str(db["port"]),
        "database.user": db["user"], "database.names": db["database"],
        "database.encrypt": "false",
        "headwater.sqlserver.driver": "headwater.testing.sqlserver_emulation.dbapi",
        "offset.storage.file.filename": str(tmp / f"offsets-{fmt}.json"),
        "schema.history.internal.file.filename": str(tmp / f"history-{fmt}.jsonl"),
        "headwater.topics.dir": str(tmp / f"topics-{fmt}"), "poll.interval.ms": "100",
        "headwater.event.format": "datastream", "headwater.datastream.stream.name": STREAM,
        "headwater.destination": "files", "headwater.destination.files.dir": str(root),
        "headwater.destination.files.format": fmt,
        "headwater.destination.files.max.ms": "200"}))
    suffix = ".jsonl" if fmt == "json" else ".avro"

    def written() -> list[Path]:
        return [p for p in root.rglob(f"*{suffix}") if ".inflight" not in p.parts
                and not p.name.startswith(".")] if root.exists() else []

    cap = Capture(config).start()
    try:
        wait_for(written, 60, what=f"the backfill {fmt} file")
    finally:
        cap.stop()
    path = written()[0]
    if fmt == "json":
        return [orjson.loads(line) for line in path.read_bytes().splitlines()]
    with path.open("rb") as fh:
        return [reader(fh).writer_schema]


def test_every_type_of_googles_sqlserver_table(sqlserver_db: dict[str, Any],
                                                tmp_path: Path) -> None:
    rows = ref.bigquery_rows("SQL Server")
    forms = ref.unified_forms()
    assert set(COLUMNS) | set(SKIPPED) == set(rows), "reference rows and columns differ"
    for row, why in SKIPPED.items():
        print(f"{row}: skipped — {why}")
    cols = {_col(n): (n, t, v) for n, (t, v) in COLUMNS.items()}
    tsql(sqlserver_db,
         "CREATE TABLE dbo.types (id INT NOT NULL PRIMARY KEY, "
         + ", ".join(f"{c} {t} NULL" for c, (_, t, _) in cols.items()) + ")",
         f"INSERT INTO dbo.types (id, {', '.join(cols)}) VALUES (1, "
         + ", ".join(v for _, _, v in cols.values()) + ")")
    enable_cdc(sqlserver_db, "dbo", "types")

    (event,) = _capture(sqlserver_db, tmp_path, "json")
    (schema,) = _capture(sqlserver_db, tmp_path, "avro")
    payload = next(f for f in schema["fields"] if f["name"] == "payload")["type"]
    fields = {f["sourceName"]: f for f in payload["fields"]}
    conn = dbapi.connect(**sqlserver_db)
    try:
        found = discover_sqlserver(conn, sqlserver_db["database"], 3, "dbo", "types")
    finally:
        conn.close()
    (schema_doc,) = found["sqlServerRdbms"]["schemas"]
    (table_doc,) = schema_doc["tables"]
    discovered = {c["column"]: c for c in table_doc["columns"]}
    assert set(discovered) == {"id", *cols}

    differences: list[str] = []
    renamed: dict[str, str] = {}
    for column, (row, _, _) in cols.items():
        f = fields[column]
        if discovered[column]["dataType"] != row.split("(")[0]:
            renamed[row] = discovered[column]["dataType"]
        disagreements = ref.compare(f["unifiedType"], f["type"], event["payload"][column],
                                    discovered[column]["unifiedType"], rows[row], None,
                                    forms)
        note = UNSETTLED.get(row)
        if note is not None:
            assert note in rows[row] and "⚠" in rows[row]
            print(f"{row}: {f['unifiedType']} ({'differs' if disagreements else 'agrees'}) — "
                  f"unsettled in the reference: {note}")
        else:
            print(f"{row}: {f['unifiedType']} ({'differs' if disagreements else 'agrees'})")
        differences += [f"{row} ({column}): {d}" for d in disagreements]
    assert differences == [], "\n".join(differences)
    # discover's dataType is the declared type, except where the emulation's recording of
    # declared types loses the name (EMULATION_RENAMES)
    assert renamed == EMULATION_RENAMES
