"""The PostgreSQL driver: a fresh database and replication slot per test on a shared server."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from headwater.testing.localpg import LocalPostgres

from ..driver import Column, Statement, TypeCase, connect_decimal, debezium_topic

_counter = itertools.count()


class PostgresDriver:
    name = "postgres"
    key_change_headers = True
    prefix = "conf"

    def __init__(self, server: LocalPostgres) -> None:
        n = next(_counter)
        self.server = server
        self.db = f"conf_{n}"
        self.slot = f"conf_slot_{n}"
        server.create_database(self.db)
        self.conn = server.connect(self.db)

    def properties(self, topics: Path, offsets: Path, tables: Sequence[str] | None = None,
                   extra: Mapping[str, object] | None = None) -> dict[str, str]:
        props = {
            "name": "conformance-postgres",
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "database.hostname": "127.0.0.1",
            "database.port": str(self.server.port),
            "database.user": self.server.user,
            "database.password": "unused",
            "database.dbname": self.db,
            "topic.prefix": self.prefix,
            "plugin.name": "pgoutput",
            "slot.name": self.slot,
            "publication.name": f"pub_{self.slot}",
            "offset.storage.file.filename": str(offsets),
            "headwater.topics.dir": str(topics),
            "headwater.topics.segment.ms": "200",
            "poll.interval.ms": "100",
            # a killed capture's walsender lets go of the slot a moment later
            "slot.retry.delay.ms": "300",
            "slot.max.retries": "30",
        }
        if tables is not None:
            props["table.include.list"] = ",".join(f"public\\.{re.escape(t)}" for t in tables)
        props.update({k: str(v) for k, v in (extra or {}).items()})
        return props

    def create_table(self, name: str, columns: Sequence[Column], key: Sequence[str]) -> None:
        cols = [f"{self.quote(c.name)} {c.type}{'' if c.nullable else ' NOT NULL'}"
                for c in columns]
        if key:
            cols.append(f"PRIMARY KEY ({', '.join(self.quote(k) for k in key)})")
        self.execute(f"CREATE TABLE {self.quote(name)} ({', '.join(cols)})",
                     f"ALTER TABLE {self.quote(name)} REPLICA IDENTITY FULL")

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
        return self.server.connect(self.db, autocommit=False)

    def quote(self, name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    def topic(self, table: str) -> str:
        return debezium_topic(self.prefix, "public", table)

    def collection(self, table: str) -> str:
        return f"public.{table}"

    def rows(self, table: str) -> list[dict[str, Any]]:
        with self.conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {self.quote(table)}")
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def restart_server(self) -> None:
        self.conn.close()
        self.server.restart()
        self.conn = self.server.connect(self.db)

    def types_table(self) -> list[TypeCase]:
        return [
            TypeCase("c_i2", "smallint", "-32768", -32768),
            TypeCase("c_i4", "integer", "2147483647", 2**31 - 1),
            TypeCase("c_i8", "bigint", "-9223372036854775808", -(2**63)),
            TypeCase("c_f4", "real", "3.3", 3.3),
            TypeCase("c_f8", "double precision", "4.44", 4.44),
            TypeCase("c_dec", "numeric(10,2)", "-12345678.91", connect_decimal(-1234567891)),
            TypeCase("c_bool", "boolean", "true", True),
            TypeCase("c_vc", "varchar(20)", "'žš ✓ 😀'", "žš ✓ 😀"),
            TypeCase("c_text", "text", r"E'tab\there\nnew'", "tab\there\nnew"),
            TypeCase("c_bin", "bytea", r"'\x0001ff'", "AAH/"),
            TypeCase("c_date", "date", "'2016-11-04'", (date(2016, 11, 4) - date(1970, 1, 1)).days),
            TypeCase("c_time", "time(6)", "'13:51:30.123456'",
                     ((13 * 60 + 51) * 60 + 30) * 1_000_000 + 123_456),
            TypeCase("c_ts", "timestamp(6)", "'2016-11-04 13:51:30.123456'",
                     1_478_267_490_123_456),
            TypeCase("c_tstz", "timestamptz(6)", "'2016-11-04 13:51:30.123456+02'",
                     "2016-11-04T11:51:30.123456Z"),
            TypeCase("c_uuid", "uuid", "'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'",
                     "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
            TypeCase("c_null", "integer", "NULL", None),
        ]

    def close(self) -> None:
        self.conn.close()
        conn = self.server.connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                            " WHERE slot_name = %s AND NOT active", (self.slot,))
        finally:
            conn.close()
