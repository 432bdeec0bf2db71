"""The LSN confirmed to PostgreSQL stays below every transaction that is not durable yet."""

from __future__ import annotations

from headwater.connectors.postgres.streaming import FlushGuard


def test_sequential_transactions_confirm_their_end() -> None:
    g = FlushGuard()
    g.begin(100)
    g.commit(200)
    assert g.safe(200) == 200


def test_interleaved_next_transaction_caps_confirmation_below_its_begin() -> None:
    # tx2 started (150) before tx1 committed (end 200): WAL interleaving, commit-order sending.
    g = FlushGuard()
    g.begin(100)
    g.commit(200)
    g.begin(150)  # tx2 received, not durable
    assert g.safe(200) == 149  # psycopg2 must not see 150 <= confirmed
    g.commit(260)
    assert g.safe(200) == 149
    assert g.safe(260) == 260  # tx2 durable: nothing in flight


def test_open_transaction_without_commit_caps_too() -> None:
    g = FlushGuard()
    g.begin(100)
    g.commit(200)
    g.begin(300)
    assert g.safe(200) == 200  # the open transaction starts after the durable point
    assert g.safe(10_000) == 299  # never past the start of an uncommitted transaction


def test_nothing_received_confirms_durable() -> None:
    assert FlushGuard().safe(42) == 42
