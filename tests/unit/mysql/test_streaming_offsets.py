"""Pieces of the binlog streaming that need no server: GTID state and gtid.source filters."""

from __future__ import annotations

from typing import Any

from headwater.connectors.mysql.config import validate_mysql_config
from headwater.connectors.mysql.position import (
    MariaDbGtids,
    binlog_order,
    gtid_set_text,
    parse_gtid_state,
    restart_offset,
)


def test_gtid_state_round_trip_keeps_one_gtid_per_domain() -> None:
    state = parse_gtid_state("1-2-5, 0-1-10")
    assert state == {0: "0-1-10", 1: "1-2-5"}
    assert gtid_set_text(state) == "0-1-10,1-2-5"
    assert parse_gtid_state(None) == {} and parse_gtid_state("") == {}


def test_gtid_source_filters_select_the_start_gtids() -> None:
    cfg, _ = validate_mysql_config({"topic.prefix": "m", "database.hostname": "h",
                                    "database.user": "u", "database.server.id": "3",
                                    "gtid.source.includes": "0-.*"})
    def start(gtids: str | None) -> dict[str, Any]:
        return MariaDbGtids(gtids).start(cfg.gtid_source_filter, _unasked, {})

    assert start("0-1-10,1-2-5,0-3-1") == {"gtid_position": "0-1-10,0-3-1"}
    assert start("1-2-5") == {}
    assert start(None) == {}


def _unasked() -> Any:
    raise AssertionError("a MariaDB position's start asks no server")


def test_restart_offset_and_binlog_order() -> None:
    offset = restart_offset("mariadb-bin.000003", 1234, "0-1-9", event=2, row=7, server_id=1)
    assert offset == {"file": "mariadb-bin.000003", "pos": 1234, "event": 2, "row": 7,
                      "server_id": 1, "ts_sec": 0, "gtids": "0-1-9"}
    assert "gtids" not in restart_offset("mariadb-bin.000003", 4, None)
    assert binlog_order("mysql-bin.000010", 4) > binlog_order("mysql-bin.000009", 999_999)
