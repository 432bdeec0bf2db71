"""Snapshot reading in worker processes, rendered there, written by the one runtime writer.

Why processes: a snapshot event costs ~30 µs of Python (parse, convert, render, append) while
the database streams rows far faster, and threads share one interpreter lock.  So each worker
process runs a connector-supplied *chunk reader* (its own connection inside the same database
snapshot) and renders every record to topic-record bytes with the runtime's own format (the
format stays a pure function of the record; the worker simply calls it).  The parent receives
compact rendered batches and emits them as `Batch(rendered=...)`; the runtime's writer appends
them to the topic log and stores offsets exactly as for any batch.

Invariants:

* *Back-pressure*: the result queue is bounded (`depth` batches); a full queue blocks the
  workers, and the parent blocks on the runtime's bounded queue, so memory stays bounded.
* *One `last`*: each worker holds back the final record of each chunk and renders it twice
  (snapshot=true and snapshot=last).  The parent holds one such tail at a time, emitting the
  previous tail's `true` form when a newer chunk completes; after the final chunk the held
  tail's `last` form is the very last event of the whole snapshot.
* *Failure*: a worker error or death fails the snapshot (the runtime reports it); a stop
  request terminates the workers (read-only readers: nothing to undo) and the snapshot
  restarts from scratch on the next run, as Debezium's does.
"""

from __future__ import annotations

import logging
import multiprocessing
import queue
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple, Protocol

from headwater.model.record import ChangeRecord, SnapshotMarker
from headwater.model.topic import TopicBatch

log = logging.getLogger("headwater.engine.parallel")

READY, ROWS, DONE, ERROR = "ready", "rows", "done", "error"


def merge_rendered(dst: TopicBatch, src: TopicBatch) -> None:
    """Appends `src`'s records to `dst`, topic by topic, keeping each topic's order."""
    for topic, records in src.items():
        existing = dst.get(topic)
        if existing is None:
            dst[topic] = list(records)
        else:
            existing.extend(records)


class Renderer(Protocol):
    def render_batch(self, records: Sequence[Any]) -> TopicBatch: ...


class ChunkEmitter:
    """Worker side: renders a chunk's records in batches and holds back the chunk's last one."""

    __slots__ = ("_held", "_pending", "_renderer", "_send", "batch_size", "rows")

    def __init__(
        self, renderer: Renderer, batch_size: int, send: Callable[[TopicBatch, int], None]
    ) -> None:
        self._renderer = renderer
        self._send = send
        self.batch_size = batch_size
        self._pending: list[ChangeRecord] = []
        self._held: ChangeRecord | None = None
        self.rows = 0

    def add(self, record: ChangeRecord) -> None:
        held = self._held
        if held is not None:
            pending = self._pending
            pending.append(held)
            if len(pending) >= self.batch_size:
                self.flush()
        self._held = record
        self.rows += 1

    def flush(self) -> None:
        if self._pending:
            self._send(self._renderer.render_batch(self._pending), len(self._pending))
            self._pending = []

    def finish(self) -> tuple[TopicBatch, TopicBatch] | None:
        """Flushes; returns the held record rendered as snapshot=true and as snapshot=last."""
        self.flush()
        held, self._held = self._held, None
        if held is None:
            return None
        render = self._renderer.render_batch
        return render([held]), render([held._replace(snapshot=SnapshotMarker.LAST)])


class ChunkReader(Protocol):
    """A connector's worker-side reader, built once per process by its factory."""

    def read(self, chunk: Any, emitter: ChunkEmitter) -> None:
        """Reads one chunk, passing every record to `emitter.add`."""
        ...

    def close(self) -> None: ...


class WorkerSpec(NamedTuple):
    """Everything a worker process needs; must pickle (workers are spawned, not forked)."""

    factory: Callable[[Any], ChunkReader]  # a module-level function
    reader_spec: Any  # the factory's argument
    renderer: Renderer
    batch_size: int


def _worker_main(spec: WorkerSpec, number: int, tasks: Any, results: Any) -> None:
    logging.getLogger("headwater").setLevel(logging.ERROR)  # the parent already said it all
    try:
        reader = spec.factory(spec.reader_spec)
        results.put((READY, number, None, None))
        while True:
            task = tasks.get()
            if task is None:
                break
            task_id, chunk = task

            def send(batch: TopicBatch, n: int, task_id: int = task_id) -> None:
                results.put((ROWS, task_id, batch, n))

            emitter = ChunkEmitter(spec.renderer, spec.batch_size, send)
            reader.read(chunk, emitter)
            results.put((DONE, task_id, emitter.finish(), emitter.rows))
        reader.close()
    except BaseException:
        results.put((ERROR, number, traceback.format_exc(), None))


class SnapshotWorkerError(RuntimeError):
    pass


class SnapshotStopped(Exception):
    """The runtime asked to stop while the workers were reading."""


class WorkerPool:
    """`processes` spawned workers reading `chunks` (any picklable values), in order given."""

    def __init__(self, spec: WorkerSpec, processes: int, chunks: Sequence[Any], depth: int):
        mp = multiprocessing.get_context("spawn")
        self.chunks = list(chunks)
        self._tasks: Any = mp.Queue()
        self._results: Any = mp.Queue(maxsize=max(2, depth))
        for item in enumerate(self.chunks):
            self._tasks.put(item)
        n = max(1, min(processes, len(self.chunks)))
        for _ in range(n):
            self._tasks.put(None)
        self._procs = [
            mp.Process(
                target=_worker_main, args=(spec, i, self._tasks, self._results),
                name=f"headwater-snapshot-{i}", daemon=True,
            )
            for i in range(n)
        ]

    def __enter__(self) -> WorkerPool:
        for p in self._procs:
            p.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.close(abort=exc_type is not None)

    def messages(self, stopping: threading.Event) -> Iterator[tuple[str, int, Any, Any]]:
        """Worker messages until every chunk is done; raises on a worker failure or stop."""
        remaining = len(self.chunks)
        while remaining:
            if stopping.is_set():
                raise SnapshotStopped
            try:
                msg = self._results.get(timeout=0.5)
            except queue.Empty:
                self._check_alive()
                continue
            if msg[0] == ERROR:
                raise SnapshotWorkerError(f"snapshot worker {msg[1]} failed:\n{msg[2]}")
            if msg[0] == DONE:
                remaining -= 1
            yield msg

    def _check_alive(self) -> None:
        for p in self._procs:
            if p.exitcode not in (None, 0):
                raise SnapshotWorkerError(f"snapshot worker {p.name} died (exit {p.exitcode})")

    def close(self, abort: bool = False) -> None:
        """Waits for the workers to exit (they do after the last chunk); `abort` kills them."""
        for p in self._procs:
            if p.is_alive() and not abort:
                p.join(timeout=10)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)
        for q in (self._tasks, self._results):
            q.cancel_join_thread()
            q.close()


class SnapshotTail:
    """Parent side of the one-`last` invariant: holds the newest chunk tail."""

    def __init__(self) -> None:
        self._held: tuple[TopicBatch, TopicBatch] | None = None

    def push(self, tails: tuple[TopicBatch, TopicBatch] | None) -> TopicBatch | None:
        """Holds `tails`; returns the previously held tail's snapshot=true form to emit."""
        if tails is None:
            return None
        previous, self._held = self._held, tails
        return previous[0] if previous is not None else None

    def last(self) -> TopicBatch | None:
        """The held tail as snapshot=last: the final event of the whole snapshot."""
        return self._held[1] if self._held is not None else None
