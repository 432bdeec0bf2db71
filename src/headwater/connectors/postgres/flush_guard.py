"""Which LSN may be confirmed to the server while transactions are in flight: a data structure
of its own (no I/O), kept by the streaming source (streaming.py) and tested alone
(tests/unit/postgres/test_flush_guard.py)."""

from __future__ import annotations

from collections import deque


class FlushGuard:
    """Caps the LSN we confirm below every transaction that is received but not durable yet,
    and below every streamed transaction that is still open.

    Why: psycopg2 forwards the flush position to the server's WAL end on a keepalive whenever
    the last message it received starts at or before the LSN we last confirmed.  Forwarding
    confirms every commit the server has sent so far; it is harmless once all of them are
    durable, and loses the rest on a crash otherwise.  Transactions are sent in commit order,
    but their changes interleave in the WAL, so a transaction received after another one can
    start (its Begin's position) before that one's end LSN, even before an earlier transaction's
    start.  Confirming at most one byte before the *smallest* start of all transactions still in
    flight keeps psycopg2's condition false for all their messages (the stored offset, not the
    slot, says where a restart resumes, so the lower confirmation causes no re-delivery).

    Invariant: the LSN returned by `safe(durable)` is at most `durable` and lower than the
    start of

    - every transaction received and not durable: a protocol 1 transaction from its Begin until
      `durable` reaches its end LSN, a streamed one from its Stream Commit (replayed as a Begin
      at its first Stream Start's position) until `durable` reaches its end LSN;
    - every streamed transaction that is open (Stream Start seen, neither committed nor
      aborted), whatever `durable` says: its segments carry the positions of its changes,
      which lie before later commits, and it pins the server's restart point anyway.  On Stream
      Abort it is forgotten: nothing of it will ever be written.

    Transactions first seen after we confirmed past their start cannot be helped here (a
    confirmation is never taken back); the reader covers that case for streamed segments
    (`_Loop.settle`).  `restart` forgets what a new replication session will send again.

    In-flight transactions are kept in commit order (their end LSNs increase), minus those
    that can never hold the minimum: an entry whose start is not below a later entry's start
    leaves the window (becomes durable) no later than that one, so it is dropped on arrival of
    the later one; the front is then always the smallest start, and every operation is O(1)
    amortized.
    """

    def __init__(self) -> None:
        self._inflight: deque[list[int]] = deque()  # [start, end_lsn or -1], starts increasing
        self._streams: dict[int, int] = {}  # open streamed transaction xid -> smallest start

    def begin(self, data_start: int) -> None:
        inflight = self._inflight
        while inflight and inflight[-1][0] >= data_start:
            inflight.pop()
        inflight.append([data_start, -1])

    def commit(self, end_lsn: int) -> None:
        if self._inflight:
            self._inflight[-1][1] = end_lsn

    def stream_start(self, xid: int, data_start: int) -> None:
        """A segment of streamed transaction `xid` starts at `data_start`."""
        first = self._streams.get(xid)
        if first is None or data_start < first:
            self._streams[xid] = data_start

    def stream_end(self, xid: int) -> int | None:
        """Stream Commit or Abort of `xid`: forget it as open; returns its smallest start.

        A committed one is tracked again by the `begin`/`commit` of its replay."""
        return self._streams.pop(xid, None)

    def restart(self) -> None:
        """A new replication session: open transactions will be sent again from their start."""
        self._streams.clear()
        while self._inflight and self._inflight[-1][1] < 0:
            self._inflight.pop()

    @property
    def open_streams(self) -> int:
        return len(self._streams)

    def safe(self, durable: int) -> int:
        """The highest LSN that may be confirmed when everything up to `durable` is durable."""
        inflight = self._inflight
        while inflight and 0 <= inflight[0][1] <= durable:
            inflight.popleft()
        low = durable
        if inflight and inflight[0][0] <= low:
            low = inflight[0][0] - 1
        for first in self._streams.values():
            if first <= low:
                low = first - 1
        return low
