"""The incremental snapshot controller sends Debezium's IncrementalSnapshotNotificationService
notifications (aggregate type "Incremental Snapshot", the execute-snapshot signal's id on every
one) at the points Debezium's AbstractIncrementalSnapshotChangeEventSource sends them; a fake
chunk source stands for the database (the real servers: tests/conformance)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import orjson

from headwater.engine.incremental import (
    ChunkRead,
    IncrementalSnapshotController,
    IncrementalSnapshotError,
    RawKey,
    Row,
    SnapshotTable,
)
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.notifications import Notifier, key_text
from headwater.engine.signals import Signal
from headwater.model.record import ChangeRecord, SourceContext
from headwater.model.schema import INT32, Column, ConnectSchema, TableId, TableSchema
from headwater.model.topic import TopicRecord

CTX = SourceContext("test", "srv", "0")
SCHEMA = TableSchema(TableId("db", "s", "t"), (Column("id", 0, "int", ConnectSchema(INT32)),),
                     ("id",))


class FakeTables:
    """Tables of integer keys 1..n, read-only (the window closes at `read.high`)."""

    read_only = True

    def __init__(self, sizes: dict[str, int]) -> None:
        self.sizes = sizes

    def resolve(self, table: SnapshotTable) -> SnapshotTable:
        return table

    def max_key(self, table: SnapshotTable) -> RawKey | None:
        n = self.sizes[table.name]
        return [n] if n else None

    def read_chunk(self, table: SnapshotTable, after: RawKey | None, maximum: RawKey,
                   limit: int) -> ChunkRead:
        start = (after or [0])[0] + 1
        keys = list(range(start, min(maximum[0], start + limit - 1) + 1))
        rows: list[tuple[Hashable, Row]] = [(k, (k,)) for k in keys]
        return ChunkRead(SCHEMA, rows, [keys[-1]] if keys else None, high=1)

    def write_watermark(self, chunk_id: str, opening: bool) -> None:
        raise AssertionError("read-only")

    def blocking_snapshot(self, tables: Sequence[SnapshotTable],
                          emit: Callable[[list[ChangeRecord]], None]) -> None:
        raise AssertionError("not used")


def run(sizes: dict[str, int], signals: Sequence[tuple[str, str, dict[str, Any] | None]],
        chunks: int, chunk_size: int = 10) -> tuple[list[dict[str, Any]], list[TopicRecord]]:
    """Sends `signals` (id, type, data), then lets `chunks` chunks run; returns the notifications
    kept for the rest channel and the sink channel's records."""
    sunk: list[TopicRecord] = []
    notifier = Notifier("srv", ("sink", "rest"), "srv.notes", sink=lambda _t, r: sunk.append(r))
    ctl = IncrementalSnapshotController(FakeTables(sizes), CTX, chunk_size=chunk_size,
                                        metrics=CaptureMetrics(notifier=notifier))
    for sid, kind, data in signals:
        ctl.signal(Signal(sid, kind, None if data is None else orjson.dumps(data).decode()))
    ctl.boundary(lambda _r: None, lambda: None)
    for _ in range(chunks):
        ctl.close(1)
        ctl.boundary(lambda _r: None, lambda: None)
    return list(notifier.recent), sunk


def kinds(notes: list[dict[str, Any]]) -> list[str]:
    return [n["type"] for n in notes]


