"""The schema history and schema change properties of the SQL Server and Db2 connectors
(Debezium's HistorizedRelationalDatabaseConnectorConfig), as one block a connector adds to its
properties (`HISTORY_PROPERTIES`, `HISTORY_PASSTHROUGH`, `HISTORY_IGNORED`, `check_history`)
and one typed value it keeps (`SchemaHistoryConfig`, built by `schema_history_config`).

- `include.schema.changes` (true): schema change events on `<topic.prefix>`.
- `schema.history.internal`: FileSchemaHistory (the default, with
  `schema.history.internal.file.filename`, default `data/history/<topic.prefix>.jsonl` next to
  the configuration) or KafkaSchemaHistory (`schema.history.internal.kafka.topic`,
  `...bootstrap.servers` and the recovery and timeout settings; client overrides under
  `schema.history.internal.producer.` / `.consumer.`).  Debezium 1.x `database.history.*` names
  are aliases, as for MySQL.
- `schema.history.internal.store.only.captured.tables.ddl` and
  `...store.only.captured.databases.ddl` (false): which tables the snapshot records
  (docs/sqlserver.md, docs/db2.md).
- `schema.history.internal.skip.unparseable.ddl` is refused: these histories hold no DDL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from headwater.config.definition import Property, ValidatedConfig, ValidationContext
from headwater.relational import config as relational

FILE_HISTORY: Final = "io.debezium.storage.file.history.FileSchemaHistory"
KAFKA_HISTORY: Final = "io.debezium.storage.kafka.history.KafkaSchemaHistory"
_HISTORY_CLASSES: Final = {
    FILE_HISTORY: FILE_HISTORY, KAFKA_HISTORY: KAFKA_HISTORY,
    "io.debezium.relational.history.FileDatabaseHistory": FILE_HISTORY,  # Debezium 1.x
    "io.debezium.relational.history.KafkaDatabaseHistory": KAFKA_HISTORY,
}
_S, _I, _L, _B, _E, _LIST, _PW, _P = relational.TYPE_ALIASES
_KH: Final = "schema.history.internal.kafka."


def _history_class(text: str) -> str:
    try:
        return _HISTORY_CLASSES[text.strip()]
    except KeyError:
        raise ValueError(f"{FILE_HISTORY} or {KAFKA_HISTORY} (the schema history stores "
                         "Headwater has)") from None


def uses_file_history(config: Mapping[str, str]) -> bool:
    """Whether raw properties leave the history in a file (the default): what a service may
    give a default file name to without contradicting a Kafka history."""
    value = config.get("schema.history.internal") or config.get("database.history")
    if not value:
        return True
    try:
        return _history_class(value) == FILE_HISTORY
    except ValueError:
        return True  # validation names the bad value


INCLUDE_SCHEMA_CHANGES: Final = Property(
    "include.schema.changes", _B, True, doc="schema change events on the <topic.prefix> topic")
# The store's properties (MySQL adds its own skip.unparseable.ddl to these).
HISTORY_STORE_PROPERTIES: Final[tuple[Property, ...]] = (
    Property("schema.history.internal", _S, FILE_HISTORY, parser=_history_class,
             aliases=("database.history",)),
    Property("schema.history.internal.file.filename", _P,
             aliases=("database.history.file.filename",),
             doc="schema history file; default data/history/<topic.prefix>.jsonl"),
    Property(_KH + "topic", _S, aliases=("database.history.kafka.topic",),
             doc="KafkaSchemaHistory: the history topic (one partition)"),
    Property(_KH + "bootstrap.servers", _S,
             aliases=("database.history.kafka.bootstrap.servers",),
             doc="KafkaSchemaHistory: the cluster of the history topic"),
    Property(_KH + "recovery.poll.interval.ms", _I, 100, min_value=1,
             aliases=("database.history.kafka.recovery.poll.interval.ms",)),
    Property(_KH + "recovery.attempts", _I, 100, min_value=1,
             aliases=("database.history.kafka.recovery.attempts",),
             doc="recovery gives up after attempts x poll interval without progress"),
    Property(_KH + "query.timeout.ms", _L, 3000, min_value=1),
    Property(_KH + "create.timeout.ms", _L, 30000, min_value=1),
    Property("schema.history.internal.store.only.captured.tables.ddl", _B, False,
             aliases=("database.history.store.only.monitored.tables.ddl",
                      "database.history.store.only.captured.tables.ddl"),
             doc="the snapshot records only the captured tables (default: every table)"),
    Property("schema.history.internal.store.only.captured.databases.ddl", _B, False,
             doc="the snapshot records only the tables of captured schemas"),
)
HISTORY_PROPERTIES: Final = (INCLUDE_SCHEMA_CHANGES, *HISTORY_STORE_PROPERTIES)
HISTORY_PASSTHROUGH: Final = (
    "schema.history.internal.producer.", "schema.history.internal.consumer.",
    "database.history.producer.", "database.history.consumer.",
)
HISTORY_IGNORED: Final[Mapping[str, str]] = {
    "schema.history.internal.skip.unparseable.ddl":
        "the SQL Server and Db2 histories hold table definitions, no DDL to parse",
    _KH + "buffer.batch.size": relational.NOT_IMPLEMENTED,
}


def check_history(context: ValidationContext) -> None:
    """The Kafka history needs its topic and cluster; its settings with the file history
    would be silently ignored, so they are refused."""
    kafka = context.values.get("schema.history.internal") == KAFKA_HISTORY
    for name in (_KH + "topic", _KH + "bootstrap.servers"):
        if kafka and not context.values.get(name):
            context.error(f"{name} is required with schema.history.internal={KAFKA_HISTORY}")
    stray = sorted(n for n in context.explicit if n.startswith(_KH))
    if not kafka and stray:
        context.error(f"{', '.join(stray)}: settings of the Kafka schema history, but "
                      f"schema.history.internal is {FILE_HISTORY}; set "
                      f"schema.history.internal={KAFKA_HISTORY} or remove them")
    if kafka and "schema.history.internal.file.filename" in context.explicit:
        context.error(f"schema.history.internal.file.filename: the history is in Kafka "
                      f"({KAFKA_HISTORY}); remove it")


def default_history_file(topic_prefix: str, base_dir: Path | None = None) -> Path:
    relative = Path("data") / "history" / f"{topic_prefix}.jsonl"
    return base_dir / relative if base_dir is not None else relative


@dataclass(frozen=True, slots=True)
class SchemaHistoryConfig:
    """The block's values (attribute = property); `passthrough` holds the Kafka client
    overrides (relational.history_kafka.kafka_history_settings reads it)."""

    include_schema_changes: bool = True
    schema_history_internal: str = FILE_HISTORY
    schema_history_internal_file_filename: Path = Path("data/history/history.jsonl")
    schema_history_internal_kafka_topic: str | None = None
    schema_history_internal_kafka_bootstrap_servers: str | None = None
    schema_history_internal_kafka_recovery_poll_interval_ms: int = 100
    schema_history_internal_kafka_recovery_attempts: int = 100
    schema_history_internal_kafka_query_timeout_ms: int = 3000
    schema_history_internal_kafka_create_timeout_ms: int = 30000
    store_only_captured_tables_ddl: bool = False
    store_only_captured_databases_ddl: bool = False
    passthrough: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def history_in_kafka(self) -> bool:
        return self.schema_history_internal == KAFKA_HISTORY


def schema_history_config(c: ValidatedConfig) -> SchemaHistoryConfig:
    return SchemaHistoryConfig(
        schema_history_internal_file_filename=(
            c.get_optional_path("schema.history.internal.file.filename")
            or default_history_file(c.get_str("topic.prefix"), c.base_dir)),
        passthrough={k: v for k, v in c.passthrough.items() if k.startswith(HISTORY_PASSTHROUGH)},
        **c.attributes(
            "include.schema.changes", "schema.history.internal", _KH + "topic",
            _KH + "bootstrap.servers", _KH + "recovery.poll.interval.ms",
            _KH + "recovery.attempts", _KH + "query.timeout.ms", _KH + "create.timeout.ms",
            store_only_captured_tables_ddl=(
                "schema.history.internal.store.only.captured.tables.ddl"),
            store_only_captured_databases_ddl=(
                "schema.history.internal.store.only.captured.databases.ddl")),
    )


def open_history_store(cfg: SchemaHistoryConfig, server_name: str) -> Any:
    """The configured store (relational.history_file.HistoryFile or relational.history_kafka
    .KafkaHistoryTopic); nothing is read or created yet."""
    from headwater.relational.history_kafka import kafka_history_settings

    settings = kafka_history_settings(cfg)
    if not cfg.history_in_kafka:
        from headwater.relational.history_file import HistoryFile

        return HistoryFile(cfg.schema_history_internal_file_filename)
    from headwater.relational.history_kafka import KafkaHistoryTopic

    return KafkaHistoryTopic(settings, server_name)
