"""MongoDB documents and Datastream events read from Kafka by the pipeline: the same records,
once in a 3-partition Kafka topic (by key, as capture writes) and once in the local topic log,
give the same Delta table.  The Kafka configuration declares no connector (a pipeline-only
file), so the topic's model is learnt from its first value, as for the local log.  The
reader x model x target cells run the shared scenario in tests/pipeline/test_matrix.py
(`--long`); this test adds re-deliveries across partitions and batches, patches and deletes."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from headwater.pipeline import capabilities as caps
from headwater.pipeline import kafka_batch
from headwater.pipeline.delta_target import read_table
from headwater.testing.kafka_cluster import KafkaCluster
from tests.kafka.conftest import unique
from tests.kafka.test_capture_postgres import run_pipeline_once
from tests.kafka.test_kafka_tasks import into_kafka
from tests.pipeline import mongo_events as m

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def workload(seed: int) -> list[tuple[bytes | None, bytes | None]]:
    """Inserts, full updates, patches, deletes with their tombstones, over 30 documents,
    in time order, then some of them delivered a second time."""
    rng = random.Random(seed)
    out: list[tuple[bytes | None, bytes | None]] = []
    live: dict[int, int] = {}
    ts = 1_700_000_000_000
    for _ in range(240):
        ts += rng.randint(1, 3)
        n = rng.randrange(30)
        if n not in live:
            live[n] = 0
            out.append(m.event("c", m.oid(n), ts, after={"name": f"p{n}", "v": 0}))
        elif rng.random() < 0.15:
            del live[n]
            out.append(m.event("d", m.oid(n), ts))
            out.append(m.tombstone(m.oid(n)))
        elif rng.random() < 0.5:
            live[n] += 1
            out.append(m.event("u", m.oid(n), ts, updated={"v": live[n], "tag": f"t{ts}"}))
        else:
            live[n] += 1
            out.append(m.event("u", m.oid(n), ts, after={"name": f"p{n}", "v": live[n]}))
    again = [r for r in out if r[1] is not None and rng.random() < 0.1]
    return out + again


def props(tmp: Path, prefix: str, **extra: Any) -> dict[str, Any]:
    return {"topic.prefix": prefix, "headwater.topics.dir": tmp / "topics",
            "headwater.pipeline.delta.path": tmp / "delta",
            "headwater.pipeline.checkpoint.dir": tmp / "checkpoint",
            "headwater.pipeline.max.records.per.trigger": 53, **extra}


def config(tmp: Path, values: dict[str, Any]) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "pipeline.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return path


def rows(path: Path) -> list[tuple[Any, ...]]:
    table = read_table(path)
    names = [n for n in table.column_names if not n.startswith("__hw")]
    return sorted(tuple(str(r[c]) for c in names) for r in table.to_pylist())


def datastream_workload(seed: int) -> list[tuple[bytes | None, bytes | None]]:
    """Datastream events of one table (inserts, updates, deletes over 30 keys, in source
    order), then some delivered a second time."""
    import orjson

    from tests.unit.datastream.test_pipeline_order import event

    rng = random.Random(seed)
    out: list[tuple[bytes | None, bytes | None]] = []
    live: dict[int, int] = {}
    for i in range(240):
        n = rng.randrange(30)
        pos = [1000 + i, 1000 + i, 1, 0]
        if n not in live:
            live[n] = 1
            value = event(n, pos, ver=1, change="INSERT")
        elif rng.random() < 0.15:
            del live[n]
            value = event(n, pos, ver=0, deleted=True)
        else:
            live[n] += 1
            value = event(n, pos, ver=live[n])
        out.append((orjson.dumps({"id": n}), orjson.dumps(value)))
    return out + [r for r in out if rng.random() < 0.1]


@pytest.mark.parametrize("model", [caps.DOCUMENTS, caps.DATASTREAM])
def test_other_models_from_kafka_equal_the_local_logs(
        tmp_path: Path, kafka: KafkaCluster, spark: Any, model: str,
        caplog: pytest.LogCaptureFixture) -> None:
    """Also with the executors' stage on for every batch: its Kafka tasks refuse the topic
    (Debezium rows only) and the driver applies it."""
    prefix = unique("kdoc")
    if model == caps.DOCUMENTS:
        topic, table, records = f"{prefix}.shop.people", ("shop", "people"), workload(7)
        declared = {"connector.class": "io.debezium.connector.mongodb.MongoDbConnector"}
    else:
        topic, table, records = f"{prefix}.public.t", ("public", "t"), datastream_workload(8)
        declared = {"connector.class": "io.debezium.connector.postgresql.PostgresConnector",
                    "headwater.event.format": "datastream"}
    m.write(tmp_path / "local" / "topics", records, topic)
    into_kafka(kafka, [(0, k, v) for k, v in records], topic)

    run_pipeline_once(spark, config(tmp_path / "local", props(tmp_path / "local", prefix,
                                                              **declared)))
    run_pipeline_once(spark, config(tmp_path / "kafka", props(
        tmp_path / "kafka", prefix, **{"headwater.topics.store": "kafka",
                                       "bootstrap.servers": kafka.bootstrap,
                                       "headwater.pipeline.executors.min.records": 1})))

    assert kafka_batch._LEARNT[(kafka.bootstrap, topic)] == model
    assert "the executors' Kafka read failed" not in caplog.text  # refused, not failed
    local = rows(tmp_path / "local" / "delta" / table[0] / table[1])
    assert local and rows(tmp_path / "kafka" / "delta" / table[0] / table[1]) == local
