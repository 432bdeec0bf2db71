"""Every reader x event model x target x mode of the capabilities table (`capabilities`): the
shared scenario passes and the target equals the expected state, or the start is refused with
the table's error.  `test_print_matrix` prints the matrix (cell -> pass / refused: reason);
see it with `-s -p no:xdist`.

The scenario, one table, the same changes rendered per event model (Debezium rows by the
capture's own renderer, Datastream events and MongoDB documents by the tests' builders): four
inserts, a truncate (Debezium rows only: the other models have none), a re-insert after it,
updates, deletes, a primary-key change (the delete and the insert of the new key), delivered
in two runs of the pipeline with some events late, out of order and delivered twice (a
pre-truncate insert again after the truncate, an update before the one it follows, the
primary-key change's halves swapped, re-deliveries in the second run of events the first
applied).  The expected state is the source's, folded in source order.  `--long` also kills
the pipeline (-9) after its first batch and restarts it.

CI runs the refused cells (no Spark: `load_pipeline_config` and `start` refuse them) and the
topic log's cells into Delta with delta-rs through the query's batch step (`runner.apply_batch`,
no streaming query); the other writers and targets, the Kafka reader (a broker, started once
for the session) and the files reader are `--long`, through the streaming query, with the
kill.  `--long` with HEADWATER_MATRIX_STEP=1 runs every cell but Kafka's through the batch
step instead (no query, no kill): the scenario's check of each target and model alone, for a
machine too loaded for Spark's Python workers to connect back within Spark's fixed 10 s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from headwater.config import ConfigError
from headwater.pipeline import capabilities as caps
from headwater.pipeline.capabilities import Cell
from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.runner import start
from headwater.testing.timeouts import scaled
from tests.kafka.conftest import kafka  # noqa: F401 (fixtures)
from tests.pipeline.conftest import _spark_sessions, spark  # noqa: F401 (fixtures)
from tests.pipeline_jdbc.conftest import _jdbc_sessions, jdbc_spark  # noqa: F401 (fixtures)

pytestmark = pytest.mark.integration

CLASSES = {caps.ROWS: "io.debezium.connector.postgresql.PostgresConnector",
           caps.DATASTREAM: "io.debezium.connector.postgresql.PostgresConnector",
           caps.DOCUMENTS: "io.debezium.connector.mongodb.MongoDbConnector"}
FAST = {(caps.TOPICS, caps.DELTA_RS)}  # (reader, target) cells CI runs the scenario for


@dataclass(frozen=True)
class Change:
    op: str  # c, u, d, t
    key: int | None
    ver: int | None = None


# The source's changes in their order (position = index).
SOURCE = (
    Change("c", 1, 1), Change("c", 2, 1), Change("c", 3, 1), Change("c", 4, 1),
    Change("t", None),
    Change("c", 1, 2), Change("c", 5, 1), Change("c", 6, 1), Change("c", 7, 1),
    Change("u", 5, 2), Change("u", 6, 2), Change("d", 6),
    Change("d", 7), Change("c", 70, 3),  # the primary-key change 7 -> 70
    Change("u", 1, 3), Change("d", 2),
)
TRUNCATE = 4
# Deliveries per run of the pipeline: late, reordered and repeated events.
RUNS = ((0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 14, 9, 1),
        (11, 13, 12, 9, 6, 14, 15, 3))


def source_events(model: str) -> list[int]:
    return [i for i, c in enumerate(SOURCE) if c.op != "t" or model == caps.ROWS]


def expected(model: str) -> dict[int, int]:
    """key -> ver, the source's rows after every change (in source order)."""
    state: dict[int, int] = {}
    for i in source_events(model):
        c = SOURCE[i]
        if c.op == "t":
            state.clear()
        elif c.op == "d":
            state.pop(c.key or 0, None)
        else:
            assert c.key is not None and c.ver is not None
            state[c.key] = c.ver
    return state


# -- the events, per model ---------------------------------------------------------------

