"""The public Spark source `headwater` over Kafka topics (`store=kafka`): a topic of two
partitions read as a batch and as a stream over two triggers gives every event as the
pipeline's event-by-event decoder reads it, with Kafka's own partition and offset."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from headwater import spark as hw_spark
from headwater.pipeline import columnar, kafka_source
from headwater.pipeline.decode import decode_topic
from headwater.testing.kafka_cluster import KafkaCluster
from tests.kafka.conftest import unique
from tests.pipeline.test_columnar import workload
from tests.pipeline.test_public_source import as_expected

pytestmark = pytest.mark.integration

Records = list[tuple[bytes | None, bytes | None]]


def produce(kafka: KafkaCluster, topic: str, records: Records,
            placed: dict[int, list[tuple[int, bytes | None, bytes | None]]]) -> None:
    """Each record to partition (key id % 2), noting (offset, key, value) per partition."""
    import orjson
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for key, value in records:
        assert key is not None
        p = orjson.loads(key)["payload"]["id"] % 2
        offset = len(placed.setdefault(p, []))
        placed[p].append((offset, key, value))
        if value is None:
            producer.produce(topic, key=key, partition=p)
        else:
            producer.produce(topic, value, key, partition=p)
    assert producer.flush(30) == 0


def reference(topic: str, placed: dict[int, list[tuple[int, bytes | None, bytes | None]]]
              ) -> list[dict[str, Any]]:
    """Every event by the event-by-event decoder, partition by partition, as the source's
    rows (Kafka's offsets, not the decoders' virtual ones)."""
    rows: list[dict[str, Any]] = []
    for p, recs in sorted(placed.items()):
        changes = decode_topic(topic, [(kafka_source.virtual_offset(o, p), k, v)
                                       for o, k, v in recs])
        table = f"{changes.schema_name}.{changes.table_name}"
        rows += [{**r, "__offset": r["__offset"] >> kafka_source.PARTITION_BITS,
                  "__topic": topic, "__partition": p, "__source_table": table}
                 for r in columnar.changelog_table(changes).to_pylist()]
    return rows


def collected(frame: Any) -> list[dict[str, Any]]:
    return [r.asDict() for r in frame.orderBy("__partition", "__offset").collect()]


def test_kafka_topics_batch_and_stream(kafka: KafkaCluster, spark: Any, tmp_path: Path) -> None:
    hw_spark.register(spark)
    rng = random.Random(11)
    topic = unique("hw.public.t")
    kafka.create_topic(topic, partitions=2)
    records = workload(rng, mysql=False, n=200, keys=20)
    half = len(records) // 2
    placed: dict[int, list[tuple[int, bytes | None, bytes | None]]] = {}
    produce(kafka, topic, records[:half], placed)

    def reader(kind: Any) -> Any:
        return (kind.format("headwater").option("store", "kafka")
                .option("kafka.bootstrap.servers", kafka.bootstrap)
                .option("topic", topic).option("partitionRecords", "40"))

    frame = reader(spark.read).load()
    assert frame.rdd.getNumPartitions() >= 3
    assert dict(frame.dtypes)["__partition"] == "int"
    as_expected(reference(topic, placed), collected(frame))

    name = f"hwk_{rng.randrange(1 << 30)}"
    query = (reader(spark.readStream).load().writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    try:
        query.processAllAvailable()
        assert spark.table(name).count() == sum(1 for _k, v in records[:half] if v is not None)
        produce(kafka, topic, records[half:], placed)
        query.processAllAvailable()
        assert query.exception() is None
        got = collected(spark.table(name))
    finally:
        query.stop()
    assert len([p for p in query.recentProgress if p["numInputRows"]]) >= 2
    want = reference(topic, placed)
    assert {r["__partition"] for r in want} == {0, 1}
    as_expected(want, got)
