"""Avro through Kafka: PostgreSQL captured with Confluent's AvroConverter (key and value)
against a schema registry, the produced bytes decoded with fastavro and the registry's schema,
and the pipeline reading them gives the same Delta table as the JSON path.

The registry is the in-test one (tests/unit/fake_schema_registry.py: Confluent's documented
REST API, not Confluent's server)."""

from __future__ import annotations

import io
import json
import struct
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastavro
import pytest

from headwater.testing.kafka_cluster import KafkaCluster
from tests.integration.postgres.conftest import Env, wait_for
from tests.kafka.conftest import kafka_props, read_topic, unique
from tests.kafka.test_capture_postgres import current_lsn, run_pipeline_once, stored_lsn
from tests.unit.fake_schema_registry import FakeSchemaRegistry

pytestmark = [pytest.mark.integration, pytest.mark.slow]

AVRO = "io.confluent.connect.avro.AvroConverter"


@pytest.fixture()
def registry() -> Iterator[str]:
    with FakeSchemaRegistry() as fake:
        yield fake.url


def avro_decode(url: str, data: bytes) -> tuple[dict[str, Any], Any]:
    assert data[0] == 0, "not Confluent's wire format"
    (schema_id,) = struct.unpack(">I", data[1:5])
    with urllib.request.urlopen(f"{url}/schemas/ids/{schema_id}") as response:
        schema = json.loads(json.loads(response.read())["schema"])
    parsed = fastavro.parse_schema(schema)
    return schema, fastavro.schemaless_reader(io.BytesIO(data[5:]), parsed, None)


def table(path: Path) -> list[dict[str, Any]]:
    from headwater.pipeline.delta_target import read_table

    return sorted(read_table(path).to_pylist(), key=lambda r: r["id"])


def test_avro_and_json_paths_give_the_same_table(env: Env, kafka: KafkaCluster, spark: Any,
                                                 registry: str) -> None:
    env.sql("CREATE TABLE t (id int PRIMARY KEY, name text, price numeric(10,2), d date, "
            "at timestamp, ok boolean, raw bytea, f float8, tags text[])")
    env.sql("INSERT INTO t SELECT g, 'n' || g, g * 1.25, date '2024-01-01' + g, "
            "timestamp '2024-01-01 10:00' + g * interval '1 minute', g % 2 = 0, "
            "decode(lpad(to_hex(g), 4, '0'), 'hex'), g / 3.0, ARRAY['a', g::text] "
            "FROM generate_series(1, 120) g")
    env.conn.commit()
    runs: dict[str, dict[str, Any]] = {}
    caps = []
    try:
        for fmt in ("json", "avro"):
            prefix = unique(f"av{fmt}")
            extra: dict[str, Any] = {
                "topic.prefix": prefix, "slot.name": f"{env.slot}_{fmt}",
                "publication.name": f"pub_{env.slot}_{fmt}",
                "headwater.pipeline.delta.path": env.tmp / fmt / "delta",
                "headwater.pipeline.checkpoint.dir": env.tmp / fmt / "checkpoint",
                "headwater.pipeline.max.records.per.trigger": 50,
            }
            if fmt == "avro":
                extra.update({"key.converter": AVRO, "value.converter": AVRO,
                              "key.converter.schema.registry.url": registry,
                              "value.converter.schema.registry.url": registry})
            props = kafka_props(kafka, **extra)
            runs[fmt] = props
            caps.append(env.capture(props))
        for cap in caps:
            wait_for(lambda cap=cap: cap.runtime.metrics.snapshot_completed, what="snapshot")
        env.sql("UPDATE t SET name = name || 'x', price = price + 1 WHERE id % 3 = 0")
        env.sql("UPDATE t SET tags = NULL, at = NULL WHERE id % 5 = 0")
        env.sql("DELETE FROM t WHERE id % 7 = 0")
        env.sql("INSERT INTO t (id, name, price) SELECT g, 'new', 0.5 FROM "
                "generate_series(500, 520) g")
        env.conn.commit()
        target = current_lsn(env)
        for props in runs.values():
            wait_for(lambda p=props: stored_lsn(kafka.bootstrap, p["offset.storage.topic"])
                     >= target, timeout=60, what="capture caught up")
    finally:
        for cap in caps:
            cap.stop()
        with env.pg.connect().cursor() as cur:
            for fmt in runs:
                cur.execute("SELECT pg_drop_replication_slot(slot_name) FROM "
                            "pg_replication_slots WHERE slot_name = %s AND NOT active",
                            (f"{env.slot}_{fmt}",))
            cur.connection.commit()

    # The Avro bytes: Confluent's wire format, decodable with the registry's schema.
    records = read_topic(kafka.bootstrap, f"{runs['avro']['topic.prefix']}.public.t")
    assert records
    for rec in records:
        assert rec.key is not None
        key_schema, key = avro_decode(registry, rec.key)
        assert key_schema["type"] == "record" and set(key) == {"id"}
        if rec.value is None:
            continue
        schema, value = avro_decode(registry, rec.value)
        assert schema["name"] == "Envelope" and value["op"] in ("r", "c", "u", "d")
        row = value["after"] or value["before"]
        assert row["id"] == key["id"]
    snap = next(avro_decode(registry, r.value)[1]["after"] for r in records
                if r.value is not None and avro_decode(registry, r.key or b"")[1]["id"] == 2)
    assert snap["name"] == "n2" and snap["raw"] == b"\x00\x02" and snap["tags"] == ["a", "2"]

    # The pipeline reads both; the tables are the same, and equal to the source.
    for props in runs.values():
        env.prefix = props["topic.prefix"]
        run_pipeline_once(spark, env.config(props))
    json_rows = table(env.tmp / "json" / "delta" / "public" / "t")
    avro_rows = table(env.tmp / "avro" / "delta" / "public" / "t")
    assert avro_rows == json_rows
    assert [r["id"] for r in json_rows] == [r[0] for r in env.sql("SELECT id FROM t ORDER BY id")]
