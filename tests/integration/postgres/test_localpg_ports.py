"""A test PostgreSQL whose chosen port was taken before its bind starts on another port; one
whose port was given, or that has started once, keeps it."""

from __future__ import annotations

import socket

import pytest

from headwater.testing.localpg import LocalPostgres, LocalPostgresError, free_port

pytestmark = pytest.mark.integration


def test_a_taken_port_is_replaced_on_the_first_start_only() -> None:
    thief = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    pg = LocalPostgres()
    taken = pg.port
    thief.bind(("127.0.0.1", taken))
    thief.listen()
    try:
        pg.start()
        assert pg.port != taken
        pg.stop()
        thief.close()
        thief = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        thief.bind(("127.0.0.1", pg.port))
        thief.listen()
        with pytest.raises(LocalPostgresError, match="Address already in use"):
            pg.start()  # a restart keeps its port: clients know it
    finally:
        thief.close()
        pg.cleanup()


def test_a_given_port_is_kept() -> None:
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as thief:
        thief.bind(("127.0.0.1", port))
        thief.listen()
        pg = LocalPostgres(port=port)
        try:
            with pytest.raises(LocalPostgresError, match="Address already in use"):
                pg.start()
        finally:
            pg.cleanup()
