"""Reading a change stream ahead, in a thread of its own (`ChangeStreamReader`).

Why: a change stream's events come in batches, one `getMore` round trip each, and the server
can take long to build one (`updateLookup` reads every updated document).  Read from the
capture loop, that time and the loop's own work (encoding, dispatching) add up; read here,
they overlap: the next batch is on its way while the loop encodes this one.  pymongo waits
for the network without holding the GIL.

What the loop gets, in stream order: events, and `Idle(token)` whenever a `try_next` found
nothing, with the stream's resume token as it was then.  The loop must not read the stream's
`resume_token` itself: it may already be past events still in the buffer, and an offset there
would skip them.  An error of the stream is raised by `next()` once the events read before it
have been taken.  The buffer holds at most `limit` events: the reader waits when it is full,
so memory stays bounded when the loop is slower than the stream, and resumes once the loop has
taken half of it.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, NamedTuple

__all__ = ["ChangeStreamReader", "Idle"]


class Idle(NamedTuple):
    """`try_next` returned nothing; `token` is the stream's resume token at that point."""

    token: Any


class _Failed(NamedTuple):
    error: BaseException


class ChangeStreamReader:
    """Reads `stream` (a pymongo ChangeStream) ahead in a daemon thread; `next()` returns
    the next event or Idle, or None after `timeout` seconds without either."""

    def __init__(self, stream: Any, limit: int = 20_000) -> None:
        self.stream = stream
        self.limit = limit
        self._resume = max(1, limit // 2)  # the reader resumes below this many
        self._items: deque[Any] = deque()
        self._ready = threading.Condition(threading.Lock())
        self._stop = False
        self._waiting = False  # the consumer sleeps on _ready
        self._full = False  # the reader sleeps on _ready (the buffer is full)
        self._thread = threading.Thread(target=self._run, name="headwater-mongo-stream",
                                        daemon=True)

    def __enter__(self) -> ChangeStreamReader:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, timeout: float = 30.0) -> None:
        """Stops the thread (after its current `try_next`, bounded by the server's await
        time) and waits for it."""
        with self._ready:
            self._stop = True
            self._ready.notify_all()
        self._thread.join(timeout)

    def _run(self) -> None:
        stream, items, ready = self.stream, self._items, self._ready
        try_next = stream.try_next
        limit = self.limit
        try:
            while not self._stop:
                if len(items) >= limit:
                    with ready:
                        self._full = True
                        while len(items) >= self._resume and not self._stop:
                            ready.wait(0.1)
                        self._full = False
                    continue
                event = try_next()
                items.append(Idle(stream.resume_token) if event is None else event)
                if self._waiting:
                    with ready:
                        ready.notify()
        except BaseException as exc:  # handed to the consumer, in order
            items.append(_Failed(exc))
            with ready:
                ready.notify()

    def next(self, timeout: float = 0.2) -> Any:
        """The next event or Idle; None if nothing came within `timeout`."""
        items = self._items
        try:
            item = items.popleft()
        except IndexError:
            with self._ready:
                self._waiting = True
                try:
                    if not items:
                        self._ready.wait(timeout)
                finally:
                    self._waiting = False
            try:
                item = items.popleft()
            except IndexError:
                return None
        if self._full and len(items) < self._resume:
            with self._ready:
                self._ready.notify()
        if type(item) is _Failed:
            raise item.error
        return item
