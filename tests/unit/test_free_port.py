"""Test servers' ports come from outside the kernel's ephemeral range, where no outgoing
connection can take them between the choice and the server's bind."""

from __future__ import annotations

import socket

from headwater.testing.localpg import _ephemeral_range, free_port


def test_free_ports_are_outside_the_ephemeral_range_and_bindable() -> None:
    low, high = _ephemeral_range()
    ports = {free_port() for _ in range(50)}
    assert all(not low <= p <= high for p in ports), sorted(ports)
    assert len(ports) > 40  # random, not one port handed to every caller
    for port in list(ports)[:5]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", port))


def test_a_port_someone_listens_on_is_not_chosen(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    taken.bind(("127.0.0.1", free_port()))
    taken.listen()
    busy = taken.getsockname()[1]
    calls = iter([busy, busy, busy + 1 if busy + 1 < 32768 else busy - 1])
    from headwater.testing import localpg
    monkeypatch.setattr(localpg._ports, "randrange", lambda a, b: next(calls))
    try:
        assert free_port() != busy
    finally:
        taken.close()
