"""Connections to MySQL/MariaDB for metadata and snapshots (the binlog has its own client).

Every non-binlog connection runs in UTC (`time_zone='+00:00'`, so TIMESTAMP values read in a
snapshot are UTC as the binlog's are), with `database.initial.statements` after that.
"""

from __future__ import annotations

from typing import Any

import pymysql  # type: ignore[import-untyped]

from headwater.connectors.mysql.binlog.client import BinlogClient
from headwater.connectors.mysql.config import MySqlConnectorConfig
from headwater.connectors.mysql.server import server_for

SESSION_STATEMENTS = ("SET time_zone = '+00:00'", "SET NAMES utf8mb4")


def connect(cfg: MySqlConnectorConfig, **extra: Any) -> Any:
    conn = pymysql.connect(**cfg.connect_kwargs(), autocommit=True, **extra)
    with conn.cursor() as cur:
        for statement in (*SESSION_STATEMENTS, *cfg.database_initial_statements):
            cur.execute(statement)
    return conn


def binlog_client(cfg: MySqlConnectorConfig) -> BinlogClient:
    """The binlog connection (not started).  With `connect.keep.alive`, Debezium's: server
    heartbeats at 0.8 x the keep-alive interval, so a connection silent for a whole interval is
    a lost one (the streaming loop's idle step), not an idle server."""
    heartbeat_s = cfg.heartbeat_interval_ms / 1000 if cfg.heartbeat_interval_ms else 30.0
    if cfg.connect_keep_alive:
        heartbeat_s = min(heartbeat_s, 0.8 * cfg.connect_keep_alive_interval_ms / 1000)
    return BinlogClient(
        cfg.database_hostname, cfg.database_port, cfg.database_user,
        cfg.database_password.reveal() if cfg.database_password else "",
        cfg.database_server_id, connect_timeout=cfg.connect_timeout_ms / 1000,
        heartbeat_interval_s=heartbeat_s)


def quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def qualified(database: str, table: str) -> str:
    return f"{quote_ident(database)}.{quote_ident(table)}"


def show_create_table(cur: Any, database: str, table: str) -> tuple[str, bool]:
    """The table's `SHOW CREATE TABLE` and whether it quotes names with double quotes: the
    server quotes as the session's sql_mode says (ANSI_QUOTES, alone or in a combination
    such as ANSI, which @@sql_mode lists expanded), so a server whose global mode has it
    prints `CREATE TABLE "t"`."""
    cur.execute("SELECT @@SESSION.sql_mode")
    modes = str(cur.fetchone()[0] or "").upper().split(",")
    cur.execute(f"SHOW CREATE TABLE {qualified(database, table)}")
    return str(cur.fetchone()[1]), "ANSI_QUOTES" in modes


def binlog_status_statement(version: str) -> str:
    """The statement that says where the binlog ends, on the server `version` names."""
    return server_for(version).binlog_status_statement
