"""SQL Server and Db2 batches take the column-wise path (issue 25): events rendered by the
real format with each connector's source block, duplicated and reordered, are decoded and
netted column-wise (no `NotColumnar`, no event-by-event fallback in `apply_batch`), with the
same net rows, sequences, changelog and Delta tables as the event-by-event path.  No Spark:
`apply_batch` without a session is what the driver runs for a batch."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable

from headwater.connectors.db2 import lsn as db2_lsn
from headwater.connectors.db2.position import Db2Position, Db2SourceBlock
from headwater.connectors.sqlserver import lsn as sqlserver_lsn
from headwater.connectors.sqlserver.position import SqlServerPosition, SqlServerSourceBlock
from headwater.formats.debezium_json import DebeziumJsonFormat
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
from headwater.model.schema import (
    BOOLEAN,
    BYTES,
    FLOAT64,
    INT32,
    INT64,
    STRING,
    Column,
    ConnectSchema,
    TableId,
    TableSchema,
)
from headwater.model.topic import TopicRecord
from headwater.pipeline import columnar, runner
from headwater.pipeline.config import PipelineConfig
from headwater.pipeline.decode import decode_topic
from headwater.pipeline.delta_target import DeltaTarget
from headwater.pipeline.net import net_changes
from headwater.pipeline.source import read_range
from headwater.relational.changetables.position import LsnPosition
from headwater.topics.log import TopicLog

PRICE = ConnectSchema(BYTES, optional=True, name="org.apache.kafka.connect.data.Decimal",
                      version=1, parameters={"scale": "2", "connect.decimal.precision": "10"})
MILLIS = ConnectSchema(INT64, optional=True, name="io.debezium.time.Timestamp", version=1)
MICROS = ConnectSchema(INT64, optional=True, name="io.debezium.time.MicroTimestamp", version=1)


def table(tid: TableId, names: tuple[str, ...], stamp: ConnectSchema) -> TableSchema:
    schemas = (ConnectSchema(INT32, optional=False), ConnectSchema(STRING, optional=True), PRICE,
               stamp, ConnectSchema(FLOAT64, optional=True), ConnectSchema(BOOLEAN, optional=True),
               ConnectSchema(BYTES, optional=True))
    types = ("int", "varchar", "decimal", "timestamp", "float", "bit", "varbinary")
    return TableSchema(tid, tuple(Column(n, i, t, s) for i, (n, t, s) in enumerate(
        zip(names, types, schemas, strict=True))), (names[0],))


class Connector(NamedTuple):
    context: SourceContext
    table: TableSchema
    format: DebeziumJsonFormat
    position: Callable[[str | None, str | None, int | None], LsnPosition]
    lsn_text: Callable[[int], str]


def sqlserver(_rng: random.Random) -> Connector:
    return Connector(
        SourceContext("sqlserver", "srv", "3.0.0.Final"),
        table(TableId("testDB", "dbo", "customers"),
              ("id", "name", "price", "at", "weight", "ok", "data"), MILLIS),
        DebeziumJsonFormat(SqlServerSourceBlock()),
        SqlServerPosition,
        lambda n: str(sqlserver_lsn.lsn_text(n.to_bytes(sqlserver_lsn.LSN_BYTES, "big"))))


def db2(rng: random.Random) -> Connector:
    width = rng.choice((10, 16))  # the CD tables' width here, and Debezium's test setup's
    return Connector(
        SourceContext("db2", "db2srv", "3.0.0.Final"),
        table(TableId("TESTDB", "DB2INST1", "CUSTOMERS"),
              ("ID", "NAME", "PRICE", "AT", "WEIGHT", "OK", "DATA"), MICROS),
        DebeziumJsonFormat(Db2SourceBlock()),
        Db2Position,
        lambda n: str(db2_lsn.lsn_text(n.to_bytes(width, "big"))))


CONNECTORS = {"sqlserver": sqlserver, "db2": db2}


def image(rng: random.Random, key: int) -> tuple[Any, ...]:
    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.1 else v

    return (key, maybe(rng.choice([f"n{rng.randrange(1000)}", "", "é\u2603\"\\\n"])),
            maybe(Decimal(rng.randrange(-10**9, 10**9)).scaleb(-2)),
            maybe(rng.randrange(4 * 10**12)), maybe(rng.random() * 1e6), maybe(rng.random() < 0.5),
            maybe(rng.randbytes(rng.randrange(6))))


def workload(rng: random.Random, c: Connector, n: int = 400, keys: int = 40) -> tuple[
        str, list[TopicRecord]]:
    """(topic, records): snapshot reads at the snapshot's LSN, then transactions of inserts,
    updates, deletes and key changes (a delete and an insert at one change LSN), each with
    a commit LSN and rising change LSNs; duplicated and reordered within 25 records."""
    records: list[ChangeRecord] = []

    def change(op: Op, before: Any, after: Any, position: LsnPosition,
               marker: SnapshotMarker = SnapshotMarker.FALSE) -> None:
        records.append(ChangeRecord(c.context, c.table, op, before, after,
                                    1_700_000_000_000 + len(records), 1_700_000_000_500,
                                    marker, position))

    snapshot_lsn = 5000 << 16
    for key in range(keys // 2):
        marker = (SnapshotMarker.FIRST if key == 0 else SnapshotMarker.LAST
                  if key == keys // 2 - 1 else SnapshotMarker.TRUE)
        change(Op.READ, None, image(rng, key), c.position(c.lsn_text(snapshot_lsn), None, None),
               marker)
    commit = 4990  # the first transactions committed before the snapshot's point
    while len(records) < n:
        commit += rng.randrange(1, 30)
        for i in range(rng.randrange(1, 5)):
            at = c.lsn_text((commit << 16) - 100 + 2 * i)
            committed = c.lsn_text(commit << 16)
            key = rng.randrange(keys)
            op = rng.choice([Op.CREATE, Op.UPDATE, Op.UPDATE, Op.DELETE, None])
            if op is None:  # a key change: both halves at one change LSN
                other = rng.randrange(keys)
                change(Op.DELETE, image(rng, key), None, c.position(committed, at, 1))
                change(Op.CREATE, None, image(rng, other), c.position(committed, at, 1))
            else:
                change(op, image(rng, key) if op is not Op.CREATE else None,
                       None if op is Op.DELETE else image(rng, key),
                       c.position(committed, at, 2 if op is Op.UPDATE else 1))
    (topic, rendered), = c.format.render_batch(records).items()
    out = [r for r in rendered for _ in range(rng.choice((1, 1, 2)))]
    for i in range(0, len(out), 25):
        chunk = out[i:i + 25]
        rng.shuffle(chunk)
        out[i:i + 25] = chunk
    return topic, out


def write(root: Path, topic: str, records: list[TopicRecord]) -> None:
    with TopicLog(root, segment_bytes=1 << 16) as log:
        for i in range(0, len(records), 37):
            log.append({topic: records[i:i + 37]})


def by_events(root: Path, topic: str, start: int, end: int) -> dict[Any, Any]:
    changes = decode_topic(topic, list(read_range(root, topic, start, end)))
    net, truncate = net_changes(changes.events, topic)
    assert truncate is None
    return {n.key[0]: (n.delete, n.sequence, None if n.delete else n.row) for n in net}


def by_columns(root: Path, topic: str, start: int, end: int) -> dict[Any, Any]:
    """The column-wise path's net rows; it must not leave the batch to the event path."""
    try:
        ch = columnar.decode_net(topic, columnar.scan(root, topic, start, end,
                                                      columnar.Positions()))
    except columnar.NotColumnar as exc:
        pytest.fail(f"the batch fell back to the event path: {exc}")
    assert isinstance(ch, columnar.ColumnarChanges)
    assert not ch.toast
    key = ch.key_columns[0]
    names = [col.name for col in ch.columns]
    out = {}
    for r in ch.rows.to_pylist():
        delete = r[columnar.OP] == "d"
        out[r[key]] = (delete, r[columnar.SEQ], None if delete else {n: r[n] for n in names})
    return out


