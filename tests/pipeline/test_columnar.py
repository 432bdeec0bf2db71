"""The column-wise SCD1 path against the event-by-event reference: same net rows, sequences and
Delta tables on random workloads (duplicates, reordering, deletes, snapshots, PostgreSQL and
MySQL sources, every column type it converts itself), and a fallback for every shape it leaves
to the reference.  No Spark: these call the path's functions directly."""

from __future__ import annotations

import base64
import itertools
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable

from headwater.model.topic import TopicRecord
from headwater.pipeline import columnar
from headwater.pipeline.decode import TableChanges, decode_topic
from headwater.pipeline.delta_target import DeltaTarget, read_table
from headwater.pipeline.net import net_changes
from headwater.pipeline.source import read_range
from headwater.topics.log import TopicLog

TOPIC = "s.public.t"


def f(field: str, typ: str, optional: bool = True, **extra: Any) -> dict[str, Any]:
    return {"type": typ, "optional": optional, "field": field, **extra}


ROW_FIELDS = [
    f("id", "int32", False), f("v", "string"),
    f("amount", "bytes", name="org.apache.kafka.connect.data.Decimal",
      parameters={"scale": "2", "connect.decimal.precision": "12"}),
    f("at", "int64", name="io.debezium.time.MicroTimestamp"),
    f("ms", "int64", name="io.debezium.time.Timestamp"),
    f("ns", "int64", name="io.debezium.time.NanoTimestamp"),
    f("day", "int32", name="io.debezium.time.Date"),
    f("t", "int64", name="io.debezium.time.MicroTime"),
    f("zts", "string", name="io.debezium.time.ZonedTimestamp"),
    f("blob", "bytes"), f("x", "float64"), f("small", "int16"), f("ok", "boolean"),
    f("big", "int64"),
]
KEY_SCHEMA = {"type": "struct", "optional": False, "fields": [f("id", "int32", False)]}


def row(rng: random.Random, key: int) -> dict[str, Any]:
    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.1 else v

    def edge(v: Any, *edges: Any) -> Any:  # the type's limits, now and then
        return rng.choice(edges) if rng.random() < 0.15 else v

    unscaled = edge(rng.randrange(-10**9, 10**9), 10**12 - 1, -(10**12 - 1), 0, -1)
    return {
        "id": key, "v": maybe(edge(f"v{rng.randrange(1000)}", "", "é\u2603\"\\\n")),
        "amount": maybe(base64.b64encode(
            unscaled.to_bytes(8, "big", signed=True).lstrip(b"\x00") or b"\x00").decode()),
        "at": maybe(edge(rng.randrange(-10**15, 10**15), -62135596800000000,
                         253402300799999999)),  # years 1 and 9999
        "ms": maybe(rng.randrange(10**12)),
        "ns": maybe(edge(rng.randrange(-10**18, 10**18), -1, 2**63 - 1, -(2**63))),
        "day": maybe(edge(rng.randrange(-9999, 30000), -719162, 2932896)),
        "t": maybe(edge(rng.randrange(86_400_000_000), 0, 86_399_999_999)),
        "zts": maybe(rng.choice(["2024-03-01T10:00:00.123456Z", "infinity",
                                 "2020-01-01T00:00:00+02:00"])),
        "blob": maybe(base64.b64encode(rng.randbytes(5)).decode()),
        "x": maybe(edge(rng.random() * 1e6, -0.0, 1.7976931348623157e308, 5e-324)),
        "small": maybe(edge(rng.randrange(-30000, 30000), -32768, 32767)),
        "ok": maybe(rng.random() < 0.5),
        "big": maybe(edge(rng.randrange(-2**62, 2**62), -(2**63), 2**63 - 1)),
    }


