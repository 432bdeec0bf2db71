"""Issue 30, Must show 1 (PostgreSQL): a table holding each type of Google's PostgreSQL table,
captured on a real server into Datastream Avro and JSON files and discovered; every column's
unified type, Avro type and JSON form compared with its reference row (tests/
datastream_reference.py): 0 differences.  Rows the reference leaves unsettled are printed."""

from __future__ import annotations

from typing import Any

import pytest
from fastavro import reader

from headwater.streams.discover import discover_postgres
from tests import datastream_reference as ref

from .conftest import Env, wait_for
from .test_datastream_capture import files_config, read_events

pytestmark = pytest.mark.integration

# reference name -> (column type, value literal)
COLUMNS: dict[str, tuple[str, str]] = {
    "ARRAY": ("int4[]", "'{1,2}'"), "BIGINT": ("bigint", "9223372036854775807"),
    "INTEGER": ("integer", "1"), "SMALLINT": ("smallint", "2"),
    "SMALLSERIAL": ("smallserial", "3"), "SERIAL": ("serial", "4"), "OID": ("oid", "5"),
    "BIT": ("bit(3)", "B'101'"), "BIT VARYING": ("varbit(5)", "B'10'"),
    "BYTEA": ("bytea", "'\\x0102'"), "BOOLEAN": ("boolean", "true"),
    "BOX": ("box", "'((0,0),(1,1))'"), "CIRCLE": ("circle", "'<(0,0),1>'"),
    "LINE": ("line", "'{1,-1,0}'"), "LSEG": ("lseg", "'[(0,0),(1,1)]'"),
    "PATH": ("path", "'[(0,0),(1,1)]'"), "POINT": ("point", "'(1,2)'"),
    "POLYGON": ("polygon", "'((0,0),(1,1),(1,0))'"),
    "CHARACTER": ("char(3)", "'abc'"), "CHARACTER VARYING": ("varchar(10)", "'abc'"),
    "TEXT": ("text", "'t'"), "CIDR": ("cidr", "'10.0.0.0/8'"), "INET": ("inet", "'10.1.2.3'"),
    "MACADDR": ("macaddr", "'08:00:2b:01:02:03'"), "ENUM": ("mood", "'happy'"),
    "UUID": ("uuid", "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'"), "XML": ("xml", "'<a/>'"),
    "TSQUERY": ("tsquery", "'a & b'"), "TSVECTOR": ("tsvector", "'a b'"),
    "TXID SNAPSHOT": ("txid_snapshot", "'10:20:10,14,15'"), "DATE": ("date", "'2024-01-02'"),
    "DOUBLE PRECISION": ("double precision", "1.5"), "REAL": ("real", "2.5"),
    "INTERVAL": ("interval", "'1 day 2 hours'"), "JSON": ("json", "'{\"a\": 1}'"),
    "JSONB": ("jsonb", "'{\"b\": 2}'"), "MONEY": ("money", "12.34"),
    "NUMERIC": ("numeric(10,2)", "12.30"), "TIME": ("time", "'03:04:05.123456'"),
    "TIME WITH TIME ZONE": ("timetz", "'03:04:05+02'"),
    "TIMESTAMP": ("timestamp", "'2024-01-02 03:04:05.123456'"),
    "TIMESTAMP WITH TIME ZONE": ("timestamptz", "'2024-01-02 03:04:05+02'"),
}
# the page's NUMERIC row also covers numeric without precision (STRING, unified NUMBER)
EXTRA = {"NUMERIC (no precision)": ("NUMERIC", "numeric", "1.25")}
UNSETTLED = {"TIME WITH TIME ZONE": "PG `timetz`", "TIMESTAMP WITH TIME ZONE": "PG `timestamptz`",
             "NUMERIC": "PG `numeric(p,s)`", "ARRAY": "PG arrays",
             **{g: "PG geometric types" for g in ("BOX", "CIRCLE", "LINE", "LSEG", "PATH",
                                                 "POINT", "POLYGON")}}