@pytest.mark.parametrize("name", list(CONNECTORS))
@pytest.mark.parametrize("seed", range(3))
def test_net_rows_equal_the_event_path(tmp_path: Path, name: str, seed: int) -> None:
    rng = random.Random(seed)
    topic, records = workload(rng, CONNECTORS[name](rng))
    write(tmp_path, topic, records)
    end = len(records)
    for start, stop in ((0, end), (0, end // 3), (end // 3, end), (end - 25, end)):
        expected = by_events(tmp_path, topic, start, stop)
        assert expected
        assert by_columns(tmp_path, topic, start, stop) == expected
    assert {delete for delete, *_ in by_events(tmp_path, topic, 0, end).values()} == {
        True, False}
    assert len(set(records)) < len(records)  # re-deliveries to drop


def run(tmp_path: Path, topic: str, records: int, mode: str, delta: str) -> DeltaTable:
    """The batches of the topic through `apply_batch` (no Spark session: the driver's path)."""
    cfg = PipelineConfig(topic_prefix=topic.partition(".")[0], topics_dir=tmp_path / "topics",
                         delta_path=tmp_path / delta, checkpoint_dir=tmp_path / f"cp-{delta}",
                         topics_glob="*", mode=mode, pipeline_id="p")
    target = DeltaTarget(cfg.delta_path, cfg.pipeline_id)
    bounds = [0, records // 4, records // 2, records - 30, records]
    for batch, (a, b) in enumerate(itertools.pairwise(bounds)):
        for _ in range(2):  # each batch replayed once: applied once
            runner.apply_batch(cfg.topics_dir, {topic: (a, b)}, batch, cfg, target)
    _, schema, name = topic.split(".")
    return DeltaTable(str(cfg.delta_path / schema / name))


@pytest.mark.parametrize("mode", ["scd1", "changelog"])
@pytest.mark.parametrize("name", list(CONNECTORS))
def test_batches_go_column_wise_and_equal_the_event_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, mode: str) -> None:
    rng = random.Random(7)
    topic, records = workload(rng, CONNECTORS[name](rng), n=600)
    write(tmp_path / "topics", topic, records)
    fallbacks: list[str] = []

    def counted(topic: str, *args: Any, **kw: Any) -> Any:
        fallbacks.append(topic)
        return decode_topic(topic, *args, **kw)

    monkeypatch.setattr(runner, "decode_topic", counted)
    fast = run(tmp_path, topic, len(records), mode, "fast").to_pyarrow_table()
    assert fallbacks == []
    monkeypatch.setenv("HEADWATER_PIPELINE_COLUMNAR", "0")
    ref = run(tmp_path, topic, len(records), mode, "ref").to_pyarrow_table()
    assert fallbacks  # the count does see the event path
    assert ref.num_rows > 20
    order = "__offset" if mode == "changelog" else ref.column_names[0]
    assert fast.schema == ref.schema
    assert fast.sort_by(order).to_pylist() == ref.sort_by(order).to_pylist()
    if mode == "changelog":
        assert set(pc.unique(fast.column("__op")).to_pylist()) == {"r", "c", "u", "d"}


def toy_sequence(source: dict[str, Any], _total_order: int | None, offset: int) -> str:
    return f"{source.get('scn') or '':0>20}{offset:016x}"


def toy_columnar(source: Any, _total_order: Any, offsets: Any) -> Any:
    from headwater.connectors import sequence_columns as columns

    scn = pc.utf8_lpad(pc.fill_null(source.field("scn"), ""), width=20, padding="0")
    return columns.strings([columns.text_columns(scn, 20),
                            columns.hex_columns(offsets.astype("uint64"), 16)])


def test_a_new_connector_goes_column_wise_by_declaring_its_position_fields(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An Oracle-shaped connector, unknown to the pipeline: its registered order's builder and
    declared fields (`scn`, which nothing in the pipeline names) are all it takes."""
    from headwater.connectors.registry import REGISTRY, EventOrder
    from tests.pipeline.test_columnar import TOPIC, document, fast, reference, row
    from tests.pipeline.test_columnar import write as write_documents

    toy = EventOrder(toy_sequence, lambda s: (s.get("scn"), s.get("rs_id")), toy_columnar,
                     (("scn", "string"), ("rs_id", "string")))
    known = REGISTRY.order_for
    monkeypatch.setattr(REGISTRY, "order_for", lambda c: toy if c == "toyoracle" else known(c))
    rng = random.Random(3)
    records: list[tuple[bytes | None, bytes | None]] = []
    for i in range(300):
        key = rng.randrange(30)
        source = {"connector": "toyoracle", "schema": "public", "table": "t",
                  "snapshot": "false", "scn": str(1000 + i // 3), "rs_id": f"0x{i:06x}"}
        records += [document(rng.choice("cud"), key, row(rng, key), source)] * rng.choice((1, 2))
    write_documents(tmp_path, records)
    assert fast(tmp_path, 0, len(records)) == reference(tmp_path, 0, len(records))
    toy_fields = toy._replace(columnar_position=(("scn", "int64"), ("rs_id", "string")))
    monkeypatch.setattr(REGISTRY, "order_for", lambda c: toy_fields if c == "toyoracle" else
                        known(c))
    with pytest.raises(columnar.NotColumnar, match="JSON reader"):  # "scn" is text: refused
        columnar.read_net(tmp_path, TOPIC, 0, len(records), columnar.Positions())
