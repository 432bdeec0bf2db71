"""The Db2 driver, against the EMULATION (headwater.testing.db2_emulation): a fresh emulated
database per test on a PostgreSQL of its own, not a live Db2.

Tables live in schema DB2INST1 (created unquoted, as Debezium's Db2 setup does) and are created
with quoted names, so Db2 keeps the suite's lower-case names exactly (`DB2INST1."items"` with
columns `"id"`, `"name"`), as a live Db2 would; they are then put in capture with
ASNCDC.ADDTABLE('DB2INST1', '<table>') (CD table `ASNCDC."CDC_DB2INST1_<table>"`).  The
emulation names each PostgreSQL object by its Db2 catalog name, so the suite's statements
(`INSERT INTO items ...`, double-quoted identifiers, `%s` parameters) run on PostgreSQL
directly with the schema on the search path; the emulation's capture triggers turn them into
CD rows, as SQL Replication's Capture program would.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from headwater.testing.db2_emulation import dbapi
from headwater.testing.localpg import LocalPostgres

from ..driver import Column, TypeCase, connect_decimal, debezium_topic
from .emulated import EmulatedDriver, quote

EMULATION = "headwater.testing.db2_emulation.dbapi"
SCHEMA = "DB2INST1"


def _variable_scale(unscaled: int, scale: int) -> dict[str, Any]:
    """io.debezium.data.VariableScaleDecimal in JSON: the scale and base64 unscaled bytes."""
    return {"scale": scale, "value": connect_decimal(unscaled)}


class Db2Driver(EmulatedDriver):
    name = "db2"
    key_change_headers = True
    DATABASE_PREFIX = "conf_db2_"
    SCHEMA = SCHEMA

    def __init__(self, server: LocalPostgres) -> None:
        super().__init__(server, dbapi.install)

    def properties(self, topics: Path, offsets: Path, tables: Sequence[str] | None = None,
                   extra: Mapping[str, object] | None = None) -> dict[str, str]:
        props = {
            "name": "conformance-db2",
            "connector.class": "io.debezium.connector.db2.Db2Connector",
            "database.hostname": "127.0.0.1",
            "database.port": str(self.server.port),
            "database.user": self.server.user,
            "database.dbname": self.db,
            "headwater.db2.driver": EMULATION,
            "topic.prefix": self.prefix,
            "offset.storage.file.filename": str(offsets),
            "schema.history.internal.file.filename": str(offsets.with_suffix(".history.jsonl")),
            "headwater.topics.dir": str(topics),
            "headwater.topics.segment.ms": "200",
            "poll.interval.ms": "100",
        }
        if tables is not None:
            props["table.include.list"] = ",".join(f"{SCHEMA}\\.{re.escape(t)}" for t in tables)
        props.update({k: str(v) for k, v in (extra or {}).items()})
        return props

    def create_table(self, name: str, columns: Sequence[Column], key: Sequence[str]) -> None:
        cols = [f"{quote(c.name)} {c.type}{'' if c.nullable else ' NOT NULL'}"
                for c in columns]
        if key:
            cols.append(f"PRIMARY KEY ({', '.join(quote(k) for k in key)})")
        self.execute(f"CREATE TABLE {quote(SCHEMA)}.{quote(name)} ({', '.join(cols)})")
        self.execute(('SELECT "ASNCDC"."ADDTABLE"(%s, %s)', (SCHEMA, name)))

    def topic(self, table: str) -> str:
        return debezium_topic(self.prefix, SCHEMA, table)  # server.schema.table

    def collection(self, table: str) -> str:
        return f"{SCHEMA}.{table}"  # Debezium's Db2 table ids have no catalog part

    def types_table(self) -> list[TypeCase]:
        """Db2 types as the emulation's catalog names them (SYSCAT.COLUMNS' TYPENAME from the
        PostgreSQL type: numeric without precision is DECFLOAT, text CLOB, bytea VARBINARY,
        time(0) TIME); left out (docs/db2.md): GRAPHIC and FOR BIT DATA strings,
        TIMESTAMP(7-12) (PostgreSQL keeps microseconds)."""
        day = (date(2016, 11, 4) - date(1970, 1, 1)).days
        midnight_ms = day * 86_400_000
        return [
            TypeCase("c_bool", "boolean", "true", True),
            TypeCase("c_i2", "smallint", "-32768", -32768),
            TypeCase("c_i4", "integer", "2147483647", 2**31 - 1),
            TypeCase("c_i8", "bigint", "-9223372036854775808", -(2**63)),
            TypeCase("c_f4", "real", "3.3", 3.3),
            TypeCase("c_f8", "double precision", "4.44", 4.44),
            TypeCase("c_dec", "decimal(10,2)", "-12345678.91", connect_decimal(-1234567891)),
            TypeCase("c_num", "decimal(5,0)", "12345", connect_decimal(12345)),
            TypeCase("c_decfloat", "numeric", "12.3450", _variable_scale(12345, 3)),
            TypeCase("c_char", "char(3)", "'ab'", "ab "),
            TypeCase("c_vc", "varchar(20)", "'tab\there'", "tab\there"),
            TypeCase("c_uni", "varchar(20)", "'žš ✓ 😀'", "žš ✓ 😀"),
            TypeCase("c_clob", "text", "'long'", "long"),
            TypeCase("c_xml", "xml", "'<a>1</a>'", "<a>1</a>"),
            TypeCase("c_vbin", "bytea", r"'\x0001ff'",
                     base64.b64encode(b"\x00\x01\xff").decode()),
            TypeCase("c_date", "date", "'2016-11-04'", day),
            TypeCase("c_time", "time(0)", "'13:51:30'", 49_890_000),
            TypeCase("c_ts3", "timestamp(3)", "'2016-11-04 13:51:30.123'",
                     midnight_ms + 49_890_123),
            TypeCase("c_ts6", "timestamp(6)", "'2016-11-04 13:51:30.123456'",
                     1_478_267_490_123_456),
            TypeCase("c_null", "integer", "NULL", None),
        ]