def document(op: str, key: int, image: dict[str, Any] | None, source: dict[str, Any],
             fields: list[dict[str, Any]] | None = None,
             total_order: int | None = None) -> tuple[bytes, bytes]:
    row_schema = {"type": "struct", "optional": True, "fields": fields or ROW_FIELDS}
    value = {
        "schema": {"type": "struct", "fields": [
            {**row_schema, "field": "before"}, {**row_schema, "field": "after"},
            {"type": "struct", "field": "source", "fields": []}]},
        "payload": {"before": image if op == "d" else None,
                    "after": None if op == "d" else image, "source": source, "op": op,
                    "ts_ms": 1,
                    "transaction": None if total_order is None else {
                        "id": "x", "total_order": total_order, "data_collection_order": 1}},
    }
    return (orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": key}}), orjson.dumps(value))


def pg_source(lsn: int, commit: int | None, snapshot: str = "false") -> dict[str, Any]:
    return {"connector": "postgresql", "schema": "public", "table": "t", "lsn": lsn,
            "txId": lsn // 10, "snapshot": snapshot,
            "sequence": orjson.dumps([None if commit is None else str(commit),
                                      str(lsn)]).decode()}


def mysql_source(file: int, pos: int, row_no: int, snapshot: str = "false") -> dict[str, Any]:
    return {"connector": "mysql", "db": "shop", "table": "t", "sequence": None,
            "file": f"mysql-bin.{file:06d}", "pos": pos, "row": row_no, "snapshot": snapshot,
            "server_id": 1, "gtid": None}


PLACEHOLDER = "__debezium_unavailable_value"


# A BYTES column left out by MySQL's binlog_row_image=NOBLOB: the placeholder's bytes, base64.
PLACEHOLDER_B64 = base64.b64encode(PLACEHOLDER.encode()).decode()


def toasted(rng: random.Random, image: dict[str, Any]) -> dict[str, Any]:
    """An update image whose text and bytes columns may not have been sent: unchanged TOAST,
    which the PostgreSQL capture renders as the placeholder string whatever the column's type,
    or a NOBLOB BLOB column, which the MySQL capture renders as the placeholder's bytes."""
    return {k: (PLACEHOLDER_B64 if k == "blob" and rng.random() < 0.5 else PLACEHOLDER)
            if k in ("v", "blob") and rng.random() < 0.6 else v
            for k, v in image.items()}


def workload(rng: random.Random, mysql: bool, n: int = 400, keys: int = 40,
             duplicates: bool = True, snapshot: bool = True, shuffle: bool = True,
             toast: bool = False) -> list[tuple[bytes | None, bytes | None]]:
    """Snapshot reads, then a stream of inserts/updates/deletes, duplicated and reordered;
    with `toast`, updates leave out unchanged TOAST values now and then."""
    out: list[tuple[bytes | None, bytes | None]] = []
    position = 1000
    for key in range(keys // 2 if snapshot else 0):
        src = (mysql_source(3, position, 0, "true") if mysql
               else pg_source(position, None, "true"))
        out.append(document("r", key, row(rng, key), src))
    for _ in range(n):
        position += rng.randrange(1, 50)
        key = rng.randrange(keys)
        op = rng.choice("cuuud")
        src = (mysql_source(3 + position // 5000, position % 5000, rng.randrange(3)) if mysql
               else pg_source(position, position - 5))
        image = row(rng, key)
        if toast and op == "u":
            image = toasted(rng, image)
        out.append(document(op, key, image, src,
                            total_order=None if mysql else rng.randrange(5)))
        if op == "d" and rng.random() < 0.5:
            out.append((orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": key}}), None))
    dup = [r for r in out for _ in range(rng.choice((1, 1, 2)) if duplicates else 1)]
    for i in range(0, len(dup) if shuffle else 0, 25):
        chunk = dup[i:i + 25]
        rng.shuffle(chunk)
        dup[i:i + 25] = chunk
    return dup


def scd2_workload(rng: random.Random) -> list[tuple[bytes | None, bytes | None]]:
    """Duplicated, reordered events with deletes and unchanged-TOAST placeholders, a primary
    key change (the old key's delete and the new key's insert in one transaction) and, in the
    middle, a truncate."""
    records = workload(rng, mysql=False, n=240, keys=30, toast=True)
    lsns = [orjson.loads(v)["payload"]["source"]["lsn"] for _k, v in records if v is not None]
    third = len(records) // 3
    image = row(rng, 5)
    at = max(lsns) + 10  # (the key change's events arrive early: before older ones)
    key_change = [document("d", 5, image, pg_source(at, at - 5), total_order=1),
                  document("c", 77, {**image, "id": 77}, pg_source(at + 1, at - 5),
                           total_order=2)]
    at = sorted(lsns)[len(lsns) // 2] + 1  # (half the stream is older, half newer)
    truncate = document("t", 1, None, pg_source(at, at - 5))
    return [*records[:third], *key_change, *key_change[:1], truncate, *records[third:]]


def write(root: Path, records: Sequence[tuple[bytes | None, bytes | None]],
          segment_bytes: int = 1 << 20) -> None:
    with TopicLog(root, segment_bytes=segment_bytes) as log:
        for i in range(0, len(records), 37):
            log.append({TOPIC: [TopicRecord(k, v, 0) for k, v in records[i:i + 37]]})


def reference(root: Path, start: int, end: int) -> dict[Any, Any]:
    changes = decode_topic(TOPIC, list(read_range(root, TOPIC, start, end)))
    net, truncate = net_changes(changes.events, "public.t")
    assert truncate is None
    return {n.key[0]: (n.delete, n.sequence, None if n.delete else n.row, n.unavailable)
            for n in net}


def fast(root: Path, start: int, end: int) -> dict[Any, Any]:
    ch = columnar.read_net(root, TOPIC, start, end, columnar.Positions())
    assert ch is not None
    names = [c.name for c in ch.columns]
    out = {}
    for r in ch.rows.to_pylist():
        delete = r["__hw_op"] == "d"
        kept = frozenset(c for c in ch.toast if r[columnar.TOAST_FLAG + c])
        out[r["id"]] = (delete, r["__hw_sequence"],
                        None if delete else {n: r[n] for n in names}, kept)
        if delete:
            assert not kept
        if delete:
            assert all(r[n] is None for n in names if n != "id")
    return out


@pytest.mark.parametrize("mysql", [False, True], ids=["postgresql", "mysql"])
@pytest.mark.parametrize("seed", range(4))
def test_net_changes_equal_the_reference(tmp_path: Path, seed: int, mysql: bool) -> None:
    # seeds 2 and 3: stream only, no re-deliveries (distinct positions: no dedup pass);
    # seed 3 in source order (sequences already sorted: no sort)
    records = workload(random.Random(seed), mysql, duplicates=seed < 2, snapshot=seed < 2,
                       shuffle=seed != 3)
    write(tmp_path, records)
    end = len(records)
    for start, stop in ((0, end), (0, end // 3), (end // 3, end)):
        expected = reference(tmp_path, start, stop)
        assert fast(tmp_path, start, stop) == expected
        assert expected  # the workload does produce changes


@pytest.mark.parametrize("seed", range(4))
def test_unchanged_toast_values_equal_the_reference(tmp_path: Path, seed: int) -> None:
    """The newest value sent since the key's last delete fills an unsent one; without one the
    column is flagged, so the merge keeps the target's value."""
    records = workload(random.Random(100 + seed), mysql=False, toast=True,
                       duplicates=seed < 2, snapshot=seed % 2 == 0)
    write(tmp_path, records)
    end = len(records)
    for start, stop in ((0, end), (0, end // 3), (end // 3, end), (end - 30, end)):
        expected = reference(tmp_path, start, stop)
        assert fast(tmp_path, start, stop) == expected
    assert any(unsent for *_, unsent in reference(tmp_path, end - 30, end).values())


def test_following_a_growing_segment_reads_only_the_new_tail(tmp_path: Path) -> None:
    rng = random.Random(7)
    positions = columnar.Positions()
    with TopicLog(tmp_path, segment_bytes=1 << 30) as log:
        sources = [pg_source(100 + 10 * i, 95 + 10 * i) for i in range(60)]
        docs = [document("u", i % 7, row(rng, i % 7), s) for i, s in enumerate(sources)]
        log.append({TOPIC: [TopicRecord(k, v, 0) for k, v in docs[:30]]})
        first = columnar.scan(tmp_path, TOPIC, 0, 30, positions)
        assert first.offsets.tolist() == list(range(30))
        (hit,) = positions.at.values()
        assert hit[0] == 30 and hit[1] > 0
        log.append({TOPIC: [TopicRecord(k, v, 0) for k, v in docs[30:]]})
        second = columnar.scan(tmp_path, TOPIC, 30, 60, positions)
    assert second.offsets.tolist() == list(range(30, 60))
    assert second.values()[0] == orjson.dumps(orjson.loads(docs[30][1])["payload"])


def test_a_stale_position_is_not_trusted(tmp_path: Path) -> None:
    rng = random.Random(3)
    docs = [document("u", i, row(rng, i), pg_source(100 + i, 99 + i)) for i in range(20)]
    write(tmp_path, docs)
    positions = columnar.Positions()
    seg = next(iter((tmp_path / TOPIC).iterdir()))
    positions.put(seg.parent, 0, 10, 5)  # wrong byte position for offset 10
    assert columnar.scan(tmp_path, TOPIC, 10, 20, positions).offsets.tolist() == list(
        range(10, 20))


def shapes() -> dict[str, list[tuple[bytes | None, bytes | None]]]:
    rng = random.Random(1)
    src = pg_source(100, 90)
    plain = document("u", 1, row(rng, 1), src)
    other = document("u", 3, {"id": 3, "v": "a"}, src, fields=ROW_FIELDS[:2])
    nested = document("u", 4, {"id": 4, "tags": ["a"]}, src,
                      fields=[ROW_FIELDS[0], f("tags", "array", items={"type": "string"})])
    truncate = (None, orjson.dumps({**orjson.loads(plain[1]), "payload": {
        **orjson.loads(plain[1])["payload"], "op": "t", "after": None}}))
    nan = document("u", 5, {**row(rng, 5), "x": "NaN"}, src)
    keyless = (None, plain[1])
    return {"schema change": [plain, other],
            "array column": [nested], "truncate": [plain, truncate], "NaN float": [plain, nan],
            "keyless": [keyless]}


@pytest.mark.parametrize("name", list(shapes()))
def test_other_shapes_are_left_to_the_reference(tmp_path: Path, name: str) -> None:
    records = shapes()[name]
    write(tmp_path, records)
    with pytest.raises(columnar.NotColumnar):
        columnar.read_net(tmp_path, TOPIC, 0, len(records), columnar.Positions())


def test_only_tombstones_is_no_change(tmp_path: Path) -> None:
    key = orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": 1}})
    write(tmp_path, [(key, None), (key, None)])
    assert columnar.read_net(tmp_path, TOPIC, 0, 2, columnar.Positions()) is None


def apply_by_both_paths(
    root: Path, bounds: list[int],
    by_events: Callable[[DeltaTarget, TableChanges, int], None],
    by_columns: Callable[[DeltaTarget, columnar.ColumnarChanges, int], None],
    decode: Callable[[str, columnar.Lines], columnar.ColumnarChanges | None],
) -> None:
    """Applies the batches between `bounds` of the topic log under `root` event by event into
    `root/ref`, and alternately by both paths into `root/mixed`, each batch twice (a replay)."""
    ref = DeltaTarget(root / "ref", "p")
    mixed = DeltaTarget(root / "mixed", "p")
    for batch, (a, b) in enumerate(itertools.pairwise(bounds)):
        changes = decode_topic(TOPIC, list(read_range(root / "topics", TOPIC, a, b)))
        by_events(ref, changes, batch)
        for _ in range(2):
            if batch % 2:
                by_events(mixed, changes, batch)
            else:
                ch = decode(TOPIC, columnar.scan(root / "topics", TOPIC, a, b,
                                                 columnar.Positions()))
                assert ch is not None
                by_columns(mixed, ch, batch)


def scd1_by_events(target: DeltaTarget, changes: TableChanges, batch: int) -> None:
    net, truncate = net_changes(changes.events, "public.t")
    target.apply_scd1(changes, net, truncate, batch)


@pytest.mark.parametrize("toast", [False, True], ids=["plain", "unchanged-toast"])
def test_delta_tables_equal_the_reference_across_batches(tmp_path: Path, toast: bool) -> None:
    """Batches applied alternately by both paths, against all batches by the reference: late
    events, remembered deletes, replays (applied once) and kept TOAST values give the same
    table."""
    records = workload(random.Random(11), mysql=False, n=600, toast=toast)
    write(tmp_path / "topics", records)
    apply_by_both_paths(tmp_path, [0, 150, 300, 420, len(records)], scd1_by_events,
                        DeltaTarget.apply_scd1_net, columnar.decode_net)
    want = read_table(tmp_path / "ref" / "public" / "t").sort_by("id")
    got = read_table(tmp_path / "mixed" / "public" / "t").sort_by("id")
    assert want.num_rows > 0
    assert got.to_pylist() == want.to_pylist()


def test_the_first_batch_into_an_empty_table_is_appended_once(tmp_path: Path) -> None:
    """Into a table (and a state table) without rows, the column-wise SCD1 batch appends its
    net upserts (and its deletes' state rows) rather than MERGE them, with the batch's txn:
    the rows equal the event path's, and a replay of the batch is skipped."""
    records = workload(random.Random(17), mysql=False, n=400, toast=False)
    write(tmp_path / "topics", records)
    ref = DeltaTarget(tmp_path / "ref", "p")
    scd1_by_events(ref, decode_topic(TOPIC, list(read_range(tmp_path / "topics", TOPIC, 0,
                                                             len(records)))), 0)
    fast = DeltaTarget(tmp_path / "fast", "p")
    for _ in range(2):  # (the second: Spark's replay of the batch)
        ch = columnar.decode_net(TOPIC, columnar.scan(tmp_path / "topics", TOPIC, 0,
                                                      len(records), columnar.Positions()))
        assert ch is not None
        fast.apply_scd1_net(ch, 0)
    for path in (tmp_path / "fast" / "public" / "t",
                 tmp_path / "fast" / "_headwater" / "state" / "public.t"):
        dt = DeltaTable(str(path))
        assert [h["operation"] for h in dt.history()] == ["WRITE", "WRITE"]  # (no MERGE)
        assert dt.transaction_version("p") == 0
    want = read_table(tmp_path / "ref" / "public" / "t").sort_by("id")
    got = read_table(tmp_path / "fast" / "public" / "t").sort_by("id")
    assert 0 < got.num_rows < len(records)
    assert got.to_pylist() == want.to_pylist()
    deletes = read_table(tmp_path / "fast" / "_headwater" / "state" / "public.t")
    assert deletes.num_rows > 0
    assert deletes.sort_by("key").to_pylist() == read_table(
        tmp_path / "ref" / "_headwater" / "state" / "public.t").sort_by("key").to_pylist()


def changelog_by_both(root: Path, start: int, end: int) -> tuple[pa.Table, pa.Table]:
    """(event path, column-wise path) changelog tables of one range, as written to Delta."""
    changes = decode_topic(TOPIC, list(read_range(root / "topics", TOPIC, start, end)))
    ref, fast = DeltaTarget(root / "ref", "p"), DeltaTarget(root / "fast", "p")
    ref.append_changelog(changes, 0)
    ch = columnar.decode_changelog(
        TOPIC, columnar.scan(root / "topics", TOPIC, start, end, columnar.Positions()))
    assert ch is not None
    assert ch.events == len(changes.events)
    fast.append_changelog_rows(ch, 0)
    return (DeltaTable(str(ref.table_path(changes))).to_pyarrow_table(),
            DeltaTable(str(fast.table_path(ch))).to_pyarrow_table())


@pytest.mark.parametrize("toast", [False, True], ids=["plain", "unchanged-toast"])
@pytest.mark.parametrize("mysql", [False, True], ids=["postgresql", "mysql"])
@pytest.mark.parametrize("seed", range(3))
def test_changelog_rows_equal_the_reference(tmp_path: Path, seed: int, mysql: bool,
                                            toast: bool) -> None:
    """Every event, its bookkeeping columns and its row image (before image for deletes,
    null for an unsent TOAST value), in the same order and with the same Delta schema."""
    rng = random.Random(seed)
    records = workload(rng, mysql, toast=toast)
    write(tmp_path / "topics", records, segment_bytes=rng.choice((1 << 14, 1 << 20)))
    start = rng.randrange(20)
    want, got = changelog_by_both(tmp_path, start, len(records) - rng.randrange(20))
    assert got.schema == want.schema
    assert want.num_rows > 300
    assert got.to_pylist() == want.to_pylist()
    ops = set(got.column("__op").to_pylist())
    assert ops == {"c", "u", "d", "r"}
    deletes = got.filter(pc.equal(got.column("__op"), "d"))  # with their before image
    assert deletes.num_rows and pc.all(pc.is_valid(deletes.column("id"))).as_py()
    assert pc.count(deletes.column("small")).as_py() > deletes.num_rows // 2
    if toast:
        assert "__debezium_unavailable_value" not in got.column("v").to_pylist()


def test_changelog_truncate_rows_and_transaction_ids(tmp_path: Path) -> None:
    """A truncate (keyed here, so the batch stays column-wise) is a row without an image; the
    transaction id is PostgreSQL's txId or, without one, MySQL's GTID, as text."""
    image = row(random.Random(5), 1)
    pg = [document("c", 1, image, {**pg_source(2000, 1995), "ts_ms": 12}, total_order=1),
          document("t", 1, None, pg_source(2010, 2005)),
          document("d", 1, image, pg_source(2020, 2015))]
    mysql = [document("d", 1, image, {**mysql_source(4, 100, 0), "gtid": "0-1-42",
                                      "ts_ms": 77})]
    found = []
    for name, records in (("pg", pg), ("mysql", mysql)):
        write(tmp_path / name / "topics", records)
        want, got = changelog_by_both(tmp_path / name, 0, len(records))
        assert got.to_pylist() == want.to_pylist()
        found += got.to_pylist()
    assert [r["__op"] for r in found] == ["c", "t", "d", "d"]
    assert [r["__tx_id"] for r in found] == ["200", "201", "202", "0-1-42"]
    assert [r["__source_ts_ms"] for r in found] == [12, None, None, 77]
    assert found[1]["id"] is None and found[1]["v"] is None
    assert all(r["id"] == 1 and r["v"] == image["v"] for r in found[2:])


def test_changelog_across_batches_by_both_paths_holds_every_event_once(tmp_path: Path) -> None:
    """A replayed batch is appended once, whichever path applied it."""
    records = workload(random.Random(3), mysql=False, n=500, toast=True)
    write(tmp_path / "topics", records)
    apply_by_both_paths(tmp_path, [0, 120, 260, 400, len(records)],
                        DeltaTarget.append_changelog, DeltaTarget.append_changelog_rows,
                        columnar.decode_changelog)
    want = DeltaTable(str(tmp_path / "ref" / "public" / "t")).to_pyarrow_table()
    got = DeltaTable(str(tmp_path / "mixed" / "public" / "t")).to_pyarrow_table()
    events = sum(1 for _, v in records if v is not None)
    assert want.num_rows == events
    assert got.sort_by("__offset").to_pylist() == want.sort_by("__offset").to_pylist()


def test_a_crash_between_a_batch_commits_never_forgets_its_deletes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The column-wise path killed after the first of a batch's commits (state or table): the
    replayed batch still remembers its delete, so a later, older upsert stays out."""
    from tests.unit.test_delta_target import Crash, crash_after_first_commit

    rng = random.Random(5)
    records = [document("c", 1, row(rng, 1), pg_source(100, 95)),
               document("c", 2, row(rng, 2), pg_source(110, 105)),
               document("d", 1, row(rng, 1), pg_source(300, 295)),
               document("u", 1, row(rng, 1), pg_source(200, 195))]  # late: before the delete
    write(tmp_path / "topics", records)

    def batch(target: DeltaTarget, batch_id: int, a: int, b: int) -> None:
        ch = columnar.decode_net(TOPIC, columnar.scan(tmp_path / "topics", TOPIC, a, b,
                                                      columnar.Positions()))
        assert ch is not None
        target.apply_scd1_net(ch, batch_id)

    batch(DeltaTarget(tmp_path / "delta", "p"), 0, 0, 2)
    with monkeypatch.context() as m:
        crash_after_first_commit(m)
        with pytest.raises(Crash):
            batch(DeltaTarget(tmp_path / "delta", "p"), 1, 2, 3)
    restarted = DeltaTarget(tmp_path / "delta", "p")
    batch(restarted, 1, 2, 3)  # the replay
    batch(restarted, 2, 3, 4)
    assert read_table(tmp_path / "delta" / "public" / "t").column("id").to_pylist() == [2]


def test_scd2_events_carry_the_decoders_unchanged_toast_flags(tmp_path: Path) -> None:
    """`decode_changelog(flags=True)`, the events an SCD2 history is built from: per event, a
    `__hw_u_<column>` flag exactly where the event-by-event decoder marks the value unsent
    (`ChangeEvent.unavailable`), the value itself null, as there."""
    records = workload(random.Random(31), mysql=False, n=200, toast=True)
    write(tmp_path, records)
    got = columnar.decode_changelog(TOPIC, columnar.scan(tmp_path, TOPIC, 0, len(records),
                                                         columnar.Positions()), flags=True)
    assert got is not None
    events = decode_topic(TOPIC, list(read_range(tmp_path, TOPIC, 0, len(records)))).events
    assert sorted(got.toast) == ["blob", "v"]
    rows = {r["__offset"]: r for r in got.rows.to_pylist()}
    assert sorted(rows) == [e.offset for e in events]
    flagged = 0
    for e in events:
        r = rows[e.offset]
        assert {c for c in got.toast if r[columnar.TOAST_FLAG + c]} == set(e.unavailable)
        assert all(r[c] is None for c in e.unavailable)
        flagged += bool(e.unavailable)
    assert flagged > 10