def test_a_snapshot_from_start_to_completion() -> None:
    notes, sunk = run({"s.a": 25, "s.e": 0},
                      [("sig-1", "execute-snapshot", {"data-collections": ["s.a", "s.e"]})], 5)
    assert kinds(notes) == ["STARTED", "IN_PROGRESS", "IN_PROGRESS", "IN_PROGRESS",
                            "TABLE_SCAN_COMPLETED", "TABLE_SCAN_COMPLETED", "COMPLETED"]
    # Debezium's correlation id: the execute-snapshot signal's id on every notification
    assert {n["id"] for n in notes} == {"sig-1"}
    assert {n["aggregateType"] for n in notes} == {"Incremental Snapshot"}
    assert notes[0]["additionalData"] == {"connector_name": "srv", "data_collections": "s.a,s.e"}
    assert [n["additionalData"] for n in notes[1:4]] == [
        {"connector_name": "srv", "data_collections": "s.a,s.e",
         "current_collection_in_progress": "s.a", "maximum_key": "25",
         "last_processed_key": last} for last in ("10", "20", "25")]
    assert notes[4]["additionalData"] == {
        "connector_name": "srv", "data_collections": "s.a,s.e", "scanned_collection": "s.a",
        "total_rows_scanned": "25", "status": "SUCCEEDED"}
    assert notes[5]["additionalData"] == {
        "connector_name": "srv", "data_collections": "s.e", "scanned_collection": "s.e",
        "total_rows_scanned": "0", "status": "EMPTY"}
    assert notes[6]["additionalData"] == {"connector_name": "srv"}
    values = [orjson.loads(r.value or b"") for r in sunk]
    assert [v["type"] for v in values] == kinds(notes)
    assert values[1] == {"id": "sig-1", "aggregate_type": "Incremental Snapshot",
                         "type": "IN_PROGRESS", "additional_data": notes[1]["additionalData"],
                         "timestamp": notes[1]["timestamp"]}
    assert orjson.loads(sunk[0].key or b"") == {"id": "sig-1"}


def test_pause_resume_and_stop() -> None:
    notes, _ = run({"s.a": 100, "s.b": 5, "s.c": 5}, [
        ("go", "execute-snapshot", {"data-collections": ["s.a", "s.b", "s.c"]}),
        ("p", "pause-snapshot", None),
        ("p2", "pause-snapshot", None),  # already paused: no second PAUSED
        ("r", "resume-snapshot", None),
        ("s", "stop-snapshot", {"data-collections": ["s.c", "s.a"], "type": "incremental"}),
    ], 3)
    assert kinds(notes)[:5] == ["STARTED", "PAUSED", "RESUMED", "ABORTED", "IN_PROGRESS"]
    assert {n["id"] for n in notes} == {"go"}
    assert notes[1]["additionalData"]["data_collections"] == "s.a,s.b,s.c"
    # Debezium lists the queued collections it removed first, the current one last
    assert notes[3]["additionalData"] == {"connector_name": "srv",
                                          "data_collections": "s.c,s.a"}
    assert notes[4]["additionalData"]["current_collection_in_progress"] == "s.b"
    assert kinds(notes)[5:] == ["TABLE_SCAN_COMPLETED", "COMPLETED"]


def test_stop_of_everything_and_signals_without_a_running_snapshot() -> None:
    notes, _ = run({"s.a": 100}, [
        ("p", "pause-snapshot", None),  # nothing runs: Debezium sends nothing
        ("r", "resume-snapshot", None),
        ("s0", "stop-snapshot", {"type": "incremental"}),
        ("go", "execute-snapshot", {"data-collections": ["s.a"]}),
    ], 1)
    assert kinds(notes) == ["STARTED", "IN_PROGRESS", "IN_PROGRESS"]
    notes, _ = run({"s.a": 100}, [
        ("go", "execute-snapshot", {"data-collections": ["s.a"]}),
        ("go2", "execute-snapshot", {"data-collections": ["s.a"]}),  # running: no STARTED
        ("s", "stop-snapshot", {"type": "incremental"}),
    ], 2)
    assert kinds(notes) == ["STARTED", "ABORTED"]
    assert notes[1]["additionalData"]["data_collections"] == "s.a"
    assert notes[1]["id"] == "go2"  # the latest execute-snapshot signal's, as Debezium


