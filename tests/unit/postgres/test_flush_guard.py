"""The LSN confirmed to PostgreSQL stays below every transaction that is not durable yet."""

from __future__ import annotations

from headwater.connectors.postgres.flush_guard import FlushGuard


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


def test_later_transaction_that_started_earlier_caps_below_its_own_begin() -> None:
    # A (start 300, end 500) and B (start 100) are in flight; an earlier transaction ending at
    # 450 is durable.  Capping below A's start (299) would let psycopg2 forward the flush on a
    # keepalive while B's messages (positions from 100) are the last received.
    g = FlushGuard()
    g.begin(300)
    g.commit(500)
    g.begin(100)
    assert g.safe(450) == 99
    g.commit(600)
    assert g.safe(500) == 99  # A is durable, B is not
    assert g.safe(600) == 600


def test_open_streamed_transaction_caps_whatever_is_durable() -> None:
    g = FlushGuard()
    g.stream_start(7, 1000)  # first segment of streamed transaction 7
    g.begin(1100)  # a small transaction committed while 7 runs
    g.commit(1200)
    assert g.safe(1200) == 999
    g.stream_start(7, 1500)  # a later segment does not move the cap up
    assert g.safe(5000) == 999
    assert g.open_streams == 1


def test_streamed_transaction_is_capped_until_its_replay_is_durable() -> None:
    g = FlushGuard()
    g.stream_start(7, 1000)
    g.stream_start(7, 1300)
    assert g.stream_end(7) == 1000  # Stream Commit: replayed as Begin at 1000 ... Commit
    g.begin(1000)
    g.commit(2000)
    assert g.safe(1500) == 999
    assert g.safe(2000) == 2000
    assert g.open_streams == 0


def test_aborted_streamed_transaction_no_longer_caps() -> None:
    g = FlushGuard()
    g.stream_start(7, 1000)
    g.stream_start(8, 900)
    assert g.safe(3000) == 899
    assert g.stream_end(8) == 900  # Stream Abort of 8
    assert g.safe(3000) == 999
    assert g.stream_end(7) == 1000
    assert g.safe(3000) == 3000
    assert g.stream_end(7) is None


def test_stream_first_seen_after_a_later_confirmation_still_lowers_the_cap() -> None:
    # A confirmation cannot be taken back (the reader settles that case); from now on the cap
    # is below the stream's start.
    g = FlushGuard()
    g.begin(2000)
    g.commit(2100)
    assert g.safe(2100) == 2100
    g.stream_start(9, 1500)
    assert g.safe(2100) == 1499


def test_restart_forgets_what_the_new_session_sends_again() -> None:
    g = FlushGuard()
    g.begin(100)
    g.commit(200)  # received, not durable: the writer will still make it durable
    g.stream_start(7, 150)
    g.begin(300)  # open when the connection broke
    g.restart()
    assert g.open_streams == 0
    assert g.safe(150) == 99  # the committed transaction is still in flight
    assert g.safe(200) == 200  # neither the stream nor the open transaction pins it any more


def test_many_transactions_match_a_brute_force_reference() -> None:
    import random

    rng = random.Random(5)
    for _ in range(200):
        g = FlushGuard()
        txs: list[list[int]] = []  # [start, end] in commit order (end -1 while open)
        streams: dict[int, int] = {}
        durable = lsn = 0
        for _ in range(rng.randint(1, 80)):
            r = rng.random()
            if r < 0.35:  # a protocol 1 transaction, possibly started long ago
                start = lsn - rng.randint(0, 500) if lsn > 500 else lsn + 1
                lsn += rng.randint(1, 100)
                g.begin(start)
                g.commit(lsn)
                txs.append([start, lsn])
            elif r < 0.5:
                xid = rng.randint(1, 5)
                start = max(1, lsn - rng.randint(0, 800))
                g.stream_start(xid, start)
                streams[xid] = min(streams.get(xid, start), start)
            elif r < 0.6 and streams:
                xid = rng.choice(sorted(streams))
                first = streams.pop(xid)
                assert g.stream_end(xid) == first
                if rng.random() < 0.7:  # committed: replayed
                    lsn += rng.randint(1, 100)
                    g.begin(first)
                    g.commit(lsn)
                    txs.append([first, lsn])
            else:
                durable = rng.randint(durable, lsn) if lsn > durable else durable
            want = durable
            for start, end in txs:
                if end > durable:
                    want = min(want, start - 1)
            for start in streams.values():
                want = min(want, start - 1)
            assert g.safe(durable) == want
