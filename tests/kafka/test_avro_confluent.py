"""Avro on the wire, checked by a real implementation (issue 26, Must show 5): PostgreSQL with
a wide type mix captured into Kafka four times - once as JSON, once as Avro under each subject
name strategy - and every Avro key and value, decoded by confluent-kafka's own
`SchemaRegistryClient` + `AvroDeserializer`, equals the JSON form of the same event.  The headers
travel with the records: SimpleHeaderConverter text on the Avro runs (a Connect worker's
default), JsonConverter envelopes on the JSON run (`header.converter`), the same values.

The registry is the tests' own (tests/unit/fake_schema_registry.py, Confluent's documented REST
API): no schema registry server can be installed here (README).  The local topic log holds JSON
documents only, so Avro goes through Kafka (a local-log capture with AvroConverter is refused at
start: test_capture_refuses_non_json_converters_on_the_local_log)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from headwater.capture import build_runtime, load_connector_config
from headwater.config import ConfigError
from headwater.converters.headers import header_value
from headwater.testing.kafka_cluster import KafkaCluster
from tests.integration.postgres.conftest import Env, wait_for
from tests.kafka.conftest import kafka_props, read_topic, unique
from tests.kafka.test_capture_postgres import current_lsn, stored_lsn
from tests.unit.avro_confluent import ConfluentAvro, json_record
from tests.unit.fake_schema_registry import FakeSchemaRegistry

pytestmark = [pytest.mark.integration, pytest.mark.slow]

AVRO = "io.confluent.connect.avro.AvroConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"
STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
PREFIX = "wire"
# Processing times and the snapshot's position differ between two captures of the same events.
_PER_RUN = ("ts_ms", "ts_us", "ts_ns")
_SNAPSHOT_SOURCE = ("ts_ms", "ts_us", "ts_ns", "lsn", "sequence", "txId", "xmin")


@pytest.fixture()
def registry() -> Iterator[str]:
    with FakeSchemaRegistry() as fake:
        yield fake.url


def normalised(value: Any) -> Any:
    if not isinstance(value, dict) or "op" not in value:
        return value
    out = {k: v for k, v in value.items() if k not in _PER_RUN}
    source = dict(out["source"])
    source.pop("sequence", None)
    if out["op"] == "r":
        for name in _SNAPSHOT_SOURCE:
            source.pop(name, None)
    out["source"] = source
    return out


def headers_of(rec: Any) -> dict[str, Any]:
    """Header values (either converter's form); runId differs per run, taskId's Values text
    `0` reads as a number."""
    return {k: str(header_value(v)) if k.endswith("taskId") else header_value(v)
            for k, v in rec.headers or [] if not k.endswith("runId")}


def test_confluent_deserializer_decodes_avro_records_into_the_json_records(
        env: Env, kafka: KafkaCluster, registry: str) -> None:
    env.sql("CREATE TABLE w (id int PRIMARY KEY, price numeric(10,2), anynum numeric, d date, "
            "t time(3), ts timestamp(3), tstz timestamptz, raw bytea, tags text[], nums int[], "
            "f4 real, f8 float8, ok boolean, u uuid, j jsonb, small smallint, big bigint, "
            "note text)")
    env.sql("INSERT INTO w SELECT g, g * 1.25, g / 7.0, date '2024-01-01' + g, "
            "time '10:00:00.123' + g * interval '1 second', "
            "timestamp '2024-01-01 10:00:00.5' + g * interval '1 minute', "
            "timestamptz '2024-01-01 10:00:00+02' + g * interval '1 hour', "
            "decode(lpad(to_hex(g), 4, '0'), 'hex'), ARRAY['a', g::text, NULL], ARRAY[g, -g], "
            "g / 3.0, g / 3.0, g % 2 = 0, gen_random_uuid(), jsonb_build_object('g', g), "
            "g, g * 10000000000, CASE WHEN g % 3 = 0 THEN NULL ELSE 'n' || g END "
            "FROM generate_series(1, 40) g")
    env.conn.commit()
    runs: dict[str, dict[str, Any]] = {}
    caps = []
    try:
        for run in ("json", *STRATEGIES):
            name = run.lower().removesuffix("strategy")
            props = kafka_props(
                kafka, **{
                    "topic.prefix": PREFIX, "slot.name": f"{env.slot}_{name}",
                    "publication.name": f"pub_{env.slot}_{name}",
                    "topic.creation.default.partitions": 1,  # one order per topic to compare
                    "time.precision.mode": "connect",  # Kafka's Date/Time/Timestamp: Avro's too
                    "transforms": "route",
                    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
                    "transforms.route.regex": "(.*)",
                    "transforms.route.replacement": f"{unique(name)}.$1",
                })
            if run == "json":
                props["header.converter"] = JSON
            else:
                for side in ("key", "value"):
                    props[f"{side}.converter"] = AVRO
                    props[f"{side}.converter.schema.registry.url"] = registry
                    props[f"{side}.converter.{side}.subject.name.strategy"] = (
                        f"io.confluent.kafka.serializers.subject.{run}")
            runs[run] = props
            caps.append(env.capture(props))
        for cap in caps:
            wait_for(lambda cap=cap: cap.runtime.metrics.snapshot_completed, what="snapshot")
        env.sql("UPDATE w SET note = note || 'x', price = price + 1, tags = NULL "
                "WHERE id % 4 = 0")
        env.sql("UPDATE w SET id = id + 100 WHERE id IN (5, 6)")  # key changes: key headers
        env.sql("DELETE FROM w WHERE id % 7 = 0")
        env.sql("INSERT INTO w (id) SELECT g FROM generate_series(500, 505) g")  # all nulls
        env.conn.commit()
        target = current_lsn(env)
        for props in runs.values():
            wait_for(lambda p=props: stored_lsn(kafka.bootstrap, p["offset.storage.topic"])
                     >= target, timeout=90, what="capture caught up")
    finally:
        for cap in caps:
            cap.stop()
        with env.pg.connect().cursor() as cur:
            for props in runs.values():
                cur.execute("SELECT pg_drop_replication_slot(slot_name) FROM "
                            "pg_replication_slots WHERE slot_name = %s AND NOT active",
                            (props["slot.name"],))
            cur.connection.commit()

    def topic(run: str) -> str:
        replacement: str = runs[run]["transforms.route.replacement"]
        return replacement.replace("$1", f"{PREFIX}.public.w")

    json_recs = read_topic(kafka.bootstrap, topic("json"))
    expected = [(json_record(r.key), normalised(json_record(r.value)), headers_of(r))
                for r in json_recs]
    ops = [v["op"] for _, v, _ in expected if v is not None]
    assert ops.count("r") == 40 and {"c", "u", "d"} <= set(ops)
    # A key change: its delete and the tombstone after it both carry the new key (Debezium's
    # EventDispatcher gives the tombstone the delete's headers).
    newkeys = [(h["__debezium.newkey"], v is None) for _, v, h in expected
               if "__debezium.newkey" in h]
    assert newkeys == [({"id": 105}, False), ({"id": 105}, True),
                       ({"id": 106}, False), ({"id": 106}, True)]
    confluent = ConfluentAvro(registry)
    for run in STRATEGIES:
        name = topic(run)
        recs = read_topic(kafka.bootstrap, name)
        assert recs and all(r.key and r.key[0] == 0 for r in recs)  # Confluent's wire format
        got = [(confluent.decode(name, r.key, is_key=True),
                normalised(confluent.decode(name, r.value, is_key=False)), headers_of(r))
               for r in recs]
        assert got == expected, run
        # The Avro runs' headers are SimpleHeaderConverter text, the JSON run's envelopes.
        first = dict(recs[0].headers or [])
        assert first["__debezium.context.connectorLogicalName"] == PREFIX.encode()
        assert dict(json_recs[0].headers or [])[
            "__debezium.context.connectorLogicalName"].startswith(b'{"schema":')


def test_capture_refuses_non_json_converters_on_the_local_log(env: Env) -> None:
    """The local topic log stores JSON documents: Avro (or String/ByteArray) bytes would make
    lines its readers call damaged, so such a capture is refused at start, naming the way."""
    for converter in (AVRO, "org.apache.kafka.connect.storage.StringConverter"):
        path = env.config({"value.converter": converter,
                           "value.converter.schema.registry.url": "http://127.0.0.1:9"}
                          if converter == AVRO else {"key.converter": converter})
        with pytest.raises(ConfigError, match=r"headwater\.topics\.store=kafka"):
            build_runtime(load_connector_config(path))