def rows_records(indexes: tuple[int, ...]) -> list[tuple[bytes | None, bytes | None]]:
    """Debezium rows of PostgreSQL, rendered by the capture's own renderer."""
    from headwater.connectors.postgres.position import PostgresPosition, PostgresSourceBlock
    from headwater.formats.debezium_json import DebeziumJsonFormat
    from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
    from headwater.model.schema import INT64, Column, ConnectSchema, TableId, TableSchema

    table = TableSchema(TableId("m", "public", "t"), (
        Column("id", 0, "int8", ConnectSchema(INT64, optional=False), fallback=0),
        Column("ver", 1, "int8", ConnectSchema(INT64, optional=True))), ("id",))
    ctx = SourceContext("postgresql", "m", "headwater")
    ops = {"c": Op.CREATE, "u": Op.UPDATE, "d": Op.DELETE, "t": Op.TRUNCATE}
    records = []
    for i in indexes:
        c = SOURCE[i]
        lsn = 1000 + 100 * i
        row = None if c.key is None else (c.key, c.ver)
        records.append(ChangeRecord(
            ctx, table, ops[c.op], row if c.op == "d" else None,
            None if c.op in "dt" else row, 1_700_000_000_000 + i, 0, SnapshotMarker.FALSE,
            PostgresPosition(lsn, lsn, lsn - 50, 500 + i)))
    out: list[tuple[bytes | None, bytes | None]] = []
    for topic_records in DebeziumJsonFormat(PostgresSourceBlock()).render_batch(records).values():
        out += [(r.key, r.value) for r in topic_records]
    return out


def datastream_event(i: int) -> dict[str, Any]:
    from tests.unit.datastream.test_pipeline_order import event

    c = SOURCE[i]
    pk_change = SOURCE[12:14]
    change = {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}[c.op]
    if c in pk_change:
        change = "UPDATE-DELETE" if c.op == "d" else "UPDATE-INSERT"
    assert c.key is not None
    return event(c.key, [1000 + 100 * i, 1000 + 100 * i, 1, 0], ver=c.ver, deleted=c.op == "d",
                 change=change)


def datastream_records(indexes: tuple[int, ...]) -> list[tuple[bytes | None, bytes | None]]:
    return [(None, orjson.dumps(datastream_event(i))) for i in indexes if SOURCE[i].op != "t"]


def document_records(indexes: tuple[int, ...]) -> list[tuple[bytes | None, bytes | None]]:
    from tests.pipeline.mongo_events import event

    out: list[tuple[bytes | None, bytes | None]] = []
    for i in indexes:
        c = SOURCE[i]
        if c.op == "t":
            continue
        ts = 1_700_000_000_000 + 1000 * i
        after = None if c.op == "d" else {"ver": c.ver}
        out.append(event(c.op, c.key, ts, after=after))
    return out


RENDER = {caps.ROWS: rows_records, caps.DATASTREAM: datastream_records,
          caps.DOCUMENTS: document_records}
TOPIC = {caps.ROWS: "m.public.t", caps.DATASTREAM: "m.public.t", caps.DOCUMENTS: "m.shop.people"}
TABLE = {caps.ROWS: ("public", "t"), caps.DATASTREAM: ("public", "t"),
         caps.DOCUMENTS: ("shop", "people")}


# -- one cell ------------------------------------------------------------------------------

@dataclass
class Run:
    """One cell's configuration, where its events go and how its target is read."""

    cell: Cell
    tmp: Path
    props: dict[str, Any]
    spark: Any = None
    kafka: Any = None
    jdbc: Any = None
    topic: str = ""

    @property
    def config(self) -> Path:
        path = self.tmp / "pipeline.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()))
        return path

    def deliver(self, run: int) -> int:
        """Writes run `run`'s deliveries where the reader reads; the number of records."""
        records = RENDER[self.cell.model](RUNS[run])
        if self.cell.reader == caps.FILES:
            folder = self.tmp / "files" / "2024" / "01" / "02" / "03" / f"{run:02d}"
            folder.mkdir(parents=True, exist_ok=True)
            lines = b"".join(v + b"\n" for _k, v in records if v is not None)
            (folder / f"events-{run}.jsonl").write_bytes(lines)
            return len(records)
        elif self.cell.reader == caps.KAFKA:
            from confluent_kafka import Producer

            producer = Producer({"bootstrap.servers": self.kafka.bootstrap})
            for key, value in records:
                producer.produce(self.topic, value, key, partition=0)
            assert producer.flush(30) == 0
            return len(records)
        else:
            from tests.pipeline.mongo_events import write

            write(self.tmp / "topics", records, self.topic)
        return len(records)

    def rows(self) -> list[dict[str, Any]]:
        schema, table = TABLE[self.cell.model]
        if self.cell.target in (caps.DELTA_RS, caps.DELTA_SPARK):
            from deltalake import DeltaTable

            return list(DeltaTable(str(self.tmp / "delta" / schema / table))
                        .to_pyarrow_table().to_pylist())
        if self.cell.target == caps.ICEBERG:
            catalog = self.props["headwater.pipeline.iceberg.catalog"]
            return list(self.spark.table(f"{catalog}.{schema}.{table}").toArrow().to_pylist())
        return list(self.jdbc.rows(table, bookkeeping=True))


