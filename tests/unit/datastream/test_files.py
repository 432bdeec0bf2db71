"""The files destination: Datastream's layout, rotation by size and time, atomic visibility,
Avro container files, and source positions acknowledged only once their files are published."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastavro import reader

from headwater.connectors.postgres.position import PostgresPosition
from headwater.destinations.files import INFLIGHT, FileDestination, stream_folder
from headwater.engine.offsets import FileOffsetStore
from headwater.engine.queue import Batch
from headwater.engine.runtime import CaptureRuntime
from headwater.engine.source import SourceRunContext, StartPlan
from headwater.formats.datastream.renderer import DatastreamFormat
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
from headwater.model.schema import INT32, STRING, Column, ConnectSchema, TableId, TableSchema
from headwater.model.topic import TopicBatch
from headwater.testing.timeouts import scaled

CTX = SourceContext("postgresql", "srv", "x")
STREAM = "projects/p/locations/l/streams/orders-stream"
MINUTE = 60_000
T0 = 1_700_000_040_000  # 2023-11-14 22:14:00 UTC


def table(name: str = "orders", extra: bool = False) -> TableSchema:
    cols = [Column("id", 0, "int4", ConnectSchema(INT32, optional=False)),
            Column("note", 1, "text", ConnectSchema(STRING))]
    if extra:
        cols.append(Column("more", 2, "text", ConnectSchema(STRING)))
    return TableSchema(TableId("db", "public", name), tuple(cols), ("id",))


ORDERS = table()


def rec(i: int, ts: int = T0, tbl: TableSchema = ORDERS, note: str = "n") -> ChangeRecord:
    row: tuple[Any, ...] = (i, note) + (("x",) if len(tbl.columns) == 3 else ())
    return ChangeRecord(CTX, tbl, Op.CREATE, None, row, ts, ts, SnapshotMarker.FALSE,
                        PostgresPosition(1000 + i, 1000 + i, None, i))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def visible(root: Path) -> list[Path]:
    base = root / stream_folder(STREAM)
    return sorted(p for p in base.rglob("*") if p.is_file()) if base.exists() else []


def lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def dest(root: Path, **kw: Any) -> FileDestination:
    kw.setdefault("clock", Clock())
    return FileDestination(root, STREAM, **kw)


def render(*records: ChangeRecord, encoding: str = "json") -> TopicBatch:
    return DatastreamFormat(STREAM, encoding=encoding, file_headers=True).render_batch(records)


def test_layout_stream_object_minute_folders(tmp_path: Path) -> None:
    d = dest(tmp_path)
    d.append(render(rec(1), rec(2, T0 + MINUTE), rec(3, tbl=table("items"))))
    assert visible(tmp_path) == []  # nothing visible before publication
    d.close()
    files = visible(tmp_path)
    rel = sorted(str(p.parent.relative_to(tmp_path)) for p in files)
    assert rel == ["orders-stream/public_items/2023/11/14/22/14",
                   "orders-stream/public_orders/2023/11/14/22/14",
                   "orders-stream/public_orders/2023/11/14/22/15"]
    assert all(p.suffix == ".jsonl" and not p.name.startswith(".") for p in files)
    got = sorted(e["payload"]["id"] for p in files for e in lines(p))
    assert got == [1, 2, 3]
    assert list((tmp_path / INFLIGHT).iterdir()) == []


def test_size_rotation_keeps_files_under_max_bytes_and_every_event(tmp_path: Path) -> None:
    one = len(render(rec(100))["srv.public.orders"][0].value or b"") + 1
    d = dest(tmp_path, max_bytes=one * 3)
    for start in range(100, 120, 4):  # equal sizes: 3-digit ids
        d.append(render(*(rec(i) for i in range(start, start + 4))))
    d.close()
    files = visible(tmp_path)
    assert len(files) == 7  # 20 events, 3 per file
    assert all(p.stat().st_size <= one * 3 for p in files)
    ids = [e["payload"]["id"] for p in sorted(files, key=lambda p: p.name) for e in lines(p)]
    assert ids == list(range(100, 120))


def test_time_rotation_publishes_old_files_on_maintain(tmp_path: Path) -> None:
    clock = Clock()
    d = dest(tmp_path, clock=clock, max_ms=1000)
    d.append(render(rec(1)))
    clock.now = 0.9
    d.maintain()
    assert visible(tmp_path) == []
    clock.now = 1.0
    d.maintain()
    assert len(visible(tmp_path)) == 1
    d.append(render(rec(2)))  # a new file, opened at 1.0
    clock.now = 1.5
    d.append(render(rec(3)))
    assert len(visible(tmp_path)) == 1
    clock.now = 2.0
    d.append(render(rec(4)))  # rotation is checked on append too (busy writer, no idle)
    assert len(visible(tmp_path)) == 2
    d.close()
    assert [e["payload"]["id"] for p in visible(tmp_path) for e in lines(p)] == [1, 2, 3, 4]


def test_schema_change_starts_a_new_file(tmp_path: Path) -> None:
    d = dest(tmp_path)
    d.append(render(rec(1)))
    d.append(render(rec(2, tbl=table(extra=True))))
    d.close()
    files = visible(tmp_path)
    assert len(files) == 2
    assert len({lines(p)[0]["schema_key"] for p in files}) == 2


def test_when_durable_waits_for_every_file_of_earlier_appends(tmp_path: Path) -> None:
    clock = Clock()
    d = dest(tmp_path, clock=clock, max_ms=1000)
    done: list[int] = []
    d.append(render(rec(1)))
    d.when_durable(lambda: done.append(1))
    clock.now = 0.5
    d.append(render(rec(2, tbl=table("items"))))
    d.when_durable(lambda: done.append(2))
    assert done == []
    clock.now = 1.0
    d.maintain()  # the orders file (opened at 0) is published, items (0.5) still open
    assert done == [1]
    assert len(visible(tmp_path)) == 1
    d.close()
    assert done == [1, 2]
    d.when_durable(lambda: done.append(3))  # nothing open: at once
    assert done == [1, 2, 3]


def test_avro_files_read_back_by_fastavro(tmp_path: Path) -> None:
    d = dest(tmp_path, file_format="avro")
    d.append(render(rec(1), rec(2), encoding="avro"))
    d.append(render(rec(3), encoding="avro"))  # a second block in the same file
    d.close()
    (path,) = visible(tmp_path)
    assert path.suffix == ".avro"
    with path.open("rb") as fh:
        avro = reader(fh)
        records = list(avro)
        schema = avro.writer_schema
    assert [r["payload"]["id"] for r in records] == [1, 2, 3]  # type: ignore[call-overload,index]
    assert isinstance(schema, dict)
    payload = next(f for f in schema["fields"] if f["name"] == "payload")["type"]
    assert [f["name"] for f in payload["fields"]] == ["id", "note"]
    json_event = orjson.loads(render(rec(1))["srv.public.orders"][0].value or b"")
    assert records[0]["uuid"] == json_event["uuid"]  # type: ignore[call-overload,index]


def test_gzip_json_files_are_whole_gzip_files_under_max_bytes(tmp_path: Path) -> None:
    """`compression=gzip`: `.jsonl.gz` files, one gzip member per append (so each published
    file is complete gzip), `max.bytes` holding for the compressed bytes, and the pipeline's
    file reader giving back every event of them."""
    import gzip

    from headwater.pipeline.datastream.files import list_files, read_file

    d = dest(tmp_path, compression="gzip", max_bytes=400)
    for start in range(100, 160, 6):
        d.append(render(*(rec(i, note="x" * (i % 7)) for i in range(start, start + 6))))
    d.close()
    files = visible(tmp_path)
    assert len(files) > 1 and all(p.name.endswith(".jsonl.gz") for p in files)
    assert all(p.stat().st_size <= 400 for p in files)
    events = [orjson.loads(line) for p in sorted(files, key=lambda p: p.name)
              for line in gzip.decompress(p.read_bytes()).splitlines()]
    assert [e["payload"]["id"] for e in events] == list(range(100, 160))
    base = tmp_path / stream_folder(STREAM)
    listed = list_files(base, "json")
    assert sorted(listed) == sorted(str(p.relative_to(base)) for p in files)
    assert list_files(base, "auto") == listed and list_files(base, "avro") == []
    got = [e.event["uuid"] for name in listed for e in read_file(base / name, 0)]
    assert sorted(got) == sorted(e["uuid"] for e in events)
    cut = files[0].with_name("cut.jsonl.gz")
    cut.write_bytes(files[0].read_bytes()[:-6])
    with pytest.raises(ValueError, match=r"cut\.jsonl\.gz: not a complete gzip file"):
        list(read_file(cut, 0))


def test_gzip_is_for_json_files_only(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="only JSON files are compressed"):
        dest(tmp_path, file_format="avro", compression="gzip")
    with pytest.raises(ValueError, match="'zstd'"):
        dest(tmp_path, compression="zstd")


def test_failed_append_never_publishes_and_start_clears_leftovers(tmp_path: Path) -> None:
    d = dest(tmp_path)
    done: list[int] = []
    d.append(render(rec(1)))
    d.when_durable(lambda: done.append(1))
    with pytest.raises(ValueError):
        d.append({"t": [render(rec(2))["srv.public.orders"][0]._replace(headers=())]})
    d.close()
    assert done == [] and visible(tmp_path) == []
    (tmp_path / INFLIGHT / "left.jsonl").write_bytes(b"{partial")
    dest(tmp_path)
    assert list((tmp_path / INFLIGHT).iterdir()) == []


# -- through the runtime: offsets and acknowledgements wait for published files ----------------


class SpyStore(FileOffsetStore):
    """Asserts, at every offset save, that the events up to it are in published files."""

    def __init__(self, path: Path, root: Path, log: list[tuple[str, int]]) -> None:
        super().__init__(path, {"server": "srv"})
        self.root = root
        self.log = log

    def save(self, offset: dict[str, Any]) -> None:
        published = {e["payload"]["id"] for p in visible(self.root) for e in lines(p)}
        missing = set(range(1, offset["n"] + 1)) - published
        assert not missing, f"offset {offset['n']} stored before events {missing} published"
        self.log.append(("offset", offset["n"]))
        super().save(offset)


class Streaming:
    def __init__(self, log: list[tuple[str, int]], batches: int) -> None:
        self.log = log
        self.batches = batches

    def execute(self, ctx: SourceRunContext, offset: dict[str, Any] | None) -> None:
        for i in range(1, self.batches + 1):
            ctx.emit(Batch([rec(i)], offset={"n": i}, ack=i))
        ctx.stopping.wait(10)

    def acknowledge(self, token: Any) -> None:
        self.log.append(("ack", token))


class Connector:
    def __init__(self, streaming: Streaming) -> None:
        self.streaming = streaming

    @property
    def context(self) -> SourceContext:
        return CTX

    @property
    def partition(self) -> dict[str, Any]:
        return {"server": "srv"}

    def start(self, offset: dict[str, Any] | None) -> StartPlan:
        return StartPlan(None, self.streaming)

    def close(self) -> None:
        pass


def test_runtime_stores_offsets_and_acknowledges_only_after_publication(tmp_path: Path) -> None:
    log: list[tuple[str, int]] = []
    root = tmp_path / "files"
    writer = FileDestination(root, STREAM, max_ms=400)
    rt = CaptureRuntime(Connector(Streaming(log, 5)), DatastreamFormat(STREAM, file_headers=True),
                        writer, SpyStore(tmp_path / "o.json", root, log),
                        max_queue_size=100, max_batch_size=1, poll_interval_ms=20)
    t = threading.Thread(target=rt.run)
    t.start()
    deadline = time.monotonic() + scaled(5)
    while not writer.published and time.monotonic() < deadline:
        assert log == []  # nothing acknowledged while the file is open
        time.sleep(0.01)
    deadline = time.monotonic() + scaled(5)
    while ("ack", 5) not in log and time.monotonic() < deadline:
        time.sleep(0.01)
    rt.stop()
    t.join(10)
    assert ("ack", 5) in log
    offsets = [n for what, n in log if what == "offset"]
    acks = [n for what, n in log if what == "ack"]
    assert acks == sorted(acks) == list(range(1, 6))
    # Batches published together store their newest offset once; each acknowledgement
    # follows the storing of an offset at or past it.
    assert offsets == sorted(offsets) and offsets[-1] == 5
    for n in acks:
        stored_first = [i for i, (what, m) in enumerate(log) if what == "offset" and m >= n]
        assert stored_first and stored_first[0] < log.index(("ack", n))
