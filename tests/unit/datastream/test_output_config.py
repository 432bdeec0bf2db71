"""`headwater.event.format` / `headwater.destination[.files.*]`: parsed for every connector, and
no property the chosen format or destination would ignore is accepted silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.capture import build_runtime
from headwater.config.loader import ConfigError
from headwater.connectors.mysql.config import validate_mysql_config
from headwater.connectors.postgres.config import CONNECTOR_CLASS, validate_postgres_config
from headwater.destinations.files import FileDestination
from headwater.formats.datastream.renderer import DatastreamFormat
from headwater.formats.debezium_json import DebeziumJsonFormat
from headwater.topics.sink import TopicLogSink

BASE = {"connector.class": CONNECTOR_CLASS, "topic.prefix": "shop",
        "database.hostname": "localhost", "database.user": "u", "database.dbname": "d"}
MY_BASE = {"connector.class": "io.debezium.connector.mysql.MySqlConnector",
           "topic.prefix": "shop", "database.hostname": "localhost", "database.user": "u",
           "database.server.id": "5400"}


def test_defaults_are_debezium_on_the_topic_log() -> None:
    cfg, warnings = validate_postgres_config(BASE, env={})
    assert (cfg.output.event_format, cfg.output.destination) == ("debezium", "topics")
    assert warnings == []


def test_datastream_files_settings_are_parsed(tmp_path: Path) -> None:
    cfg, warnings = validate_postgres_config({
        **BASE, "headwater.event.format": "datastream",
        "headwater.datastream.stream.name": "projects/p/locations/l/streams/s",
        "headwater.destination": "files", "headwater.destination.files.dir": str(tmp_path),
        "headwater.destination.files.format": "avro",
        "headwater.destination.files.max.bytes": "1000",
        "headwater.destination.files.max.ms": "500"}, env={})
    out = cfg.output
    assert (out.event_format, out.stream_name, out.destination, out.files_dir,
            out.files_format, out.files_max_bytes, out.files_max_ms) == (
        "datastream", "projects/p/locations/l/streams/s", "files", tmp_path, "avro", 1000, 500)
    assert warnings == []
    assert out.files_compression == "none"
    gz, _ = validate_postgres_config({
        **BASE, "headwater.event.format": "datastream", "headwater.destination": "files",
        "headwater.destination.files.json.compression": "gzip"}, env={})
    assert (gz.output.files_format, gz.output.files_compression) == ("json", "gzip")
    my, _ = validate_mysql_config({**MY_BASE, "headwater.event.format": "datastream"}, env={})
    assert my.output.event_format == "datastream"


@pytest.mark.parametrize(("extra", "message"), [
    ({"headwater.datastream.stream.name": "s"}, "only used with headwater.event.format"),
    ({"headwater.destination": "files"}, "needs headwater.event.format=datastream"),
    ({"headwater.destination.files.format": "avro"}, "only used with headwater.destination"),
    ({"headwater.event.format": "datastream", "headwater.destination.files.max.ms": "5"},
     "only used with headwater.destination=files"),
    ({"headwater.event.format": "protobuf"}, "headwater.event.format"),
    ({"headwater.event.format": "datastream", "headwater.destination": "files",
      "headwater.destination.files.format": "parquet"}, "headwater.destination.files.format"),
    ({"headwater.event.format": "datastream", "headwater.destination": "files",
      "headwater.destination.files.format": "avro",
      "headwater.destination.files.json.compression": "gzip"},
     "json.compression is only used with headwater.destination.files.format=json"),
    ({"headwater.event.format": "datastream",
      "headwater.destination.files.json.compression": "gzip"},
     "only used with headwater.destination=files"),
    ({"headwater.event.format": "datastream", "headwater.destination": "files",
      "headwater.destination.files.json.compression": "zip"},
     "headwater.destination.files.json.compression"),
])
def test_settings_that_would_be_ignored_are_errors(extra: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        validate_postgres_config({**BASE, **extra}, env={})


def test_debezium_only_settings_warn_with_datastream_events() -> None:
    _, warnings = validate_postgres_config({
        **BASE, "headwater.event.format": "datastream", "tombstones.on.delete": "false",
        "provide.transaction.metadata": "true"}, env={})
    assert any("tombstones.on.delete" in w for w in warnings)
    assert any("provide.transaction.metadata" in w for w in warnings)
    _, warnings = validate_postgres_config({
        **BASE, "headwater.event.format": "datastream", "headwater.destination": "files",
        "headwater.topics.segment.ms": "10"}, env={})
    assert any("headwater.topics.segment.ms" in w for w in warnings)


def test_build_runtime_picks_renderer_and_writer(tmp_path: Path) -> None:
    common = {**BASE, "offset.storage.file.filename": str(tmp_path / "o.json"),
              "headwater.topics.dir": str(tmp_path / "topics")}
    cfg, _ = validate_postgres_config(common, env={})
    rt = build_runtime(cfg)
    assert isinstance(rt.renderer, DebeziumJsonFormat) and isinstance(rt.writer, TopicLogSink)
    assert rt.restarts is not None
    rt.writer.close()
    cfg, _ = validate_postgres_config({
        **common, "headwater.event.format": "datastream"}, env={})
    rt = build_runtime(cfg)
    assert isinstance(rt.renderer, DatastreamFormat) and isinstance(rt.writer, TopicLogSink)
    assert (rt.renderer.stream_name, rt.renderer.encoding) == ("shop", "json")
    assert rt.restarts is None
    rt.writer.close()
    cfg, _ = validate_postgres_config({
        **common, "headwater.event.format": "datastream", "headwater.destination": "files",
        "headwater.destination.files.dir": str(tmp_path / "files"),
        "headwater.destination.files.format": "avro"}, env={})
    rt = build_runtime(cfg)
    assert isinstance(rt.writer, FileDestination) and rt.writer.format == "avro"
    assert isinstance(rt.renderer, DatastreamFormat) and rt.renderer.encoding == "avro"