def state_of(cell: Cell, rows: list[dict[str, Any]]) -> dict[int, int]:
    """The target's rows as key -> ver, per mode: scd1 the rows, scd2 the open versions, the
    changelog, which must hold each source event once, folded by sequence (newest event per
    key; a truncate clears older ones)."""
    def key(r: dict[str, Any]) -> int:
        return int(r["id"] if "id" in r else r["_id"])

    if cell.mode == "scd1":
        out = {key(r): r["ver"] for r in rows}
        assert len(out) == len(rows), "two rows for one key"
        return out
    if cell.mode == "scd2":
        current = [r for r in rows if r["__END_AT"] is None]
        out = {key(r): r["ver"] for r in current}
        assert len(out) == len(current), "two open versions for one key"
        return out
    seq = "__hw_sequence"
    state: dict[int, tuple[str, str, int | None]] = {}
    floor = max((r[seq] for r in rows if r["__op"] == "t"), default="")
    for r in rows:
        if r["__op"] == "t" or r[seq] < floor:
            continue
        k = key(r)
        if k not in state or r[seq] > state[k][0]:
            state[k] = (r[seq], r["__op"], r["ver"])
    def event(r: dict[str, Any]) -> tuple[str, int | None, int | None]:
        # (c and u alike: Datastream renders a primary-key change's insert as UPDATE-INSERT)
        if r["__op"] == "t":
            return ("t", None, None)
        if r["__op"] == "d":
            return ("d", key(r), None)
        return ("w", key(r), r["ver"])

    want = {(c.op if c.op in "dt" else "w", c.key, None if c.op == "d" else c.ver)
            for c in (SOURCE[i] for i in source_events(cell.model))}
    assert {event(r) for r in rows} == want, "the changelog's events are not the source's"
    assert len(rows) == len(want), f"{len(rows) - len(want)} re-deliveries appended again"
    return {k: v for k, (_s, op, v) in state.items() if op != "d" and v is not None}


def props_of(cell: Cell, tmp: Path, broker: Any = None, jdbc: Any = None,
             catalog: str = "") -> dict[str, Any]:
    props: dict[str, Any] = {
        "topic.prefix": "m", "connector.class": CLASSES[cell.model],
        "headwater.topics.dir": tmp / "topics", "headwater.pipeline.delta.path": tmp / "delta",
        "headwater.pipeline.checkpoint.dir": tmp / "checkpoint",
        "headwater.pipeline.mode": cell.mode, "headwater.pipeline.id": "matrix",
        "headwater.pipeline.trigger.interval.ms": 200,
        "headwater.pipeline.executors.min.records": 1_000_000,
    }
    # (without it, the files reader, or MongoDB with Datastream's format, means Datastream)
    props["headwater.event.format"] = "datastream" if cell.model == caps.DATASTREAM \
        else "debezium"
    if cell.reader == caps.FILES:
        props["headwater.pipeline.source"] = caps.FILES
        props["headwater.pipeline.datastream.files.dir"] = tmp / "files"
    elif cell.reader == caps.KAFKA:
        props.update({"headwater.topics.store": "kafka",
                      "bootstrap.servers": broker.bootstrap if broker else "127.0.0.1:1"})
    if cell.target == caps.DELTA_SPARK:
        props["headwater.pipeline.delta.writer"] = "spark"
    elif cell.target == caps.ICEBERG:
        props.update({"headwater.pipeline.target": "iceberg",
                      "headwater.pipeline.iceberg.warehouse": tmp / "iceberg",
                      "headwater.pipeline.iceberg.catalog": catalog or "matrix"})
    elif cell.target == caps.JDBC:
        props.update(jdbc.props() if jdbc else {
            "headwater.pipeline.target": "jdbc",
            "headwater.pipeline.jdbc.url": "jdbc:postgresql://127.0.0.1:1/none"})
    return props


# -- the matrix ----------------------------------------------------------------------------

def _order(cell: Cell) -> tuple[int, int]:
    # JDBC cells last: their Spark session (with the drivers) replaces the shared one.
    return (cell.target == caps.JDBC, cell.reader == caps.KAFKA)


ALL = sorted(caps.cells(), key=_order)
REFUSED = [c for c in ALL if caps.refusal(c) is not None]
SUPPORTED = [c for c in ALL if caps.refusal(c) is None]
RESULTS: dict[Cell, str] = {}


def cell_id(cell: Cell) -> str:
    return f"{cell.reader}-{cell.model}-{cell.target}-{cell.mode}"


@pytest.mark.parametrize("cell", REFUSED, ids=cell_id)
def test_refused_at_start(cell: Cell, tmp_path: Path) -> None:
    reason = caps.refusal(cell)
    assert reason is not None
    want = caps.message(cell, reason)
    with pytest.raises(ConfigError) as caught:
        load_pipeline_config(Run(cell, tmp_path, props_of(cell, tmp_path)).config)
    assert want in str(caught.value)
    assert str(caught.value).count("unsupported combination") == 1
    RESULTS[cell] = f"refused: {reason}"


def test_start_refuses_a_configuration_built_in_code(tmp_path: Path) -> None:
    """`start` checks the table too (a `PipelineConfig` made without the file), before it
    touches Spark or the target."""
    from headwater.pipeline.config import PipelineConfig

    cfg = PipelineConfig("m", tmp_path / "topics", tmp_path / "delta", tmp_path / "ck", "m.*",
                         target="iceberg", source=caps.FILES, event_model=caps.DOCUMENTS)
    with pytest.raises(caps.UnsupportedCombination, match="the files destination holds "
                       "Datastream events only"):
        start(None, cfg, once=True)


def test_the_event_model_comes_from_the_configuration(tmp_path: Path) -> None:
    def model(**props: Any) -> str | None:
        path = tmp_path / "p.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in {"topic.prefix": "m", **props}.items()))
        return load_pipeline_config(path).event_model

    assert model() is None  # undeclared: each topic's first record tells
    assert model(**{"connector.class": "mongodb"}) == caps.DOCUMENTS
    assert model(**{"connector.class": CLASSES[caps.ROWS]}) == caps.ROWS
    assert model(**{"connector.class": CLASSES[caps.ROWS],
                    "headwater.event.format": "datastream"}) == caps.DATASTREAM
    assert model(**{"headwater.pipeline.source": caps.FILES}) == caps.DATASTREAM
    # MongoDB's Datastream events are Datastream rows (_id, payload), not documents
    assert model(**{"connector.class": "mongodb",
                    "headwater.event.format": "datastream"}) == caps.DATASTREAM
    assert model(**{"connector.class": "mongodb",
                    "headwater.pipeline.source": caps.FILES}) == caps.DATASTREAM
    assert model(**{"connector.class": "mongodb",
                    "headwater.event.format": "debezium"}) == caps.DOCUMENTS
    with pytest.raises(ConfigError, match=r"connector\.class: unknown value 'nosuch'"):
        model(**{"connector.class": "nosuch"})


def _marks(cell: Cell) -> list[Any]:
    return [] if (cell.reader, cell.target) in FAST else [pytest.mark.long]


@pytest.mark.parametrize("cell", [pytest.param(c, marks=_marks(c), id=cell_id(c))
                                  for c in SUPPORTED])
