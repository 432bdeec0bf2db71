"""The initial snapshot (MongoDbSnapshotChangeEventSource): every captured collection read in
full, `snapshot.max.threads` collections at a time, as READ events.

The hand-over to streaming: before the first document is read, a change stream is opened and
its resume token taken (the post-batch token of its empty first batch: the point the stream is
at).  Streaming resumes after that token, so every write committed after it reaches the topic,
including those the snapshot already saw: a document changed while its collection is being
read may appear as a READ of its new state and then as the change event itself (Debezium's
MongoDB snapshot is no consistent read either and behaves the same).  Nothing committed after
the token can be lost, since the stream replays from there.

Source markers as Debezium 3.x writes them for MongoDB: `snapshot` is "true" on every read and
"last" on the very last (its SourceInfo ignores the first/first_in_data_collection markers of
the relational snapshots); `ord` is -1 (the snapshot's position is a token without an event)
and `ts_ms` the time of the read: the time the cursor batch holding the document was asked for
(`batch_read_times`).

Why the batch's request time and not the time the document is taken from the cursor: the
pipeline ranks a read among the stream's events by `ts_ms` (connectors/mongodb/ordering.py),
so a read must never claim to be newer than it is.  One getMore hands over up to 16 MB of
documents, read by the server at once; turning them into events takes seconds on a loaded
machine, and a document deleted or changed meanwhile got a read stamped after the change: the
pipeline put the stale read last (the fault harness found 1 phantom and 3 stale rows in a
5 000-document snapshot).  A stamp no later than the server's read is safe: stream events
after it are applied after the read, and the stream holds every change after the snapshot's
start.  What remains is a write whose oplog `wallTime` precedes the request but which commits
after the server took the batch's storage snapshot (microseconds, unless mongod's thread is
descheduled between the two).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from bson import json_util

from headwater.connectors.mongodb import connection
from headwater.connectors.mongodb.position import MongoPosition, stream_offset, token_position
from headwater.connectors.mongodb.rawdoc import FAST_RAW_OPTIONS
from headwater.engine.queue import Batch
from headwater.engine.source import SourceRunContext
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceEvent

if TYPE_CHECKING:
    from headwater.connectors.mongodb.connector import MongoDbConnector

log = logging.getLogger("headwater.connectors.mongodb")

SYSTEM_DATABASES = frozenset({"admin", "config", "local"})
_DONE = object()


class SnapshotStopped(Exception):
    """The runtime is stopping: the snapshot starts over on the next run."""


class MongoDbSnapshotSource:
    def __init__(self, connector: MongoDbConnector, *, with_data: bool = True) -> None:
        self.connector = connector
        self.cfg = connector.config
        self.metrics = connector.metrics
        self.with_data = with_data

    def execute(self, ctx: SourceRunContext) -> dict[str, Any] | None:
        cfg = self.cfg
        if cfg.snapshot_delay_ms and ctx.stopping.wait(cfg.snapshot_delay_ms / 1000):
            return None
        client = connection.client(cfg)
        try:
            token = self.connector.current_token(client)
            point = token_position(token)
            log.info("snapshot step: change stream position %s:%s (resume token %s)",
                     point.sec, point.ord, point.resume_token)
            offset = stream_offset(point)
            if not self.with_data:
                return offset
            collections = self.connector.captured_collections(client)
            log.info("snapshot step: %d collections captured: %s", len(collections),
                     ", ".join(f"{d}.{c}" for d, c in collections) or "none")
            m = self.metrics
            m.total_table_count = m.remaining_table_count = len(collections)
            position = MongoPosition(-1, -1, point.resume_token)
            last = self._read(ctx, client, collections, position)
            if last is None:
                return None
            ctx.emit(Batch(last, offset))
            return offset
        finally:
            client.close()

    def _read(self, ctx: SourceRunContext, client: Any, collections: list[tuple[str, str]],
              position: MongoPosition) -> list[SourceEvent] | None:
        """Reads in worker threads, emits from this one; returns the held-back last batch
        (its last record marked `last`), None if stopped."""
        threads = max(1, min(self.cfg.snapshot_max_threads, len(collections)))
        todo: queue.Queue[tuple[str, str]] = queue.Queue()
        for item in collections:
            todo.put(item)
        out: queue.Queue[Any] = queue.Queue(maxsize=threads * 4)
        stop = threading.Event()
        workers = [threading.Thread(target=self._worker, args=(client, todo, out, stop, position),
                                    name=f"headwater-mongo-snapshot-{i}", daemon=True)
                   for i in range(threads)]
        for w in workers:
            w.start()
        pending: list[SourceEvent] = []
        running = threads
        try:
            while running:
                try:
                    item = out.get(timeout=0.2)
                except queue.Empty:
                    if ctx.stopping.is_set():
                        return None
                    continue
                if item is _DONE:
                    running -= 1
                    continue
                if isinstance(item, BaseException):
                    raise item
                if pending:
                    ctx.emit(Batch(pending))
                pending = item
                if ctx.stopping.is_set():
                    return None
        finally:
            stop.set()
            for w in workers:
                w.join(timeout=30)
        if pending:
            last = pending[-1]
            assert isinstance(last, ChangeRecord)
            pending[-1] = last._replace(snapshot=SnapshotMarker.LAST)
        return pending

    def _worker(self, client: Any, todo: queue.Queue[tuple[str, str]], out: queue.Queue[Any],
                stop: threading.Event, position: MongoPosition) -> None:
        try:
            while not stop.is_set():
                try:
                    database, collection = todo.get_nowait()
                except queue.Empty:
                    break
                for batch in self._collection(client, database, collection, position):
                    while not stop.is_set():
                        try:
                            out.put(batch, timeout=0.2)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
        except BaseException as exc:
            out.put(exc)
        finally:
            out.put(_DONE)

    def _collection(self, client: Any, database: str, collection: str,
                    position: MongoPosition) -> Iterator[list[SourceEvent]]:
        cfg = self.cfg
        codec = self.connector.codec(database, collection)
        name = f"{database}.{collection}"
        query_text = cfg.snapshot_collection_filter_overrides.get(name)
        query = json_util.loads(query_text) if query_text else {}
        started = time.monotonic()
        log.info("snapshot step: reading %s%s", name, f" where {query_text}" if query else "")
        self.metrics.table_started(name)
        raw = client[database].get_collection(collection, codec_options=FAST_RAW_OPTIONS)
        cursor = raw.find(query)
        if cfg.snapshot_fetch_size:
            cursor = cursor.batch_size(cfg.snapshot_fetch_size)
        context, schema, read = self.connector.context, codec.schema, codec.read
        true, op = SnapshotMarker.TRUE, Op.READ
        size = cfg.max_batch_size
        rows = 0
        batch: list[SourceEvent] = []
        with cursor:
            for doc, now in batch_read_times(cursor, cursor_retrieved(cursor)):
                batch.append(ChangeRecord(context, schema, op, None, read(doc), now, now, true,
                                          position))
                if len(batch) >= size:
                    rows += len(batch)
                    self.metrics.rows_scanned[name] = rows
                    yield batch
                    batch = []
        if batch:
            rows += len(batch)
            yield batch
        self.metrics.rows_scanned[name] = rows
        self.metrics.table_done(name)
        log.info("snapshot step: %s done, %d documents in %.1f s", name, rows,
                 time.monotonic() - started)


def cursor_retrieved(cursor: Any) -> Callable[[], int]:
    """How many documents a pymongo cursor has received from the server so far."""
    return lambda: int(cursor.retrieved)


def batch_read_times(docs: Iterable[Any], retrieved: Callable[[], int],
                     clock: Callable[[], float] = time.time) -> Iterator[tuple[Any, int]]:
    """Each document with the time (ms) its server batch was asked for: a `next()` that made
    `retrieved()` grow fetched a batch, so its documents were read after the time taken just
    before that call (see the module docstring)."""
    it = iter(docs)
    seen = retrieved()
    asked = int(clock() * 1000)
    while True:
        before = int(clock() * 1000)
        try:
            doc = next(it)
        except StopIteration:
            return
        count = retrieved()
        if count != seen:
            seen, asked = count, before
        yield doc, asked
