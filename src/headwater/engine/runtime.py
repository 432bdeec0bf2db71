"""The capture runtime: runs a connector's sources and writes what they emit, durably, in order.

Two threads.  The *reader* thread runs the coordinator: the snapshot source, then the
streaming source, each putting batches on the bounded queue.  The *writer* (the calling
thread) drains the queue, renders each record with the output format, appends to the topic
log (which fsyncs before returning), stores the offset, and only then acknowledges the
position to the source.  A writer whose appends are durable later (DeferredAckWriter: the
files destination's open files, Kafka's asynchronous produce) gets the offset and
acknowledgement to run once they are; the newest offset it released is stored once.

That order is the whole durability contract: a database position is
confirmed only after the events before it are durable, and an offset is never stored ahead of
the topic log.  A crash anywhere re-delivers from the last stored offset (at-least-once).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from headwater.engine.metrics import CaptureMetrics
from headwater.engine.offsets import OffsetStore
from headwater.engine.parallel import merge_rendered
from headwater.engine.queue import Batch, ChangeEventQueue, QueueClosed
from headwater.engine.retry import RetryBudget
from headwater.engine.source import (
    Connector,
    RetriableError,
    SnapshotSource,
    SourceRunContext,
    StreamingSource,
    StreamState,
)
from headwater.engine.supersede import SnapshotRestarts, Supersede
from headwater.log_context import connector_context
from headwater.model.record import SourceEvent
from headwater.model.topic import RenderedBatch, TopicBatch, TopicRecord

log = logging.getLogger("headwater.engine.runtime")

# How long a stop waits for the reader thread to finish once the queue is drained (Kafka
# Connect abandons a task that has not stopped after `task.shutdown.graceful.timeout.ms`,
# 5 s).  A reader can be inside a call that does not look at the stop request: a numba
# kernel compiling (a minute and more on a loaded machine), a database or broker call
# waiting out its timeout.  What it has not handed over is not written, so no offset covers
# it: the next start reads it again.
STOP_GRACE_S = 10.0


class TopicWriter(Protocol):
    def append(self, batch: RenderedBatch) -> None:
        """Append and make durable before returning."""
        ...

    def maintain(self) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class DeferredAckWriter(Protocol):
    """A writer whose `append` is not durable on return (files still open, e.g. the file
    destination): the offset and acknowledgement of a batch wait for `when_durable`, which
    runs them once everything appended so far is durable (at once, or at a later append,
    `maintain` or `close`, always on the writer thread)."""

    def when_durable(self, callback: Callable[[], None]) -> None: ...


class RecordRenderer(Protocol):
    def render_batch(self, records: Sequence[SourceEvent]) -> TopicBatch: ...


class CaptureRuntime:
    def __init__(
        self,
        connector: Connector,
        renderer: RecordRenderer,
        writer: TopicWriter,
        offsets: OffsetStore,
        *,
        max_queue_size: int,
        max_batch_size: int,
        poll_interval_ms: int,
        metrics: CaptureMetrics | None = None,
        max_retries: int = -1,
        retry_wait_ms: int = 10_000,
        restarts: SnapshotRestarts | None = None,
    ) -> None:
        # With `restarts`, a data snapshot that follows an interrupted one supersedes its
        # partial output (engine/supersede.py); without, the old READs stay (Debezium's way).
        self.restarts = restarts
        self._supersede: Supersede | None = None
        self.max_retries = max_retries
        self.retry_wait_s = retry_wait_ms / 1000.0
        self.connector = connector
        self.renderer = renderer
        self.writer = writer
        self.offsets = offsets
        self.queue = ChangeEventQueue(max_queue_size, max_batch_size)
        self.poll_interval_s = poll_interval_ms / 1000.0
        self.stopping = threading.Event()
        self.stop_grace_s = STOP_GRACE_S
        self.metrics = metrics or CaptureMetrics()
        self.metrics.bind_queue(self.queue)
        if self.metrics.notifier is not None:
            self.metrics.notifier.sink = self._notification_sink
        self.state = StreamState.NOT_STARTED
        self._reader_error: BaseException | None = None
        self._reader_done = threading.Event()
        self._streaming: StreamingSource | None = None
        self._connected_at: float | None = None
        # True while the connector is connecting (`connector.start`): nothing is emitted yet,
        # so a stop need not wait for a connect that may block for a server-selection or
        # connect timeout (MongoDB's 30 s, a TCP connect to a dead host).
        self._connecting = False
        # (offset, ack, streaming source, `stored` events) of batches a DeferredAckWriter
        # found durable, to store and acknowledge on the writer thread (`_store_released`).
        self._released: list[tuple[dict[str, Any] | None, Any, StreamingSource | None,
                                   list[threading.Event]]] = []

    # -- control ---------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask for a graceful stop: the reader stops, the writer flushes what is queued."""
        if not self.stopping.is_set():
            log.info("stop requested: draining the queue")
            self.stopping.set()

    def _set_state(self, state: StreamState) -> None:
        if state is not self.state:
            log.info("stream state %s -> %s", self.state.value, state.value)
            self.state = state

    # -- reader thread ---------------------------------------------------------------------
    def _run_reader(self, offset: dict[str, Any] | None) -> None:
        # errors.max.retries counts consecutive failures: a healthy session (it moved the
        # stored offset, or stayed connected for the longest back-off) resets the count and
        # the back-off (engine/retry.py says why and what Debezium does).
        budget = RetryBudget(self.max_retries, self.retry_wait_s)
        try:
            while True:
                self._connected_at = None
                try:
                    self._run_sources(offset)
                    return
                except RetriableError as exc:
                    connected_s = (None if self._connected_at is None
                                   else time.monotonic() - self._connected_at)
                    self.metrics.connected = False
                    self._set_state(StreamState.STARTING)
                    # Resume from what is durable: let the writer finish what was emitted.
                    self.queue.wait_written(self.stopping)
                    resumed = self.offsets.load()
                    delay = exc.reconnect_after_s  # the connector's keep-alive, if any
                    if delay is not None:
                        log.warning("%s; reconnecting in %.1fs", exc, delay)
                    else:
                        delay = budget.failure(progressed=resumed != offset,
                                               connected_s=connected_s)
                        if delay is None:
                            raise RuntimeError(
                                f"giving up after {self.max_retries} consecutive retries "
                                f"(errors.max.retries): {exc}") from exc
                        log.warning("retriable error: %s; reconnecting in %.1fs (attempt %d)",
                                    exc, delay, budget.consecutive)
                    if self.stopping.wait(delay):
                        return
                    offset = resumed
        except QueueClosed:
            pass
        except BaseException as exc:
            self._reader_error = exc
            log.error("source failed: %s", exc)
        finally:
            self._reader_done.set()

    def _run_sources(self, offset: dict[str, Any] | None) -> None:
        ctx = SourceRunContext(self._emit, self.stopping, self.renderer)
        self._connecting = True
        try:
            plan = self.connector.start(offset)
        finally:
            self._connecting = False
        self._connected_at = time.monotonic()
        self._set_state(StreamState.RUNNING)
        if plan.snapshot is None and self.metrics.notifier is not None:
            # Debezium (AbstractSnapshotChangeEventSource): neither schema nor data snapshot
            self.metrics.notifier.skipped()
        if plan.snapshot is not None and not self.stopping.is_set():
            connector_context.set("snapshot")
            started = time.monotonic()
            self.metrics.snapshot_started_monotonic = started
            self.metrics.snapshot_running = True
            notifier = self.metrics.notifier if plan.data_snapshot else None
            if notifier is not None:
                notifier.started()
            try:
                if plan.data_snapshot and self.restarts is not None:
                    result = self._superseding_snapshot(plan.snapshot, ctx, offset)
                else:
                    result = plan.snapshot.execute(ctx)
            except BaseException:
                if notifier is not None:
                    notifier.aborted()
                raise
            finally:
                self.metrics.snapshot_running = False
                self._supersede = None
            if result is None:
                self.metrics.snapshot_aborted = True
                if notifier is not None:
                    notifier.aborted()
                return
            if notifier is not None:
                notifier.completed()
            self.metrics.snapshot_completed = True
            self.metrics.snapshot_duration_s = time.monotonic() - started
            offset = result
        if plan.streaming is not None and not self.stopping.is_set():
            connector_context.set("streaming")
            self._streaming = plan.streaming
            plan.streaming.execute(ctx, offset)

    def _notification_sink(self, topic: str, record: TopicRecord) -> None:
        """Sink channel records go through the queue, in order with the snapshot's events."""
        self.queue.put(Batch((), rendered={topic: [record]}, counted=False))

    def _emit(self, batch: Batch) -> None:
        self.queue.put(batch)

    def _put_stored(self, batch: Batch) -> bool:
        """Puts `batch` and waits until it is durable and its offset stored (False: the
        capture stops first)."""
        stored = threading.Event()
        self.queue.put(batch._replace(stored=stored))
        while not stored.wait(0.05):
            if self.stopping.is_set() or self.queue.closed:
                return False
        return not self.stopping.is_set()

    def _superseding_snapshot(self, snapshot: SnapshotSource, ctx: SourceRunContext,
                              offset: dict[str, Any] | None) -> dict[str, Any] | None:
        """Runs a data snapshot so that a restart of it leaves the topics exact.

        `snapshot_started` (the topics' end offsets) is durable in the offsets before the
        first READ, unless an earlier attempt left it there.  After such an attempt, the keys
        it read are loaded, the new snapshot's keys are marked as the writer writes them, and
        once they are all durable the deletes for the rest are written; only then is the
        snapshot's completing offset stored (engine/supersede.py)."""
        assert self.restarts is not None
        # Everything written before is durable (an asynchronous writer's too), so the ends
        # taken next are past it; the mark is stored before the first READ is written.
        if not self._put_stored(Batch([])):
            return None
        ends = self.restarts.ends(self.stopping)
        if self.stopping.is_set():
            return None
        aborted = self.restarts.started(offset)
        # (an earlier attempt's mark is kept even when empty: it began before any topic existed)
        mark = ends if aborted is None else aborted
        if not self._put_stored(Batch([], offset=self.restarts.marked(offset, mark))):
            return None
        supersede = None
        if aborted is not None:
            supersede = self.restarts.supersede(aborted, ends)
            supersede = supersede.open() if not supersede.empty else None
        if supersede is None:
            return snapshot.execute(ctx)
        held: list[dict[str, Any]] = []

        def emit(batch: Batch) -> None:
            # The completing offset waits for the deletes.
            if batch.offset is not None:
                held.append(batch.offset)
                batch = batch._replace(offset=None)
            self.queue.put(batch)

        self._supersede = supersede
        result = snapshot.execute(SourceRunContext(emit, ctx.stopping, ctx.renderer))
        self.queue.wait_written(self.stopping)
        self._supersede = None
        if result is None or self.stopping.is_set():
            return None
        for deletes in supersede.deletes():
            self.queue.put(Batch([], rendered=deletes))
        self.queue.put(Batch([], offset=held[-1] if held else result))
        return result

    # -- writer (calling thread) -----------------------------------------------------------
    def run(self) -> None:
        """Run until stopped or until the sources finish (e.g. snapshot.mode=initial_only)."""
        self._set_state(StreamState.STARTING)
        offset = self.offsets.load()
        log.info("starting from offset %s", offset if offset is not None else "(none)")
        reader = threading.Thread(
            target=self._run_reader, args=(offset,), name="headwater-reader", daemon=True
        )
        reader.start()
        stop_seen: float | None = None  # when the writer first saw the stop request
        abandoned = False
        try:
            while True:
                batches = self.queue.drain(self.poll_interval_s)
                if batches:
                    self._write(batches)
                    self.queue.task_done(sum(b.size for b in batches))
                    continue
                self.writer.maintain()
                self._store_released()
                if self._reader_done.is_set() and self.queue.size == 0:
                    break
                if self.stopping.is_set() and self._reader_done.is_set():
                    break
                if self.stopping.is_set() and stop_seen is None:
                    stop_seen = time.monotonic()
                if stop_seen is not None and self.queue.size == 0 and \
                        time.monotonic() - stop_seen > self.stop_grace_s:
                    log.warning("stopping without the reader thread, still busy %.0fs after "
                                "the stop request; what it had not handed over is read again "
                                "at the next start", time.monotonic() - stop_seen)
                    abandoned = True
                    self.queue.close()  # a later put of the reader raises QueueClosed
                    break
                if self.stopping.is_set() and self._connecting and self.queue.size == 0:
                    # Stopped while connecting: nothing was emitted, nothing to drain; the
                    # reader thread (a daemon) finds the queue closed if its connect returns.
                    log.info("stopped while connecting to the source")
                    self.queue.close()
                    break
            if self.stopping.is_set():
                self._set_state(StreamState.DRAINING)
        except BaseException:
            self._set_state(StreamState.FAILED)
            self.stopping.set()
            self.queue.close()
            raise
        finally:
            self.stopping.set()
            reader.join(timeout=1 if self._connecting or abandoned else 30)
            # (an abandoned reader failing later, e.g. on the connections closed below, is
            # not this run's failure)
            reader_error = self._reader_error
            self.writer.close()
            self._store_released()
            self.connector.close()
        if reader_error is not None:
            self._set_state(StreamState.FAILED)
            raise reader_error
        self._set_state(StreamState.PAUSED if self.stopping.is_set() else StreamState.NOT_STARTED)

    def _render_into(self, out: dict[str, Sequence[TopicRecord]],
                     records: list[SourceEvent]) -> None:
        if records:
            merge_rendered(out, self.renderer.render_batch(records))
            self.metrics.record_events(records)

    def _write(self, batches: list[Batch]) -> None:
        records: list[SourceEvent] = []
        offset: dict[str, Any] | None = None
        ack: Any = None
        out: dict[str, Sequence[TopicRecord]] = {}
        stored: list[threading.Event] = []
        for b in batches:
            if b.stored is not None:
                stored.append(b.stored)
            records.extend(b.records)
            if b.rendered is not None:
                # Pre-rendered records follow what is already collected, in topic order.
                self._render_into(out, records)
                records = []
                merge_rendered(out, b.rendered)
                if b.counted:
                    self.metrics.record_rendered(b.rendered)
            if b.offset is not None:
                offset = b.offset
            if b.ack is not None:
                ack = b.ack
        self._render_into(out, records)
        if out:
            supersede = self._supersede
            if supersede is not None:
                supersede.observe(out)
            self.writer.append(out)
        if offset is None and (ack is None or self._streaming is None) and not stored:
            return
        streaming = self._streaming

        if isinstance(self.writer, DeferredAckWriter):
            self.writer.when_durable(
                lambda: self._released.append((offset, ack, streaming, stored)))
            self._store_released()
            return
        if offset is not None:
            self.offsets.save(offset)
        for event in stored:
            event.set()
        if ack is not None and streaming is not None:
            streaming.acknowledge(ack)

    def _store_released(self) -> None:
        """Stores what a DeferredAckWriter released: the newest offset once (an asynchronous
        writer releases several batches at a time; each save is a synchronous write, a round
        trip to the brokers with offset.storage.topic), then every acknowledgement in order."""
        released, self._released = self._released, []
        newest = [offset for offset, _ack, _streaming, _stored in released if offset is not None]
        if newest:
            self.offsets.save(newest[-1])
        for _offset, ack, streaming, stored in released:
            for event in stored:
                event.set()
            if ack is not None and streaming is not None:
                streaming.acknowledge(ack)

