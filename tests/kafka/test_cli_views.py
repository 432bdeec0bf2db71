"""`offsets show` and `topics list` follow the configuration: with the offsets and topics in
Kafka they read Kafka (and name it), not a local file that does not exist."""

from __future__ import annotations

from pathlib import Path

import orjson
from typer.testing import CliRunner

from headwater.cli import app
from headwater.config.kafka import kafka_settings
from headwater.kafka.offsets import KafkaOffsetStore
from headwater.testing.kafka_cluster import KafkaCluster
from tests.kafka.conftest import kafka_props, unique


def _config(tmp_path: Path, props: dict[str, object]) -> Path:
    base = {"connector.class": "postgres", "database.hostname": "127.0.0.1",
            "database.user": "u", "database.dbname": "d", "name": "views",
            "offset.storage.file.filename": str(tmp_path / "offsets.json"),
            "headwater.topics.dir": str(tmp_path / "topics"), **props}
    path = tmp_path / "c.json"
    path.write_text(orjson.dumps(base).decode())
    return path


def test_offsets_show_and_topics_list_read_kafka(kafka: KafkaCluster, tmp_path: Path) -> None:
    prefix = unique("views")
    props = kafka_props(kafka, **{"topic.prefix": prefix})
    cfg = _config(tmp_path, props)
    runner = CliRunner()

    empty = runner.invoke(app, ["offsets", "show", str(cfg)])
    assert empty.exit_code == 0, empty.output
    assert f"in offsets topic {props['offset.storage.topic']} in Kafka at {kafka.bootstrap}" \
        in empty.output

    settings = kafka_settings({k: str(v) for k, v in props.items()}, "views")
    store = KafkaOffsetStore(settings, {"server": prefix})
    store.save({"lsn": 42})
    del store  # its producer goes now, not after the broker stopped (librdkafka's retries)
    shown = runner.invoke(app, ["offsets", "show", str(cfg)])
    assert shown.exit_code == 0, shown.output
    doc = orjson.loads(shown.stdout)
    assert doc["offset"] == {"lsn": 42}
    assert doc["topic"] == props["offset.storage.topic"]
    assert doc["bootstrap.servers"] == kafka.bootstrap
    assert not (tmp_path / "offsets.json").exists()  # the local file was never the answer

    kafka.create_topic(f"{prefix}.public.t", partitions=2)
    kafka.create_topic(unique("other"))
    listed = runner.invoke(app, ["topics", "list", "--config", str(cfg)])
    assert listed.exit_code == 0, listed.output
    assert f"topics of {prefix} in Kafka at {kafka.bootstrap}: 1" in listed.stdout
    assert f"{prefix}.public.t" in listed.stdout and "other" not in listed.stdout

    tail = runner.invoke(app, ["topics", "verify", str(cfg)])
    assert tail.exit_code == 2
    assert "the topics are in Kafka" in tail.stderr and "Traceback" not in tail.output
