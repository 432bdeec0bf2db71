"""The bounded change-event queue between a source's reader thread and the topic writer.

Items are batches (a list of records plus the offset that becomes safe to record once the batch
is durable), because per-record queue operations would dominate the capture hot path.  Capacity
is counted in records (`max.queue.size`): a full queue blocks the reader, which is the
back-pressure that keeps memory bounded when the writer (disk, Kafka) is slower than the
database.  `drain` hands the writer up to `max.batch.size` records, waiting at most
`poll.interval.ms` for the first one.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any, NamedTuple

from headwater.model.record import SourceEvent
from headwater.model.topic import RenderedBatch


class Batch(NamedTuple):
    """Records plus what the runtime must do once they are durable.

    `offset` is the connector offset to store (None: nothing new to store) and `ack` an opaque
    token handed back to the source's `acknowledge` (e.g. the LSN to confirm to PostgreSQL).
    `rendered` holds topic records a source already rendered with the runtime's format (a
    parallel snapshot renders in its worker processes); they are written after `records`.
    `stored` is set once the batch is durable and its offset (if any) stored: a source that
    must not go on before that waits for it.
    """

    records: Sequence[SourceEvent]
    offset: dict[str, Any] | None = None
    ack: Any = None
    rendered: RenderedBatch | None = None
    # False for records that are not change events (notifications): not in the metrics.
    counted: bool = True
    stored: threading.Event | None = None

    @property
    def size(self) -> int:
        """Events in the batch: what queue capacity and `task_done` count."""
        if self.rendered is None:
            return len(self.records)
        return len(self.records) + sum(len(v) for v in self.rendered.values())


class QueueClosed(Exception):
    """Raised to a blocked producer when the runtime shuts the queue."""


class ChangeEventQueue:
    def __init__(self, max_queue_size: int, max_batch_size: int) -> None:
        if max_queue_size <= 0 or max_batch_size <= 0:
            raise ValueError("max.queue.size and max.batch.size must be positive")
        self.capacity = max_queue_size
        self.max_batch_size = max_batch_size
        self._items: deque[Batch] = deque()
        self._size = 0
        self._unfinished = 0  # put but not yet reported written (task_done)
        self._closed = False
        self._cond = threading.Condition()

    @property
    def remaining_capacity(self) -> int:
        return max(0, self.capacity - self._size)

    @property
    def size(self) -> int:
        return self._size

    def put(self, batch: Batch) -> None:
        """Enqueue, blocking while the queue is full (an oversized batch waits for empty)."""
        n = batch.size
        with self._cond:
            while not self._closed and self._size > 0 and self._size + n > self.capacity:
                self._cond.wait(0.5)
            if self._closed:
                raise QueueClosed
            self._items.append(batch)
            self._size += n
            self._unfinished += n
            self._cond.notify_all()

    def drain(self, timeout_s: float) -> list[Batch]:
        """Up to max_batch_size records' worth of batches (at least one batch if any arrive)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while not self._items:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closed:
                    return []
                self._cond.wait(remaining)
            out: list[Batch] = []
            taken = 0
            while self._items:
                n = self._items[0].size
                if out and taken + n > self.max_batch_size:
                    break
                out.append(self._items.popleft())
                taken += n
            self._size -= taken
            self._cond.notify_all()
            return out

    def task_done(self, records: int) -> None:
        """The writer made `records` drained records durable."""
        with self._cond:
            self._unfinished -= records
            self._cond.notify_all()

    def wait_written(self, stop: threading.Event) -> None:
        """Blocks until everything put so far is written (or `stop` is set)."""
        with self._cond:
            while self._unfinished > 0 and not stop.is_set() and not self._closed:
                self._cond.wait(0.1)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed
