"""The public Spark source `headwater` (`headwater.spark.register`): batch and streaming reads of
a topic log give every change event as a typed row, equal to the pipeline's event-by-event
changelog decode (the reference), read in several partitions; a read outside the column-wise
shape, bad options and a table changed after the schema was taken; and what Spark 4.1's own
AUTO CDC offers (nothing: the refusal is shown here and in docs/spark-source.md)."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from headwater import spark as hw_spark
from headwater.model.topic import TopicRecord
from headwater.pipeline import columnar
from headwater.pipeline.decode import decode_topic
from headwater.pipeline.source import read_range
from headwater.topics.log import TopicLog
from tests.pipeline.test_columnar import (
    ROW_FIELDS,
    TOPIC,
    document,
    f,
    pg_source,
    row,
    workload,
    write,
)

META = ["__op", "__hw_sequence", "__source_ts_ms", "__ts_ms", "__lsn", "__tx_id", "__snapshot",
        "__offset", "__topic", "__partition", "__source_table"]


def reference(root: Path, topic: str = TOPIC) -> list[dict[str, Any]]:
    """Every event by the pipeline's event-by-event decoder, as the source's rows."""
    changes = decode_topic(topic, list(read_range(root, topic, 0, 1 << 62)))
    rows = columnar.changelog_table(changes).to_pylist()
    table = f"{changes.schema_name}.{changes.table_name}"
    return [{**r, "__topic": topic, "__partition": 0, "__source_table": table} for r in rows]


def collected(frame: Any) -> list[dict[str, Any]]:
    return [r.asDict() for r in frame.orderBy("__topic", "__offset").collect()]


def as_expected(rows: list[dict[str, Any]], spark_rows: list[dict[str, Any]]) -> None:
    assert len(spark_rows) == len(rows)
    for want, got in zip(rows, spark_rows, strict=True):
        assert set(got) == set(want)
        for k, v in want.items():
            if isinstance(v, dt.datetime) and v.tzinfo is not None:
                # Spark hands a TIMESTAMP back naive, in the machine's local time
                assert got[k] is not None and got[k].astimezone(dt.UTC) == v, (k, got[k], v)
            else:
                assert got[k] == v, (k, got[k], v)


@pytest.fixture()
def hw(spark: Any) -> Any:
    hw_spark.register(spark)
    return spark


def test_batch_read_gives_every_event_typed(hw: Any, tmp_path: Path) -> None:
    rng = random.Random(3)
    records = workload(rng, mysql=False, toast=True, n=300)
    write(tmp_path / "topics", records, segment_bytes=1 << 14)
    frame = (hw.read.format("headwater").option("path", str(tmp_path / "topics"))
             .option("topic", TOPIC).option("partitionRecords", "100").load())
    types = dict(frame.dtypes)
    assert [n for n, _ in frame.dtypes] == [c["field"] for c in ROW_FIELDS] + META
    assert types["id"] == "int" and types["amount"] == "decimal(12,2)"
    assert types["at"] == "timestamp_ntz" and types["zts"] == "timestamp"
    assert types["day"] == "date" and types["blob"] == "binary" and types["small"] == "smallint"
    assert types["__hw_sequence"] == "string" and types["__offset"] == "bigint"
    assert types["__source_ts_ms"] == "bigint" and types["__source_table"] == "string"
    assert types["__partition"] == "int"
    assert frame.rdd.getNumPartitions() >= 3  # offset ranges read in the executors
    want = reference(tmp_path / "topics")
    got = collected(frame)
    as_expected(want, got)
    assert {r["__op"] for r in got} == {"c", "u", "d", "r"}
    assert {r["__source_table"] for r in got} == {"public.t"}
    assert any(isinstance(r["amount"], Decimal) for r in got)
    # the sequence is the change order AUTO CDC's sequence_by needs: text, in source order
    stream = [r for r in got if r["__snapshot"] == "false"]
    assert stream and all(len(r["__hw_sequence"]) == len(got[0]["__hw_sequence"]) for r in got)


def test_a_column_added_midway_is_read_event_by_event(hw: Any, tmp_path: Path) -> None:
    """Two value schemas in one range leave the column-wise shape; the row columns are those of
    the first and last event, and the earlier events have null in the new column."""
    rng = random.Random(4)
    wider = [*ROW_FIELDS, f("note", "string")]
    records = [document("c", k, row(rng, k), pg_source(100 + k, 90 + k)) for k in range(5)]
    records += [document("u", k, {**row(rng, k), "note": f"n{k}"}, pg_source(200 + k, 190 + k),
                         fields=wider) for k in range(5)]
    write(tmp_path / "topics", records)
    with pytest.raises(columnar.NotColumnar):
        columnar.decode_changelog(TOPIC, columnar.scan(tmp_path / "topics", TOPIC, 0, 10,
                                                       columnar.Positions()))
    frame = (hw.read.format("headwater").option("path", str(tmp_path / "topics"))
             .option("topic", TOPIC).load())
    got = collected(frame)
    assert [r["note"] for r in got] == [None] * 5 + [f"n{k}" for k in range(5)]
    want = [{"note": None, **r} for r in reference(tmp_path / "topics")]
    as_expected(want, got)


def test_stream_reads_all_rows_over_two_triggers(hw: Any, tmp_path: Path) -> None:
    rng = random.Random(5)
    records = workload(rng, mysql=True, n=200, duplicates=False)
    half = len(records) // 2
    root = tmp_path / "topics"
    write(root, records[:half])
    frame = (hw.readStream.format("headwater").option("path", str(root))
             .option("topic", "s.public.*").option("partitionRecords", "40").load())
    name = f"hw_{rng.randrange(1 << 30)}"
    query = (frame.writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    try:
        query.processAllAvailable()
        first = hw.table(name).count()
        assert first == sum(1 for _k, v in records[:half] if v is not None)
        with TopicLog(root) as log:
            log.append({TOPIC: [TopicRecord(k, v, 0) for k, v in records[half:]]})
        query.processAllAvailable()
        assert query.exception() is None
        got = collected(hw.table(name))
    finally:
        query.stop()
    batches = [p["batchId"] for p in query.recentProgress if p["numInputRows"]]
    assert len(batches) >= 2
    as_expected(reference(root), got)
    assert {r["__source_table"] for r in got} == {"shop.t"}


def test_a_table_changed_after_the_schema_was_taken_is_an_error(hw: Any, tmp_path: Path
                                                                ) -> None:
    """A streaming query fixes its schema when it starts; an event with a column outside it
    stops the query naming the column, not a row with the column silently dropped."""
    rng = random.Random(6)
    root = tmp_path / "topics"
    write(root, [document("c", 1, row(rng, 1), pg_source(100, 90))])
    frame = (hw.readStream.format("headwater").option("path", str(root))
             .option("topic", TOPIC).load())
    query = (frame.writeStream.format("memory").queryName(f"hw_{rng.randrange(1 << 30)}")
             .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    try:
        query.processAllAvailable()
        with TopicLog(root) as log:
            k, v = document("u", 1, {**row(rng, 1), "note": "x"}, pg_source(200, 190),
                            fields=[*ROW_FIELDS, f("note", "string")])
            log.append({TOPIC: [TopicRecord(k, v, 0)]})
        with pytest.raises(Exception, match="column\\(s\\) note are not in the read's schema"):
            query.processAllAvailable()
    finally:
        query.stop()


@pytest.mark.parametrize(("options", "message"), [
    ({"topic": TOPIC, "kafka.bootstrap.servers": "x:9092"},
     "unknown option\\(s\\) kafka.bootstrap.servers for store local"),
    ({"topic": TOPIC, "store": "files"}, "store: 'files' is not local or kafka"),
    ({"topic": "nope.*"}, "no topic in .* matches 'nope.\\*'"),
    ({}, "option topic .* is missing"),
    ({"topic": TOPIC, "partitionRecords": "0"}, "partitionRecords must be a positive integer"),
])
def test_bad_options_are_refused_by_name(hw: Any, tmp_path: Path, options: dict[str, str],
                                         message: str) -> None:
    write(tmp_path / "topics", [document("c", 1, row(random.Random(1), 1), pg_source(1, 1))])
    with pytest.raises(Exception, match=message):
        hw.read.format("headwater").option("path", str(tmp_path / "topics")).options(
            **options).load().collect()


def test_a_value_without_its_schema_is_refused_naming_where(hw: Any, tmp_path: Path) -> None:
    """Schemaless JSON values (`schemas.enable=false`; in Kafka, Avro too) cannot give the
    table's columns: an error naming the topic and offset, not a KeyError from deep inside."""
    import orjson

    key, value = document("c", 1, row(random.Random(2), 1), pg_source(1, 1))
    bare = orjson.dumps(orjson.loads(value)["payload"])
    write(tmp_path / "topics", [(key, value), (key, bare)])
    with pytest.raises(Exception, match=f"{TOPIC} offset 1: the value is not a Debezium JSON"):
        hw.read.format("headwater").option("path", str(tmp_path / "topics")).option(
            "topic", TOPIC).load()


def test_the_docs_merge_example_gives_the_pipelines_net_rows(hw: Any, tmp_path: Path) -> None:
    """docs/spark-source.md's MERGE example, run as it stands, on duplicated and reordered
    events: the Delta table holds the pipeline's net rows (deletes gone)."""
    rng = random.Random(8)
    records = workload(rng, mysql=False, n=300, keys=30)
    write(tmp_path / "topics", records, segment_bytes=1 << 14)
    text = (Path(__file__).parents[2] / "docs" / "spark-source.md").read_text()
    block = text.split("<!-- example: merge -->\n```python\n", 1)[1].split("```", 1)[0]
    target = tmp_path / "customers"
    exec(block, {"spark": hw, "topics_dir": str(tmp_path / "topics"),
                 "target_dir": str(target), "checkpoint_dir": str(tmp_path / "ckpt")})
    net = columnar.read_net(tmp_path / "topics", TOPIC, 0, len(records), columnar.Positions())
    assert net is not None
    names = [c.name for c in net.columns]
    want = sorted(([r[n] for n in names] for r in net.rows.to_pylist() if r["__hw_op"] != "d"),
                  key=lambda r: r[0])
    got = sorted(([r[n] for n in names] for r in
                  (x.asDict() for x in hw.read.format("delta").load(str(target)).collect())),
                 key=lambda r: r[0])
    assert 0 < len(want) < 30 and len(got) == len(want)
    zts = names.index("zts")
    for w, g in zip(want, got, strict=True):
        assert g[zts] == (None if w[zts] is None else w[zts].astimezone().replace(tzinfo=None))
        assert g[:zts] + g[zts + 1:] == w[:zts] + w[zts + 1:]


def test_spark_4_1_has_no_auto_cdc(hw: Any) -> None:
    """Spark Declarative Pipelines ship with pyspark 4.1, but without AUTO CDC (Databricks'
    pipelines have it): no `create_auto_cdc_flow` in `pyspark.pipelines`, and Spark's SQL
    parser refuses an AUTO CDC flow; so the docs show the Databricks example as not runnable
    and a MERGE by hand that is."""
    import pyspark
    from pyspark import pipelines as dp
    from pyspark.errors import ParseException

    assert pyspark.__version__.startswith("4.1")
    assert hasattr(dp, "create_streaming_table") and hasattr(dp, "append_flow")
    assert not hasattr(dp, "create_auto_cdc_flow")
    with pytest.raises(ImportError):
        # (absent in pyspark 4.1: what this asserts, so the stubs rightly lack it too)
        from pyspark.pipelines import create_auto_cdc_flow  # type: ignore[attr-defined]  # noqa: F401
    with pytest.raises(ParseException):
        hw.sql("CREATE FLOW f AS AUTO CDC INTO customers FROM STREAM(changes) KEYS (id) "
               "SEQUENCE BY __hw_sequence")
