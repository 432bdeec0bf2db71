"""The SQL Server driver, against the EMULATION (headwater.testing.sqlserver_emulation): a fresh
emulated database per test on a shared PostgreSQL, not a live SQL Server.

Tables are created in T-SQL through the emulation's pymssql-shaped adapter (so their declared
T-SQL types are what the connector reads from INFORMATION_SCHEMA) in schema `dbo`, then enabled
for CDC with sys.sp_cdc_enable_table (capture instance `dbo_<table>`).  Data changes go to the
PostgreSQL tables directly: the emulation's capture triggers turn them into change rows, and
the statements the suite writes (`%s` parameters, double-quoted identifiers) are T-SQL that
pymssql would send as they are (QUOTED_IDENTIFIER is ON by default).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path

from headwater.testing.localpg import LocalPostgres
from headwater.testing.sqlserver_emulation import dbapi

from ..driver import Column, TypeCase, connect_decimal, debezium_topic
from .emulated import EmulatedDriver

EMULATION = "headwater.testing.sqlserver_emulation.dbapi"


def _bracket(name: str) -> str:
    return "[" + name.replace("]", "]]") + "]"


class SqlServerDriver(EmulatedDriver):
    name = "sqlserver"
    key_change_headers = False  # a primary-key update is a split update (ops 1, 2)
    DATABASE_PREFIX = "conf_ss_"
    SCHEMA = "dbo"  # SQL Server's default schema

    def __init__(self, server: LocalPostgres) -> None:
        super().__init__(server, dbapi.install)

    def properties(self, topics: Path, offsets: Path, tables: Sequence[str] | None = None,
                   extra: Mapping[str, object] | None = None) -> dict[str, str]:
        props = {
            "name": "conformance-sqlserver",
            "connector.class": "io.debezium.connector.sqlserver.SqlServerConnector",
            "database.hostname": "127.0.0.1",
            "database.port": str(self.server.port),
            "database.user": self.server.user,
            "database.names": self.db,
            "database.encrypt": "false",
            "headwater.sqlserver.driver": EMULATION,
            "topic.prefix": self.prefix,
            "offset.storage.file.filename": str(offsets),
            "schema.history.internal.file.filename": str(offsets.with_suffix(".history.jsonl")),
            "headwater.topics.dir": str(topics),
            "headwater.topics.segment.ms": "200",
            "poll.interval.ms": "100",
        }
        if tables is not None:
            props["table.include.list"] = ",".join(f"dbo\\.{re.escape(t)}" for t in tables)
        props.update({k: str(v) for k, v in (extra or {}).items()})
        return props

    def tsql(self, *statements: str) -> None:
        """Runs T-SQL through the emulation's adapter, one transaction."""
        conn = dbapi.connect(server="127.0.0.1", port=self.server.port, user=self.server.user,
                             database=self.db)
        try:
            cur = conn.cursor()
            for statement in statements:
                cur.execute(statement)
            conn.commit()
        finally:
            conn.close()

    def enable_cdc(self, table: str, capture_instance: str | None = None) -> None:
        """sys.sp_cdc_enable_table @source_schema = 'dbo', @source_name = table."""
        self.execute(("SELECT sys.sp_cdc_enable_table('dbo', %s, %s)",
                      (table, capture_instance)))

    def create_table(self, name: str, columns: Sequence[Column], key: Sequence[str]) -> None:
        cols = [f"{_bracket(c.name)} {c.type}{'' if c.nullable else ' NOT NULL'}"
                for c in columns]
        if key:
            cols.append(f"PRIMARY KEY ({', '.join(_bracket(k) for k in key)})")
        self.tsql(f"CREATE TABLE [dbo].{_bracket(name)} ({', '.join(cols)})")
        self.enable_cdc(name)

    def topic(self, table: str) -> str:
        return debezium_topic(self.prefix, "dbo", table)  # the reference: server.schema.table

    def collection(self, table: str) -> str:
        return f"{self.db}.dbo.{table}"

    def types_table(self) -> list[TypeCase]:
        """What the emulation can represent as SQL Server does; left out (docs/sqlserver.md):
        time(7)/datetime2(7) (PostgreSQL keeps microseconds) and datetimeoffset (PostgreSQL
        keeps no offset).  Literals are ones T-SQL and PostgreSQL both accept."""
        day = (date(2016, 11, 4) - date(1970, 1, 1)).days
        midnight_ms = day * 86_400_000
        return [
            TypeCase("c_bit", "bit", "'1'", True),
            TypeCase("c_i1", "tinyint", "255", 255),
            TypeCase("c_i2", "smallint", "-32768", -32768),
            TypeCase("c_i4", "int", "2147483647", 2**31 - 1),
            TypeCase("c_i8", "bigint", "-9223372036854775808", -(2**63)),
            TypeCase("c_f4", "real", "3.3", 3.3),
            TypeCase("c_f8", "float", "4.44", 4.44),
            TypeCase("c_dec", "decimal(10,2)", "-12345678.91", connect_decimal(-1234567891)),
            TypeCase("c_num", "numeric(5,0)", "12345", connect_decimal(12345)),
            TypeCase("c_money", "money", "922337203685477.5807",
                     connect_decimal(9223372036854775807)),
            TypeCase("c_smoney", "smallmoney", "-214748.3648", connect_decimal(-2147483648)),
            TypeCase("c_char", "char(3)", "'ab'", "ab "),
            TypeCase("c_vc", "varchar(20)", "'tab\there'", "tab\there"),
            TypeCase("c_nvc", "nvarchar(20)", "'žš ✓ 😀'", "žš ✓ 😀"),
            TypeCase("c_nvmax", "nvarchar(max)", "'long'", "long"),
            TypeCase("c_text", "text", "'text'", "text"),
            TypeCase("c_ntext", "ntext", "'ntext'", "ntext"),
            TypeCase("c_xml", "xml", "'<a>1</a>'", "<a>1</a>"),
            TypeCase("c_uuid", "uniqueidentifier", "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'",
                     "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"),
            TypeCase("c_bin", "binary(3)", r"'\x0001ff'", "AAH/"),
            TypeCase("c_vbin", "varbinary(8)", r"'\x0001ff'", "AAH/"),
            TypeCase("c_date", "date", "'2016-11-04'", day),
            TypeCase("c_time3", "time(3)", "'13:51:30.123'", 49_890_123),
            TypeCase("c_time6", "time(6)", "'13:51:30.123456'", 49_890_123_456),
            TypeCase("c_dt", "datetime", "'2016-11-04 13:51:30.123'",
                     midnight_ms + 49_890_123),
            TypeCase("c_sdt", "smalldatetime", "'2016-11-04 13:51:00'", midnight_ms + 49_860_000),
            TypeCase("c_dt2_3", "datetime2(3)", "'2016-11-04 13:51:30.123'",
                     midnight_ms + 49_890_123),
            TypeCase("c_dt2_6", "datetime2(6)", "'2016-11-04 13:51:30.123456'",
                     1_478_267_490_123_456),
            TypeCase("c_null", "int", "NULL", None),
        ]
