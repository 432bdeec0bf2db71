"""The MariaDB driver: a fresh database per test on a shared server (binlog_row_image=FULL).

The driver's session runs in UTC so that TIMESTAMP literals mean what they say.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from headwater.testing.localmariadb import LocalMariaDB

from ..driver import Column, Statement, TypeCase, connect_decimal, debezium_topic

_counter = itertools.count()


class MariaDBDriver:
    name = "mariadb"
    key_change_headers = True
    prefix = "conf"

    def __init__(self, server: LocalMariaDB) -> None:
        n = next(_counter)
        self.server = server
        self.db = f"conf_{n}"
        self.server_id = 6400 + n
        server.create_database(self.db)
        self.conn = self._connect(autocommit=True)

    def _connect(self, autocommit: bool) -> Any:
        conn = self.server.connect(self.db, autocommit=autocommit)
        with conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
        return conn

    def properties(self, topics: Path, offsets: Path, tables: Sequence[str] | None = None,
                   extra: Mapping[str, object] | None = None) -> dict[str, str]:
        props = {
            "name": "conformance-mariadb",
            "connector.class": "io.debezium.connector.mysql.MySqlConnector",
            "database.hostname": "127.0.0.1",
            "database.port": str(self.server.port),
            "database.user": self.server.user,
            "database.password": self.server.password,
            "database.server.id": str(self.server_id),
            "database.include.list": self.db,
            "topic.prefix": self.prefix,
            "offset.storage.file.filename": str(offsets),
            "schema.history.internal.file.filename": str(offsets.with_suffix(".history.jsonl")),
            "headwater.topics.dir": str(topics),
            "headwater.topics.segment.ms": "200",
            "poll.interval.ms": "100",
        }
        if tables is not None:
            props["table.include.list"] = ",".join(
                f"{re.escape(self.db)}\\.{re.escape(t)}" for t in tables)
        props.update({k: str(v) for k, v in (extra or {}).items()})
        return props

    def create_table(self, name: str, columns: Sequence[Column], key: Sequence[str]) -> None:
        cols = [f"{self.quote(c.name)} {c.type}{'' if c.nullable else ' NOT NULL'}"
                for c in columns]
        if key:
            cols.append(f"PRIMARY KEY ({', '.join(self.quote(k) for k in key)})")
        self.execute(f"CREATE TABLE {self.quote(name)} ({', '.join(cols)})")

    def execute(self, *statements: Statement) -> None:
        with self.conn.cursor() as cur:
            cur.execute("BEGIN")
            try:
                for s in statements:
                    sql, params = (s, None) if isinstance(s, str) else s
                    cur.execute(sql, params)
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def connect(self) -> Any:
        return self._connect(autocommit=False)

    def quote(self, name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    def topic(self, table: str) -> str:
        return debezium_topic(self.prefix, self.db, table)

    def collection(self, table: str) -> str:
        return f"{self.db}.{table}"

    def rows(self, table: str) -> list[dict[str, Any]]:
        with self.conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {self.quote(table)}")
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def restart_server(self) -> None:
        self.conn.close()
        self.server.restart()
        self.conn = self._connect(autocommit=True)

    def types_table(self) -> list[TypeCase]:
        return [
            TypeCase("c_i1", "TINYINT", "-128", -128),
            TypeCase("c_i2", "SMALLINT", "-32768", -32768),
            TypeCase("c_i4", "INT", "2147483647", 2**31 - 1),
            TypeCase("c_u4", "INT UNSIGNED", "4294967295", 2**32 - 1),
            TypeCase("c_i8", "BIGINT", "-9223372036854775808", -(2**63)),
            TypeCase("c_f8", "DOUBLE", "4.44", 4.44),
            TypeCase("c_dec", "DECIMAL(10,2)", "-12345678.91", connect_decimal(-1234567891)),
            TypeCase("c_bit", "BIT(1)", "b'1'", True),
            TypeCase("c_vc", "VARCHAR(20)", "'žš ✓ 😀'", "žš ✓ 😀"),
            TypeCase("c_text", "TEXT", "'tab\\there\\nnew'", "tab\there\nnew"),
            TypeCase("c_bin", "VARBINARY(8)", "x'0001FF'", "AAH/"),
            TypeCase("c_date", "DATE", "'2016-11-04'", (date(2016, 11, 4) - date(1970, 1, 1)).days),
            TypeCase("c_time", "TIME(6)", "'13:51:30.123456'",
                     ((13 * 60 + 51) * 60 + 30) * 1_000_000 + 123_456),
            TypeCase("c_dt", "DATETIME(6)", "'2016-11-04 13:51:30.123456'",
                     1_478_267_490_123_456),
            TypeCase("c_ts", "TIMESTAMP(6) NULL", "'2016-11-04 13:51:30.123456'",
                     "2016-11-04T13:51:30.123456Z"),
            TypeCase("c_enum", "ENUM('sad','ok','happy')", "'happy'", "happy"),
            TypeCase("c_null", "INT", "NULL", None),
        ]

    def close(self) -> None:
        try:
            with self.conn.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS {self.quote(self.db)}")
        finally:
            self.conn.close()
