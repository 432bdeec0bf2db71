"""The snapshot window merge: which rows of an incremental snapshot chunk may still be emitted.

Why a pure function: this is the one decision on which the correctness of an incremental
snapshot rests, and it must hold for every interleaving of chunk reads and concurrent changes.
As a function of plain values (the chunk's rows keyed by primary key, and the stream events seen
between the low and the high watermark) it can be tested exhaustively against a brute-force
model of a table, with no database and no threads (tests/unit/test_window_merge.py).

The rule (DBLog, Debezium, Flink CDC): the chunk is read at some instant between the low and the
high watermark.  A row whose key the stream shows changing inside the window may be stale, and
the stream event that changed it carries the newer state anyway, so the READ is dropped.  A row
untouched inside the window holds the value it has at the high watermark, so emitting it there,
before everything the stream shows after the high watermark, can never overwrite a newer value.
A truncate of the table inside the window drops every buffered row: any row the chunk could
still show was inserted after the truncate, so inside the window too.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Generic, NamedTuple, TypeVar

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")


class KeyChange(NamedTuple):
    """A streamed row change of the chunk's table: every key it touches.

    An insert, update or delete touches one key; an update that changes the primary key touches
    the old and the new one.
    """

    keys: tuple[Hashable, ...]


class TableTruncated(NamedTuple):
    """A streamed TRUNCATE of the chunk's table (emitted or not: the rows are gone either way)."""


WindowEvent = KeyChange | TableTruncated


def merge_window(chunk: Sequence[tuple[K, R]], events: Iterable[WindowEvent]) -> list[R]:
    """The chunk rows to emit at the high watermark, in chunk (primary key) order.

    `chunk` holds (key, row) pairs as read; `events` are the stream events of the chunk's table
    between the low and the high watermark, in stream order.
    """
    touched: set[Hashable] = set()
    for event in events:
        if isinstance(event, TableTruncated):
            return []
        touched.update(event.keys)
    return [row for key, row in chunk if key not in touched]


class SnapshotWindow(Generic[K, R]):
    """The window of one chunk as the streaming reader lives it: events recorded while open.

    Only the events are kept (not their rows), so memory is bounded by the chunk and the keys
    changed meanwhile.  `close` applies :func:`merge_window`.
    """

    def __init__(self, chunk_id: str) -> None:
        self.chunk_id = chunk_id
        self.is_open = False
        self.rows: Sequence[tuple[K, R]] | None = None  # None: the chunk is not read yet
        self._events: list[WindowEvent] = []
        self._truncated = False

    def open(self) -> None:
        self.is_open = True

    def fill(self, rows: Sequence[tuple[K, R]]) -> None:
        self.rows = rows

    def key_changed(self, *keys: Hashable) -> None:
        if self.is_open and not self._truncated:
            self._events.append(KeyChange(keys))

    def truncated(self) -> None:
        if self.is_open and not self._truncated:
            self._truncated = True
            self._events = [TableTruncated()]

    @property
    def events_seen(self) -> int:
        return len(self._events)

    def close(self) -> list[R]:
        """The surviving rows; the window is spent afterwards."""
        if self.rows is None:
            raise RuntimeError(f"window {self.chunk_id} closed before its chunk was read")
        survivors = merge_window(self.rows, self._events)
        self.is_open = False
        self._events = []
        return survivors