def test_the_correlation_id_survives_a_restart_in_the_offset() -> None:
    notifier = Notifier("srv", ("rest",))
    ctl = IncrementalSnapshotController(FakeTables({"s.a": 30}), CTX, chunk_size=10,
                                        metrics=CaptureMetrics(notifier=notifier))
    ctl.signal(Signal("go", "execute-snapshot", '{"data-collections": ["s.a"]}'))
    ctl.boundary(lambda _r: None, lambda: None)
    ctl.close(1)
    offset = ctl.offset_fields()
    assert offset["incremental_snapshot_correlation_id"] == "go"
    again = IncrementalSnapshotController(FakeTables({"s.a": 30}), CTX, chunk_size=10,
                                          offset=offset,
                                          metrics=CaptureMetrics(notifier=notifier))
    again.boundary(lambda _r: None, lambda: None)
    assert list(notifier.recent)[-1]["id"] == "go"
    assert list(notifier.recent)[-1]["additionalData"]["last_processed_key"] == "20"


def test_keys_read_as_java_prints_them() -> None:
    assert key_text([10, "a", None, True]) == "10,a,<null>,true"
    # MongoDB _ids, as the offsets hold them (canonical extended JSON)
    assert key_text([{"$oid": "65a1b2c3d4e5f60718293a4b"}]) == "65a1b2c3d4e5f60718293a4b"
    assert key_text([{"$numberLong": "4294967296"}]) == "4294967296"
    assert key_text([{"$binary": {"base64": "EjRWeBI0VniavBI0VniavA==", "subType": "04"}}]) \
        == "12345678-1234-5678-9abc-123456789abc"
    assert key_text(None) == ""


class DroppedAfterQueueing(FakeTables):
    """`s.gone` resolves when its signal is read, then is dropped before its turn (its DROP
    read from the stream after the signal); `s.bad` is refused by the server's query."""

    def max_key(self, table: SnapshotTable) -> RawKey | None:
        if table.name == "s.gone":
            raise IncrementalSnapshotError("table s.gone is not captured")
        return super().max_key(table)

    def read_chunk(self, table: SnapshotTable, after: RawKey | None, maximum: RawKey,
                   limit: int) -> ChunkRead:
        if table.name == "s.bad":
            raise IncrementalSnapshotError("table s.bad: the server refused the chunk query",
                                           "SQL_EXCEPTION")
        return super().read_chunk(table, after, maximum, limit)


def test_a_table_gone_after_queueing_fails_its_scan_and_the_snapshot_goes_on() -> None:
    """Debezium's warnAndSkip: the stream does not stop; the table's scan completes with
    UNKNOWN_SCHEMA or SQL_EXCEPTION, its state is FAILED with the reason, the next table runs."""
    metrics = CaptureMetrics(notifier=Notifier("srv", ("rest",), "srv.notes"))
    ctl = IncrementalSnapshotController(
        DroppedAfterQueueing({"s.gone": 3, "s.bad": 3, "s.a": 5}), CTX, chunk_size=10,
        metrics=metrics)
    ctl.signal(Signal("go", "execute-snapshot",
                      orjson.dumps({"data-collections": ["s.gone", "s.bad", "s.a"]}).decode()))
    ctl.boundary(lambda _r: None, lambda: None)
    ctl.boundary(lambda _r: None, lambda: None)
    ctl.boundary(lambda _r: None, lambda: None)
    read = ctl.close(1)
    assert [r.after for r in read] == [(k,) for k in range(1, 6)]
    ctl.boundary(lambda _r: None, lambda: None)
    assert metrics.notifier is not None
    notes = list(metrics.notifier.recent)
    scans = [(n["additionalData"]["scanned_collection"], n["additionalData"]["status"])
             for n in notes if n["type"] == "TABLE_SCAN_COMPLETED"]
    assert scans == [("s.gone", "UNKNOWN_SCHEMA"), ("s.bad", "SQL_EXCEPTION"),
                     ("s.a", "SUCCEEDED")]
    assert kinds(notes)[-1] == "COMPLETED"
    states = metrics.incremental_tables
    assert states["s.gone"][0] == "FAILED" and "not captured" in states["s.gone"][2]
    assert states["s.bad"][0] == "FAILED" and "refused" in states["s.bad"][2]
    assert states["s.a"][0] == "COMPLETED"
