"""Signal and incremental snapshot properties, shared by every connector's configuration.

Why a shared list: the names, defaults and meaning are Debezium's and the same for PostgreSQL
and MariaDB, so each connector includes :data:`SIGNAL_PROPERTIES` in its own property set and
reads the typed values with :func:`signal_config`.

Choices:

* ``read.only`` is Debezium's MySQL property for incremental snapshots that write nothing to
  the source (watermarks from GTID sets there).  Debezium has no such property for PostgreSQL;
  Headwater uses the same name for both connectors (PostgreSQL: watermarks from the chunk
  transaction's ``pg_current_snapshot()`` and the WAL insert position).
* ``incremental.snapshot.watermarking.strategy`` (``insert_insert``, ``insert_delete``) is
  Debezium's: with ``insert_delete`` the close watermark deletes the open watermark's row, so
  the signal table does not grow.
* ``signal.file`` defaults to Debezium's ``file-signals.txt`` and is read only when the ``file``
  channel is enabled.
* The ``kafka`` channel's ``signal.kafka.*`` / ``signal.consumer.*`` are pass-through keys
  checked by `headwater.config.kafka.kafka_signal_settings` when the channel is enabled.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from headwater.config.definition import (
    ConfigValue,
    Property,
    PropertyType,
    ValidatedConfig,
    list_members_validator,
)
from headwater.config.kafka import KafkaSignalSettings, kafka_signal_settings
from headwater.model.collection import SignalError, split_collection

__all__ = ["SIGNAL_PROPERTIES", "SIGNAL_PROPERTY_NAMES", "SignalConfig", "signal_config"]

_CHANNELS: Final = ("source", "file", "kafka")
# Debezium's notification channels; `jmx` is served by `headwater serve` as the REST endpoint
# GET /connectors/{name}/notifications (Headwater has no JMX), `rest` is the same.
NOTIFICATION_CHANNELS: Final = ("log", "sink", "jmx", "rest")


_notification_channels: Final = list_members_validator(
    NOTIFICATION_CHANNELS, lambda unknown: (f"unknown channel(s) {', '.join(unknown)}; "
                                            f"Headwater has {', '.join(NOTIFICATION_CHANNELS)}"))
_channels: Final = list_members_validator(
    _CHANNELS, lambda unknown: (f"unknown channel(s) {', '.join(unknown)}; Headwater has "
                                "source, file and kafka"))


def _collection(value: ConfigValue) -> str | None:
    if isinstance(value, str) and value:
        try:
            split_collection(value)
        except SignalError as exc:
            return str(exc)
    return None


SIGNAL_PROPERTIES: Final[tuple[Property, ...]] = (
    Property("signal.data.collection", PropertyType.STRING, validator=_collection,
             doc="the signal table, <schema>.<table> (quote a part that contains a dot); "
                 "its rows (id, type, data) are read from the change stream"),
    Property("signal.enabled.channels", PropertyType.LIST, ("source",), validator=_channels,
             doc="where signals are read from: source (the signal table), file, kafka"),
    Property("signal.file", PropertyType.PATH, Path("file-signals.txt"),
             doc="file channel: one JSON signal {id, type, data} per line"),
    Property("signal.poll.interval.ms", PropertyType.LONG, 5000, min_value=1,
             doc="how often the file channel is read"),
    Property("incremental.snapshot.chunk.size", PropertyType.INT, 1024, min_value=1,
             doc="rows per incremental snapshot chunk"),
    Property("incremental.snapshot.allow.schema.changes", PropertyType.BOOLEAN, False,
             doc="re-read the current chunk when the table's schema changes inside its window"),
    Property("incremental.snapshot.watermarking.strategy", PropertyType.ENUM, "insert_insert",
             allowed=("insert_insert", "insert_delete"),
             doc="watermarks in the signal table: two inserts, or an insert and its delete"),
    Property("notification.enabled.channels", PropertyType.LIST, (),
             validator=_notification_channels,
             doc="where snapshot progress notifications go: log, sink (a topic), jmx/rest "
                 "(GET /connectors/{name}/notifications of headwater serve)"),
    Property("notification.sink.topic.name", PropertyType.STRING,
             doc="the topic of the sink notification channel (required with sink)"),
    Property("read.only", PropertyType.BOOLEAN, False,
             doc="incremental snapshots write nothing to the source (no signal table "
                 "watermarks; PostgreSQL: snapshot xmin and WAL position, MariaDB: GTID)"),
)

SIGNAL_PROPERTY_NAMES: Final = frozenset(p.name for p in SIGNAL_PROPERTIES)


@dataclass(frozen=True, slots=True)
class SignalConfig:
    """The typed signal and incremental snapshot settings of one connector."""

    data_collection: str | None = None
    enabled_channels: tuple[str, ...] = ("source",)
    file: Path = Path("file-signals.txt")
    poll_interval_ms: int = 5000
    chunk_size: int = 1024
    allow_schema_changes: bool = False
    watermarking_strategy: str = "insert_insert"
    read_only: bool = False
    kafka: KafkaSignalSettings | None = None  # the kafka channel, when enabled
    notification_channels: tuple[str, ...] = ()
    notification_sink_topic: str | None = None

    @property
    def source_channel(self) -> bool:
        return "source" in self.enabled_channels and self.data_collection is not None

    @property
    def file_channel(self) -> bool:
        return "file" in self.enabled_channels

    @property
    def kafka_channel(self) -> bool:
        return self.kafka is not None

    @property
    def any_channel(self) -> bool:
        """A channel the connector must watch: the signal table, the file or Kafka."""
        return self.source_channel or self.file_channel or self.kafka_channel


def signal_config(config: ValidatedConfig) -> SignalConfig:
    """The signal settings from a validated configuration that includes SIGNAL_PROPERTIES."""
    channels = tuple(c.lower() for c in config.get_list("signal.enabled.channels"))
    kafka = None
    if "kafka" in channels:
        kafka = kafka_signal_settings(config.passthrough, config.get_str("topic.prefix"))
    incremental = "incremental.snapshot."
    return SignalConfig(
        enabled_channels=channels,
        kafka=kafka,
        notification_channels=tuple(
            c.lower() for c in config.get_list("notification.enabled.channels")),
        **config.attributes(
            "read.only",
            data_collection="signal.data.collection",
            file="signal.file",
            poll_interval_ms="signal.poll.interval.ms",
            chunk_size=incremental + "chunk.size",
            allow_schema_changes=incremental + "allow.schema.changes",
            watermarking_strategy=incremental + "watermarking.strategy",
            notification_sink_topic="notification.sink.topic.name"),
    )
