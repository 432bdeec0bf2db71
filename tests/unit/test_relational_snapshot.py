"""The relational snapshot base: the markers its emitter gives (Debezium 3.x's `first`,
`first_in_data_collection`, `last_in_data_collection`, `last`) however rows arrive, and the
seven steps its `execute` runs and logs in the seed's order."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from headwater.connectors.postgres import snapshot as pg_snapshot
from headwater.connectors.postgres.config import validate_postgres_config
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.parallel import SnapshotStopped
from headwater.engine.queue import Batch
from headwater.engine.source import SourceRunContext
from headwater.model.record import ChangeRecord, SourceContext, SourceEvent
from headwater.model.schema import INT32, Column, ConnectSchema, TableId, TableSchema
from headwater.model.topic import TopicBatch, TopicRecord
from headwater.relational.snapshot import (
    SNAPSHOT_STEPS,
    RelationalSnapshotSource,
    SnapshotEmitter,
)

CONTEXT = SourceContext("postgresql", "p", "db")


def schema(name: str) -> TableSchema:
    return TableSchema(TableId("db", "s", name),
                       (Column("id", 0, "int4", ConnectSchema(INT32, optional=False)),), ("id",))


def emitted(batches: list[Batch], tail: Sequence[SourceEvent]) -> list[tuple[str, Any, str]]:
    """(table, id, marker) of every record in order; a pre-rendered record as (topic, key)."""
    out: list[tuple[str, Any, str]] = []
    for batch in [*batches, Batch(tail)]:
        for r in batch.records:
            assert isinstance(r, ChangeRecord)
            assert r.after is not None
            out.append((r.table.id.table, r.after[0], r.snapshot.value))
        for topic, records in (batch.rendered or {}).items():
            out.extend((topic, rec.key, "rendered") for rec in records)
    return out


TABLES = {"a": [1, 2, 3], "b": [], "c": [4], "d": [5, 6]}
WANT = [("a", 1, "first"), ("a", 2, "true"), ("a", 3, "last_in_data_collection"),
        ("c", 4, "last_in_data_collection"), ("d", 5, "first_in_data_collection"),
        ("d", 6, "last")]


def run(tables: dict[str, list[int]], feed: str, batch_size: int = 2
        ) -> tuple[list[Batch], list[ChangeRecord], dict[str, int]]:
    batches: list[Batch] = []
    scanned: dict[str, int] = {}
    emitter = SnapshotEmitter(SourceRunContext(batches.append, threading.Event()), CONTEXT,
                              "pos", batch_size, scanned)
    for name, ids in tables.items():
        emitter.begin_table(name, schema(name))
        if feed == "one by one":
            for i in ids:
                emitter.add((i,))
        else:
            emitter.add_many((i,) for i in ids)
        emitter.end_table()
    return batches, emitter.finish(), scanned


@pytest.mark.parametrize("feed", ["one by one", "fetched together"])
def test_markers_first_and_last_of_snapshot_and_of_each_table(feed: str) -> None:
    batches, tail, scanned = run(TABLES, feed)
    assert emitted(batches, tail) == WANT
    assert scanned == {"a": 3, "b": 0, "c": 1, "d": 2}
    assert all(len(b.records) >= 2 for b in batches)  # batch_size records at least per batch
    assert all(isinstance(r, ChangeRecord) and r.position == "pos" for b in batches
               for r in b.records)


def test_a_one_row_first_table_is_first_and_a_one_row_snapshot_is_last() -> None:
    batches, tail, _ = run({"a": [1], "b": [2]}, "one by one")
    assert emitted(batches, tail) == [("a", 1, "first"), ("b", 2, "last")]
    batches, tail, _ = run({"a": [], "b": [7]}, "fetched together")
    assert emitted(batches, tail) == [("b", 7, "last")]
    assert run({"a": []}, "one by one")[1] == []


@pytest.mark.parametrize("feed", ["one by one", "fetched together"])
def test_an_empty_first_table_leaves_the_snapshot_without_first_and_an_empty_last_table_moves_last(
        feed: str) -> None:
    """Debezium's RelationalSnapshotChangeEventSource: `first` is the first row of the first
    table only (an empty first table: no `first` at all); `last` is the snapshot's last record
    even when the last table is empty (its EventDispatcher marks the buffered record)."""
    batches, tail, _ = run({"a": [], "b": [1, 2], "c": [3], "d": []}, feed)
    assert emitted(batches, tail) == [("b", 1, "first_in_data_collection"),
                                      ("b", 2, "last_in_data_collection"), ("c", 3, "last")]


def test_rendered_rows_follow_the_held_record_and_the_next_row_is_held() -> None:
    batches: list[Batch] = []
    scanned: dict[str, int] = {}
    emitter = SnapshotEmitter(SourceRunContext(batches.append, threading.Event()), CONTEXT,
                              "pos", 100, scanned)
    emitter.begin_table("a", schema("a"))
    emitter.add((1,))
    rendered: TopicBatch = {"p.s.a": [TopicRecord(b"2", b"", 0), TopicRecord(b"3", b"", 0)]}
    emitter.add_rendered(rendered, 2, (4,))
    emitter.end_table()
    assert scanned == {"a": 4}
    assert emitted(batches, emitter.finish()) == [
        ("a", 1, "first"), ("p.s.a", b"2", "rendered"), ("p.s.a", b"3", "rendered"),
        ("a", 4, "last")]


def test_a_stop_request_ends_the_read_at_the_next_batch() -> None:
    stopping = threading.Event()
    batches: list[Batch] = []
    emitter = SnapshotEmitter(SourceRunContext(batches.append, stopping), CONTEXT, "pos", 2, {})
    emitter.begin_table("a", schema("a"))
    stopping.set()
    emitter.add((1,))
    emitter.add((2,))
    with pytest.raises(SnapshotStopped):
        emitter.add((3,))
    assert len(batches) == 1  # what was read is written: the restart supersedes it


class FakeSnapshot(RelationalSnapshotSource[str]):
    """The steps' database part as a script, recording what the base asked for."""

    log = logging.getLogger("headwater.test.snapshot")

    def __init__(self, rows: dict[str, list[int]], max_threads: int = 1) -> None:
        self.rows = rows
        self.metrics = CaptureMetrics()
        self.context = CONTEXT
        self.batch_size = 10
        self.max_threads = max_threads
        self.calls: list[str] = []

    def begin(self, ctx: SourceRunContext) -> None:
        self.calls.append("begin")

    def captured_tables(self) -> list[str]:
        return list(self.rows)

    def table_name(self, table: str) -> str:
        return f"s.{table}"

    def schema_of(self, table: str) -> TableSchema:
        return schema(table)

    def lock(self, tables: list[str]) -> str:
        self.calls.append("lock")
        return "locked"

    def read_position(self) -> tuple[Any, str]:
        return "pos", "at pos"

    def capture_schema(self, tables: list[str], position: Any) -> tuple[list[SourceEvent], str]:
        return [], "described"

    def release(self) -> str:
        self.calls.append("release")
        return "released"

    def estimates(self, tables: list[str], parallel: bool) -> list[int]:
        return [len(self.rows[t]) for t in tables]

    def read_table(self, table: str, emitter: SnapshotEmitter) -> None:
        self.calls.append(f"read {table}")
        emitter.add_many((i,) for i in self.rows[table])

    def read_in_workers(self, ctx: SourceRunContext, tables: list[str],
                        release: Any) -> TopicBatch | None:
        self.calls.append("workers")
        release()  # every worker's snapshot is open
        self.calls.append("workers done")
        return {"p.s.a": [TopicRecord(b"last", b"", 0)]}

    def commit(self) -> dict[str, Any]:
        self.calls.append("commit")
        return {"snapshot_completed": True}

    def close(self) -> None:
        self.calls.append("close")