def _col(name: str) -> str:
    return "c_" + name.lower().replace(" ", "_").replace("(", "").replace(")", "")


def test_every_type_of_googles_postgresql_table(env: Env) -> None:
    rows = ref.bigquery_rows("PostgreSQL")
    code = {k.upper(): v for k, v in ref.google_code_rows("PostgreSQL").items()}
    forms = ref.unified_forms()
    unsettled = set(ref.unsettled_readings())
    assert set(COLUMNS) == set(rows), "a reference row without a column here, or the reverse"
    cols = {_col(n): (n, t, v) for n, (t, v) in COLUMNS.items()}
    for label, (row, t, v) in EXTRA.items():
        cols[_col(label)] = (row, t, v)
    env.sql("CREATE TYPE mood AS ENUM ('sad', 'happy')")
    env.sql("CREATE TABLE types (id int PRIMARY KEY, "
            + ", ".join(f"{c} {t}" for c, (_, t, _) in cols.items()) + ")")
    env.sql(f"INSERT INTO types (id, {', '.join(cols)}) VALUES (1, "
            + ", ".join(v for _, _, v in cols.values()) + ")")

    json_events = _capture(env, "json")
    avro_schema = _avro_schema(env)
    payload = next(f for f in avro_schema["fields"] if f["name"] == "payload")["type"]
    fields = {f["sourceName"]: f for f in payload["fields"]}
    discovered = {c["column"]: c["unifiedType"] for c in discover_postgres(
        env.conn, 3, "public", "types")["postgresqlRdbms"]["postgresqlSchemas"][0][
        "postgresqlTables"][0]["postgresqlColumns"]}
    (event,) = json_events

    differences: list[str] = []
    for column, (row, _, _) in cols.items():
        f = fields[column]
        bq = rows[row]
        if row == "NUMERIC":  # "STRING if precision = -1 (...); otherwise NUMERIC / BIGNUMERIC"
            without, _, otherwise = bq.partition("; otherwise ")
            bq = without if column == _col("NUMERIC (no precision)") else otherwise
        found = ref.compare(f["unifiedType"], f["type"], event["payload"][column],
                            discovered[column], bq, code.get(_code_name(row)), forms)
        note = UNSETTLED.get(row)
        status = "differs" if found else "agrees"
        if note is not None:
            assert note in unsettled, f"{note} is not marked ⚠ in the reference"
            print(f"{row}: {f['unifiedType']} ({status}) — unsettled in the reference: {note}")
        else:
            print(f"{row}: {f['unifiedType']} ({status})")
        differences += [f"{row} ({column}): {d}" for d in found]
    assert differences == [], "\n".join(differences)


def _code_name(row: str) -> str:
    return {"TXID SNAPSHOT": "TXID_SNAPSHOT"}.get(row, row)


def _capture(env: Env, fmt: str) -> list[dict[str, Any]]:
    cap = env.capture(files_config(env, fmt))
    try:
        wait_for(lambda: len(read_events(env)) >= 1, what="backfill file", timeout=60)
    finally:
        cap.stop()
    return read_events(env)


def _avro_schema(env: Env) -> dict[str, Any]:
    """A second capture (fresh offsets and slot) into Avro files: the file header's schema."""
    env.drop_slot()
    env.slot += "_avro"
    env.offsets = env.tmp / "offsets-avro.json"
    extra = files_config(env, "avro")
    extra["headwater.destination.files.dir"] = str(env.tmp / "files-avro")
    cap = env.capture(extra)
    base = env.tmp / "files-avro"
    try:
        wait_for(lambda: any(base.rglob("*.avro")), what="Avro file", timeout=60)
    finally:
        cap.stop()
    path = next(base.rglob("*.avro"))
    with path.open("rb") as fh:
        schema: dict[str, Any] = reader(fh).writer_schema  # type: ignore[assignment]
    return schema