def test_scenario(cell: Cell, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    long = bool(request.config.getoption("--long") or os.environ.get("HEADWATER_LONG"))
    run = Run(cell, tmp_path, {}, topic=TOPIC[cell.model])
    if (cell.reader, cell.target) in FAST and not long:
        pass  # the batch step into delta-rs: no Spark session
    elif cell.target == caps.JDBC:
        from tests.pipeline_jdbc.conftest import make_target

        run.spark = request.getfixturevalue("jdbc_spark")
        run.jdbc = make_target("postgres", request.getfixturevalue("pg"), request)
    else:
        run.spark = request.getfixturevalue("spark")
    if cell.reader == caps.KAFKA:
        from tests.kafka.conftest import unique

        run.kafka = request.getfixturevalue("kafka")
        run.topic = unique("m.public.t")
        run.kafka.create_topic(run.topic, partitions=1)
    run.props = props_of(cell, tmp_path, run.kafka, run.jdbc,
                         catalog=f"matrix{abs(hash(cell_id(cell))) % 10**6}")
    if cell.reader == caps.KAFKA:
        run.props["headwater.pipeline.topics"] = run.topic
    cfg = load_pipeline_config(run.config)
    assert cfg.event_model == cell.model
    # CI's short form, and every cell but Kafka's with HEADWATER_MATRIX_STEP=1: the query's
    # batch step itself (what `start`'s foreachBatch calls), without the streaming query,
    # whose Python worker costs seconds (and on a loaded machine misses Spark's fixed 10 s
    # connect-back timeout).
    query_runs = cell.reader == caps.KAFKA or (
        long and not os.environ.get("HEADWATER_MATRIX_STEP"))
    ends: dict[str, int] = {}
    for n in range(len(RUNS)):
        count = run.deliver(n)
        if not query_runs:
            batch_step(run, cfg, n, count, ends)
            continue
        if n == 0 and long:
            kill_after_first_batch(run)
        query = start(run.spark, cfg, once=True)
        try:
            query.awaitTermination()
            assert query.exception() is None
        finally:
            from headwater.pipeline.runner import close_query

            close_query(query)
    assert state_of(cell, run.rows()) == expected(cell.model)
    RESULTS[cell] = "pass" + (" (batch step, no query)" if not query_runs else
                              " (kill -9 after the first batch)" if long else "")


def batch_step(run: Run, cfg: Any, batch_id: int, count: int, ends: dict[str, int]) -> None:
    """One batch of the topic log's or the files' newly delivered records, as the query's
    `foreachBatch` applies it."""
    from headwater.pipeline.runner import apply_batch, make_target

    target = make_target(cfg, run.spark)
    if run.cell.reader == caps.FILES:
        from headwater.pipeline.datastream.apply import apply_files
        from headwater.pipeline.datastream.files import LOG_NAME, FileLog, list_files

        log_path = cfg.checkpoint_dir / LOG_NAME
        files = FileLog(log_path)
        first = len(files.lines)
        end = files.add(list_files(cfg.files_dir, cfg.files_format))
        apply_files(cfg.files_dir, log_path, first, end, batch_id, cfg.mode, target)
        return
    first = ends.get(run.topic, 0)
    ends[run.topic] = first + count
    apply_batch(cfg.topics_dir, {run.topic: (first, first + count)}, batch_id, cfg, target,
                spark=run.spark)


def kill_after_first_batch(run: Run) -> None:
    """`headwater pipeline` in a process of its own, killed (-9) once its first batch is
    committed (or after 90 s); the in-process run then resumes from the checkpoint."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "headwater.cli", "pipeline", str(run.config)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + scaled(90)
        commits = run.tmp / "checkpoint" / "commits"
        while time.monotonic() < deadline and proc.poll() is None:
            if commits.is_dir() and any(p.name.isdigit() for p in commits.iterdir()):
                break
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(30)


def test_print_matrix(capsys: pytest.CaptureFixture[str]) -> None:
    """The matrix: every cell, pass / refused with the table's reason / not run here."""
    def outcome(cell: Cell) -> str:
        reason = caps.refusal(cell)
        if cell in RESULTS:
            return RESULTS[cell]
        return "not run (--long)" if reason is None else f"refused (not run here): {reason}"

    lines = [f"{cell_id(c):45s} {outcome(c)}" for c in caps.cells()]
    with capsys.disabled():
        print("\ncapabilities matrix (reader-model-target-mode):\n" + "\n".join(lines))
    assert RESULTS, "no cell ran"