def test_the_snapshot_waits_snapshot_delay_ms_before_it_begins() -> None:
    source = FakeSnapshot({"a": [1]})
    source.snapshot_delay_ms = 300
    began: list[float] = []
    source.begin = lambda ctx: began.append(time.monotonic())  # type: ignore[method-assign]
    started = time.monotonic()
    assert source.execute(SourceRunContext([].append, threading.Event(), object())) is not None
    assert began[0] - started >= 0.3


def test_a_stop_request_during_snapshot_delay_ms_ends_the_snapshot_at_once() -> None:
    source = FakeSnapshot({"a": [1]})
    source.snapshot_delay_ms = 60_000
    stopping = threading.Event()
    threading.Timer(0.2, stopping.set).start()
    started = time.monotonic()
    batches: list[Batch] = []
    assert source.execute(SourceRunContext(batches.append, stopping, object())) is None
    assert time.monotonic() - started < 10
    assert source.calls == ["close"] and batches == []  # nothing read, no offset


def test_postgres_snapshot_honours_snapshot_delay_ms(monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL's snapshot takes the delay from its configuration: it connects no earlier
    than `snapshot.delay.ms` after it starts, and not at all when stopped during it."""
    cfg = validate_postgres_config({
        "topic.prefix": "p", "database.hostname": "127.0.0.1", "database.user": "u",
        "database.dbname": "d", "snapshot.delay.ms": "300"})[0]
    connected: list[float] = []

    class Refused(Exception):
        pass

    def connect(*args: Any, **kwargs: Any) -> Any:
        connected.append(time.monotonic())
        raise Refused

    monkeypatch.setattr(pg_snapshot, "snapshot_connection", connect)

    def source() -> pg_snapshot.PostgresSnapshotSource:
        return pg_snapshot.PostgresSnapshotSource(
            dsn={}, context=CONTEXT, snapshot_name="s", consistent_lsn=0, tables=[],
            fetch_size=10, lock_timeout_ms=1000, metrics=CaptureMetrics(), config=cfg)

    started = time.monotonic()
    with pytest.raises(Refused):
        source().execute(SourceRunContext([].append, threading.Event()))
    assert connected[0] - started >= 0.3
    stopping = threading.Event()
    stopping.set()
    assert source().execute(SourceRunContext([].append, stopping)) is None
    assert len(connected) == 1


def steps_logged(caplog: pytest.LogCaptureFixture) -> list[int]:
    numbers = []
    for r in caplog.records:
        message = r.getMessage()
        if message.startswith("snapshot step "):
            number = int(message.split()[2].split("/")[0])
            assert message.startswith(f"snapshot step {number}/7: {SNAPSHOT_STEPS[number - 1]}")
            numbers.append(number)
    return numbers


def test_serial_snapshot_runs_the_seven_steps_in_order(caplog: pytest.LogCaptureFixture) -> None:
    source = FakeSnapshot({"a": [1, 2], "b": [3]})
    batches: list[Batch] = []
    with caplog.at_level(logging.INFO, logger="headwater.test.snapshot"):
        offset = source.execute(SourceRunContext(batches.append, threading.Event(), object()))
    assert offset == {"snapshot_completed": True}
    assert steps_logged(caplog) == [1, 2, 3, 4, 5, 6, 6, 6, 6, 7]
    assert source.calls == ["begin", "lock", "release", "read a", "read b", "commit", "close"]
    assert batches[-1].offset == offset
    assert emitted(batches[:-1], batches[-1].records)[-1] == ("b", 3, "last")
    assert source.metrics.rows_scanned == {"s.a": 2, "s.b": 1}
    assert source.metrics.rows_estimated == {"s.a": 2, "s.b": 1}
    assert source.metrics.remaining_table_count == 0


def test_parallel_snapshot_releases_once_and_ends_with_the_workers_last() -> None:
    source = FakeSnapshot({"a": [1]}, max_threads=2)
    batches: list[Batch] = []
    offset = source.execute(SourceRunContext(batches.append, threading.Event(), object()))
    assert source.calls == ["begin", "lock", "workers", "release", "workers done", "commit",
                            "close"]
    assert batches[-1].offset == offset and batches[-1].rendered == {
        "p.s.a": [TopicRecord(b"last", b"", 0)]}
    # Without a renderer the workers cannot render: the tables are read in this process.
    source = FakeSnapshot({"a": [1]}, max_threads=2)
    source.execute(SourceRunContext(batches.append, threading.Event()))
    assert "read a" in source.calls and "workers" not in source.calls


def test_a_stopped_snapshot_returns_no_offset_and_closes() -> None:
    stopping = threading.Event()
    stopping.set()
    source = FakeSnapshot({"a": [1]})
    assert source.execute(SourceRunContext(lambda b: None, stopping)) is None
    assert source.calls[-1] == "close" and "commit" not in source.calls
