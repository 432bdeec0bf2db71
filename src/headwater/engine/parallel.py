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

import contextlib
import logging
import multiprocessing
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple, Protocol

from headwater.engine.metrics import CaptureMetrics
from headwater.engine.queue import Batch
from headwater.model.record import ChangeRecord, SnapshotMarker
from headwater.model.topic import (
    PackedRecords,
    RecordChain,
    RenderedBatch,
    TopicBatch,
    TopicRecord,
)

log = logging.getLogger("headwater.engine.parallel")

READY, ROWS, DONE, ERROR = "ready", "rows", "done", "error"


def merge_rendered(dst: dict[str, Sequence[TopicRecord]], src: RenderedBatch) -> None:
    """Appends `src`'s records to `dst`, topic by topic, keeping each topic's order; packed
    records (a column-wise snapshot's) stay packed, chained with what precedes them."""
    for topic, records in src.items():
        existing = dst.get(topic)
        if existing is None:
            dst[topic] = records if isinstance(records, PackedRecords) else list(records)
        elif isinstance(existing, RecordChain):
            existing.add(records)
        elif isinstance(existing, list) and not isinstance(records, (PackedRecords,
                                                                      RecordChain)):
            existing.extend(records)
        else:
            dst[topic] = RecordChain((existing, records))


# A rendered batch as it crosses the process boundary: per topic, the key and value prefix
# shared by all its records (the Connect schema JSON, ~90% of a record's bytes) and the rest;
# PackedRecords (the column-wise snapshot's) are already in that form and cross as they are.
# Pickling ~400 bytes instead of ~3 KB per record, as plain lists rather than NamedTuples,
# cuts the transfer cost about tenfold (measured: 11 µs -> 1 µs per record, both sides).
PackedTopic = tuple[str, bytes, bytes, list[bytes], list[bytes], list[int]]
PackedBatch = tuple[list[PackedTopic], RenderedBatch]  # (packed topics, topics left as they are)


def _common_prefix(a: bytes, b: bytes) -> bytes:
    n = min(len(a), len(b))
    lo, hi = 0, n  # binary search on equal prefixes: log2(n) C-level comparisons
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return a[:lo]


def _shared_prefix(docs: list[bytes]) -> bytes:
    prefix = _common_prefix(docs[0], docs[-1]) if len(docs) > 1 else docs[0][:-1]
    if all(d.startswith(prefix) for d in docs):
        return prefix
    return b""


def pack_rendered(batch: RenderedBatch) -> PackedBatch:
    """The batch in its compact transfer form (records with headers or nulls stay as they are;
    PackedRecords are already compact: their buffers are pickled as they are)."""
    packed: list[PackedTopic] = []
    plain: dict[str, Sequence[TopicRecord]] = {}
    for topic, records in batch.items():
        if isinstance(records, PackedRecords):
            plain[topic] = records
            continue
        keys = [r.key for r in records]
        values = [r.value for r in records]
        if not records or any(r.headers for r in records) or None in keys or None in values:
            plain[topic] = records
            continue
        kp = _shared_prefix(keys)  # type: ignore[arg-type]
        vp = _shared_prefix(values)  # type: ignore[arg-type]
        nk, nv = len(kp), len(vp)
        packed.append((topic, kp, vp, [k[nk:] for k in keys],  # type: ignore[index]
                       [v[nv:] for v in values], [r.timestamp for r in records]))  # type: ignore[index]
    return packed, plain


def unpack_rendered(packed: PackedBatch) -> RenderedBatch:
    topics, plain = packed
    out: dict[str, Sequence[TopicRecord]] = dict(plain)
    for topic, kp, vp, keys, values, stamps in topics:
        out[topic] = [
            TopicRecord(kp + k, vp + v, t) for k, v, t in zip(keys, values, stamps, strict=True)
        ]
    return out


class Renderer(Protocol):
    def render_batch(self, records: Sequence[Any]) -> TopicBatch: ...


