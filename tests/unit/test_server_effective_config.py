"""The service gives each connector its own files for the paths its configuration leaves unset,
and never a history file to a connector whose schema history is in Kafka (the configuration
check refuses a file name next to a Kafka history)."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.connectors.mysql.config import validate_mysql_config
from headwater.server.connectors import effective

MYSQL = {"connector.class": "io.debezium.connector.mysql.MySqlConnector",
         "database.hostname": "h", "database.user": "u", "database.server.id": "5",
         "topic.prefix": "shop"}
KAFKA_HISTORY = {"schema.history.internal": "io.debezium.storage.kafka.history.KafkaSchemaHistory",
                 "schema.history.internal.kafka.topic": "history",
                 "schema.history.internal.kafka.bootstrap.servers": "127.0.0.1:9092"}


def test_file_history_gets_the_connectors_own_file(tmp_path: Path) -> None:
    props = effective(tmp_path, "c1", MYSQL)
    assert props["schema.history.internal.file.filename"].startswith(str(tmp_path.resolve()))
    validate_mysql_config(props)


@pytest.mark.parametrize("key", ["schema.history.internal", "database.history"])
def test_kafka_history_gets_no_file(tmp_path: Path, key: str) -> None:
    config = {**MYSQL, **KAFKA_HISTORY}
    config[key] = config.pop("schema.history.internal")
    props = effective(tmp_path, "c1", config)
    assert "schema.history.internal.file.filename" not in props
    assert props["offset.storage.file.filename"].startswith(str(tmp_path.resolve()))
    validate_mysql_config(props)