class ChunkEmitter:
    """Worker side: renders a chunk's records in batches and holds back the chunk's last one."""

    __slots__ = ("_held", "_pending", "_renderer", "_send", "batch_size", "rows")

    def __init__(
        self, renderer: Renderer, batch_size: int, send: Callable[[RenderedBatch, int], None]
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

    @property
    def renderer(self) -> Renderer:
        """The runtime's format, for readers that render rows themselves (column-wise)."""
        return self._renderer

    def add_rendered(self, batch: RenderedBatch, rows: int, last: ChangeRecord) -> None:
        """Rows the reader rendered itself (snapshot=true), which follow the held record,
        then `last`, held in turn.  Only valid while a record is held (the chunk's first row
        goes through `add`)."""
        held = self._held
        assert held is not None, "add_rendered before the chunk's first record"
        self._pending.append(held)
        self.flush()
        self._send(batch, rows)
        self._held = last
        self.rows += rows + 1

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

            def send(batch: RenderedBatch, n: int, task_id: int = task_id) -> None:
                results.put((ROWS, task_id, pack_rendered(batch), n))

            emitter = ChunkEmitter(spec.renderer, spec.batch_size, send)
            reader.read(chunk, emitter)
            results.put((DONE, task_id, emitter.finish(), emitter.rows))
        reader.close()
    except BaseException:
        results.put((ERROR, number, traceback.format_exc(), None))


@contextlib.contextmanager
def without_main_module() -> Iterator[None]:
    """Processes spawned meanwhile do not import the parent's main module again.

    Why: spawn runs the parent's `__main__` (by its module name or its path) in every child
    before unpickling the target, in case the target lives there.  A worker's target is
    `_worker_main` here and its spec holds module-level objects of the package, so the child
    needs nothing from it, while the main module is usually `headwater.cli`, whose imports
    (typer, rich, the configuration catalogue) cost ~0.5 s of CPU per worker.  Only the
    main module's `__spec__` and `__file__`, which spawn reads at `start()`, are hidden, and
    nothing else in the process reads them meanwhile."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    spec = getattr(main, "__spec__", None)
    missing = object()
    path = main.__dict__.pop("__file__", missing)
    main.__spec__ = None
    try:
        yield
    finally:
        main.__spec__ = spec
        if path is not missing:
            main.__file__ = path


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
        with without_main_module():
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
            if msg[0] == ROWS:
                msg = (ROWS, msg[1], unpack_rendered(msg[2]), msg[3])
            elif msg[0] == DONE:
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


class ChunkOfTable(Protocol):
    """A planned chunk: which of the snapshot's tables it reads (an index into `names`)."""

    @property
    def table(self) -> int: ...


def _announce(detail: str) -> None:
    log.info("snapshot step: read %s", detail)


def read_in_workers(
    emit: Callable[[Batch], None],
    stopping: threading.Event,
    spec: WorkerSpec,
    chunks: Sequence[ChunkOfTable],
    names: Sequence[str],
    processes: int,
    metrics: CaptureMetrics,
    on_all_ready: Callable[[], None] | None = None,
    announce: Callable[[str], None] | None = None,
) -> TopicBatch | None:
    """Reads `chunks` of the tables `names` in worker processes; returns the snapshot's `last`.

    Every rendered batch is emitted as it arrives; RowsScanned counts per table and
    RemainingTableCount drops as a table's last chunk is done (said through `announce`).
    `on_all_ready` runs once every worker reported its consistent snapshot open (MySQL
    releases its read lock there); `announce` logs the progress (the connector's snapshot
    step).  Raises `SnapshotStopped` when `stopping` is set."""
    processes = max(1, min(processes, len(chunks)))
    chunks_left = [0] * len(names)
    for chunk in chunks:
        chunks_left[chunk.table] += 1
    scanned = metrics.rows_scanned
    tail = SnapshotTail()
    announced: set[str] = set()
    ready = 0
    started = time.monotonic()
    if announce is None:
        announce = _announce
    announce(f"{len(names)} tables in {len(chunks)} chunks with {processes} worker processes")
    with WorkerPool(spec, processes, chunks, 2 * processes) as pool:
        for kind, task, payload, rows in pool.messages(stopping):
            if kind == READY:
                ready += 1
                if ready == processes and on_all_ready is not None:
                    log.info("snapshot: %d consistent snapshots open in the workers", processes)
                    on_all_ready()
            elif kind == ROWS:
                if names[chunks[task].table] not in announced:
                    announced.add(names[chunks[task].table])
                    metrics.table_started(names[chunks[task].table])
                scanned[names[chunks[task].table]] += rows
                emit(Batch((), rendered=payload))
            elif kind == DONE:
                table = chunks[task].table
                if payload is not None:
                    scanned[names[table]] += 1  # the chunk's held-back tail
                previous = tail.push(payload)
                if previous is not None:
                    emit(Batch((), rendered=previous))
                chunks_left[table] -= 1
                if chunks_left[table] == 0:
                    metrics.table_done(names[table])
                    announce(f"{names[table]} done, {scanned[names[table]]} rows at "
                             f"{time.monotonic() - started:.1f} s")
    return tail.last()
