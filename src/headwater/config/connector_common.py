"""Pieces every connector configuration shares: Debezium's include/exclude list semantics,
`database.initial.statements` splitting, the queue-size check, secret-safe printing, the
collections guardrail, and the typed values of the properties every connector has
(`CommonConnectorConfig`, Debezium's CommonConnectorConfig)."""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any, Final

from headwater.config.definition import Property, PropertyType, ValidatedConfig, ValidationContext
from headwater.config.output import OUTPUT_PROPERTIES, OutputConfig
from headwater.config.secrets import REDACTED, Secret, is_sensitive_key
from headwater.config.signals import SignalConfig, signal_config
from headwater.model.topic_naming import parse_strategy, topic_name_problem

JSON_CONVERTER: Final = "org.apache.kafka.connect.json.JsonConverter"
SIMPLE_HEADER_CONVERTER: Final = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
FILE_OFFSET_BACKING_STORE: Final = "org.apache.kafka.connect.storage.FileOffsetBackingStore"


def _converter(text: str) -> str:
    from headwater.converters.factory import check_converter_class

    return check_converter_class(text)


def _header_converter(text: str) -> str:
    from headwater.converters.factory import check_header_converter_class

    return check_header_converter_class(text)


def _offset_store(text: str) -> str:
    if text != FILE_OFFSET_BACKING_STORE:
        raise ValueError(
            f"{FILE_OFFSET_BACKING_STORE} (Headwater keeps offsets in "
            "offset.storage.file.filename)"
        )
    return text


_I, _L, _B, _S, _P = (PropertyType.INT, PropertyType.LONG, PropertyType.BOOLEAN,
                      PropertyType.STRING, PropertyType.PATH)

# How topics are named (headwater.model.topic_naming); the same for every connector.
TOPIC_NAMING_PROPERTIES: Final[tuple[Property, ...]] = (
    Property("topic.naming.strategy", _S, parser=parse_strategy,
             doc="io.debezium.schema.SchemaTopicNamingStrategy (<prefix>.<schema>.<table>) or "
                 "DefaultTopicNamingStrategy (<prefix>.<database>.<table>), or their Unicode "
                 "variants; default: the connector's (Debezium's) default"),
    Property("topic.delimiter", _S, ".", validator=topic_name_problem,
             doc="joins the parts of topic names"),
)

# Debezium 3.x's guardrail on how many tables or collections one connector captures
# (CommonConnectorConfig.GUARDRAIL_COLLECTIONS_*), checked at start (`Guardrail.check`).
GUARDRAIL_PROPERTIES: Final[tuple[Property, ...]] = (
    Property("guardrail.collections.max", _I, 0, min_value=0,
             doc="the most tables or collections the connector may capture; 0 (the default) "
                 "checks nothing"),
    Property("guardrail.collections.limit.action", PropertyType.ENUM, "warn",
             allowed=("warn", "fail"),
             doc="past guardrail.collections.max: warn (log a warning and go on) or fail "
                 "(stop at start)"),
)

# The runtime's properties (queue, converters, offsets, topic log): the same for every connector.
RUNTIME_PROPERTIES: Final[tuple[Property, ...]] = (
    *TOPIC_NAMING_PROPERTIES,
    *GUARDRAIL_PROPERTIES,
    Property("max.batch.size", _I, 2048, min_value=1),
    Property("max.queue.size", _I, 8192, min_value=1, doc="must be larger than max.batch.size"),
    Property("poll.interval.ms", _L, 500, min_value=1),
    Property("statistics.metrics.enabled", _B, True,
             doc="the quantiles (P50, P95, P99) of MilliSecondsBehindSource; false leaves "
                 "them null, as Debezium"),
    Property("key.converter", _S, JSON_CONVERTER, parser=_converter,
             doc="JsonConverter, StringConverter, ByteArrayConverter or Confluent's "
                 "AvroConverter (docs/converters.md)"),
    Property("value.converter", _S, JSON_CONVERTER, parser=_converter,
             doc="as key.converter"),
    Property("key.converter.schemas.enable", _B, True),
    Property("header.converter", _S, SIMPLE_HEADER_CONVERTER, parser=_header_converter,
             doc="how record headers are written, as a Kafka Connect worker's header.converter: "
                 "SimpleHeaderConverter (Connect's default), JsonConverter (with "
                 "header.converter.schemas.enable, default true) or StringConverter"),
    Property("value.converter.schemas.enable", _B, True),
    Property("offset.storage", _S, FILE_OFFSET_BACKING_STORE, parser=_offset_store),
    Property("offset.storage.file.filename", _P,
             doc="offsets file; default data/offsets/<topic.prefix>.json next to the config"),
    Property("offset.flush.interval.ms", _L, 60_000, min_value=0,
             doc="accepted for compatibility; offsets are flushed with every durable batch"),
    Property("headwater.topics.dir", _P, Path("data/topics"),
             doc="directory of the local topic log (relative to the config file)"),
    Property("headwater.topics.segment.bytes", _L, 67_108_864, min_value=1,
             doc="maximum size of a topic log segment"),
    Property("headwater.topics.segment.ms", _L, 1000, min_value=1,
             doc="time-based segment roll interval of the topic log"),
    *OUTPUT_PROPERTIES,
)


class NameFilter:
    """An include list admits only what it matches, else an exclude list removes what it
    matches; each regular expression must match the whole name, case-insensitively."""

    __slots__ = ("exclude", "include")

    def __init__(self, include: Iterable[str], exclude: Iterable[str]) -> None:
        self.include = tuple(re.compile(p, re.IGNORECASE) for p in include)
        self.exclude = tuple(re.compile(p, re.IGNORECASE) for p in exclude)

    def admits(self, name: str) -> bool:
        if self.include:
            return any(p.fullmatch(name) for p in self.include)
        return not any(p.fullmatch(name) for p in self.exclude)


def split_statements(text: str) -> tuple[str, ...]:
    """Split ``database.initial.statements`` on ``;`` (``;;`` is a literal semicolon)."""
    statements: list[str] = []
    buffer: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        if char == ";":
            if text[position + 1 : position + 2] == ";":
                buffer.append(";")
                position += 2
                continue
            statements.append("".join(buffer).strip())
            buffer = []
        else:
            buffer.append(char)
        position += 1
    statements.append("".join(buffer).strip())
    return tuple(statement for statement in statements if statement)


def check_queue(context: ValidationContext) -> None:
    batch, queue = context.values.get("max.batch.size"), context.values.get("max.queue.size")
    if isinstance(batch, int) and isinstance(queue, int) and queue <= batch:
        context.error(
            f"{context.label('max.queue.size')} ({queue}) must be larger than "
            f"{context.label('max.batch.size')} ({batch})"
        )


def redacted_fields(config: Any) -> dict[str, object]:
    """A configuration dataclass's public fields, safe to print or log (secrets masked)."""
    out: dict[str, object] = {}
    for name in config.__dataclass_fields__:
        if name.startswith("_"):
            continue
        value = getattr(config, name)
        if isinstance(value, Secret):
            value = REDACTED
        elif name == "passthrough":
            value = {key: REDACTED if is_sensitive_key(key) else text
                     for key, text in value.items()}
        out[name] = value
    return out


def warn_unmatched(prop: str, include: Iterable[str], names: Iterable[str],
                   logger: logging.Logger, what: str = "table", *,
                   literal: bool = False) -> list[str]:
    """Warn once per entry of an include list that matches no existing `what` (a typo, or a
    table not created yet): without it such a connector captures nothing and says nothing.
    Returns the unmatched entries."""
    existing = list(names)
    missing = [p for p in include
               if not any(re.fullmatch(re.escape(p) if literal else p, n, re.IGNORECASE)
                          for n in existing)]
    for pattern in missing:
        logger.warning("%s: '%s' matches no existing %s; nothing is captured for it until "
                       "such a %s exists", prop, pattern, what, what)
    return missing


class GuardrailLimitExceeded(Exception):
    """More tables or collections in capture than `guardrail.collections.max` allows, with
    `guardrail.collections.limit.action=fail`."""


@dataclass(frozen=True)
class Guardrail:
    """`guardrail.collections.max` and its action, as Debezium 3.x checks them at a task's
    start (CommonConnectorConfig.validateGuardrailLimits): the count is of the captured
    tables, or of every table the schema history keeps when it keeps more than those
    (`schema.history.internal.store.only.captured.tables.ddl=false`, MySQL/MariaDB)."""

    max: int = 0
    action: str = "warn"

    @classmethod
    def from_config(cls, c: Any) -> Guardrail:
        return cls(c.get_int("guardrail.collections.max"),
                   c.get_str("guardrail.collections.limit.action"))

    def check(self, names: Collection[str], logger: logging.Logger, *,
              history_keeps_all: bool = False) -> None:
        if self.max <= 0:
            return
        if len(names) <= self.max:
            logger.info("guardrail: %d tables/collections in capture (guardrail.collections.max "
                        "%d)", len(names), self.max)
            return
        message = (f"guardrail.collections.max exceeded: {len(names)} tables/collections "
                   f"configured for capture, but at most {self.max} are allowed")
        if history_keeps_all:
            message += (" (schema.history.internal.store.only.captured.tables.ddl=false: the "
                        "schema history keeps every table of the captured databases, and they "
                        "are counted; set it to true to count only the captured tables)")
        if self.action == "fail":
            raise GuardrailLimitExceeded(message)
        logger.warning("%s; going on (guardrail.collections.limit.action=warn)", message)


UNSET_PATH: Final = Path()


def default_offsets_file(topic_prefix: str, base_dir: Path | None = None) -> Path:
    """``data/offsets/<topic_prefix>.json`` under ``base_dir`` (or relative to the cwd)."""
    relative = Path("data") / "offsets" / f"{topic_prefix}.json"
    return base_dir / relative if base_dir is not None else relative


@dataclass(frozen=True, slots=True)
class CommonConnectorConfig:
    """The validated properties every connector has (attribute = property, ``.`` -> ``_``):
    events, topics, the runtime's queue, converters, offsets and topic log, signals.
    Subclasses add their database's properties after `topic_prefix` and call
    `_common_defaults` from their `__post_init__`."""

    topic_prefix: str
    _: KW_ONLY
    name: str = ""  # defaults to topic_prefix
    tasks_max: int = 1
    snapshot_delay_ms: int = 0
    snapshot_max_threads: int = 1
    skipped_operations: frozenset[str] = frozenset({"t"})
    tombstones_on_delete: bool = True
    extended_headers_enabled: bool = True
    provide_transaction_metadata: bool = False
    topic_transaction: str = "transaction"
    event_processing_failure_handling_mode: str = "fail"
    heartbeat_interval_ms: int = 0
    topic_heartbeat_prefix: str = "__debezium-heartbeat"
    topic_naming_strategy: str | None = None  # None: the connector's default
    topic_delimiter: str = "."
    errors_max_retries: int = -1
    retriable_restart_connector_wait_ms: int = 10_000
    max_batch_size: int = 2048
    max_queue_size: int = 8192
    poll_interval_ms: int = 500
    statistics_metrics_enabled: bool = True
    key_converter_schemas_enable: bool = True
    value_converter_schemas_enable: bool = True
    header_converter: str = SIMPLE_HEADER_CONVERTER
    offset_storage_file_filename: Path = UNSET_PATH  # default data/offsets/<topic_prefix>.json
    headwater_topics_dir: Path = Path("data/topics")
    headwater_topics_segment_bytes: int = 67_108_864
    headwater_topics_segment_ms: int = 1000
    # headwater.event.format, headwater.destination[.files.*] (headwater.config.output)
    output: OutputConfig = field(default_factory=OutputConfig)
    guardrail: Guardrail = field(default_factory=Guardrail)
    passthrough: Mapping[str, str] = field(
        default_factory=dict, repr=False, compare=False, hash=False
    )
    # signal.*, incremental.snapshot.*, read.only; read through `signals`
    _signals: SignalConfig = field(default_factory=SignalConfig, repr=False, compare=False)

    def _common_defaults(self) -> None:
        """`name` and the offsets file default to the topic prefix's."""
        put = object.__setattr__
        if not self.name:
            put(self, "name", self.topic_prefix)
        if self.offset_storage_file_filename == UNSET_PATH:
            put(self, "offset_storage_file_filename", default_offsets_file(self.topic_prefix))

    @staticmethod
    def common_connector_values(c: ValidatedConfig) -> dict[str, Any]:
        """This class's constructor arguments from a validated configuration."""
        prefix = c.get_str("topic.prefix")
        return {
            "topic_prefix": prefix,
            "name": c.get_optional_str("name") or prefix,
            **c.attributes(
                "tasks.max", "snapshot.delay.ms", "snapshot.max.threads", "tombstones.on.delete",
                "extended.headers.enabled", "provide.transaction.metadata", "topic.transaction",
                "event.processing.failure.handling.mode", "heartbeat.interval.ms",
                "topic.heartbeat.prefix", "topic.naming.strategy", "topic.delimiter",
                "errors.max.retries", "retriable.restart.connector.wait.ms", "max.batch.size",
                "max.queue.size", "poll.interval.ms", "statistics.metrics.enabled",
                "key.converter.schemas.enable", "value.converter.schemas.enable",
                "header.converter", "headwater.topics.dir", "headwater.topics.segment.bytes",
                "headwater.topics.segment.ms"),
            "skipped_operations": frozenset(
                op.lower() for op in c.get_list("skipped.operations")) - {"none"},
            "offset_storage_file_filename": (
                c.get_optional_path("offset.storage.file.filename")
                or default_offsets_file(prefix, c.base_dir)),
            "output": OutputConfig.from_config(c),
            "guardrail": Guardrail.from_config(c),
            "passthrough": dict(c.passthrough),
            "_signals": signal_config(c),
        }

    @property
    def signals(self) -> SignalConfig:
        """Signal channels and incremental snapshot settings (headwater.config.signals)."""
        return self._signals

    @property
    def heartbeat_topic(self) -> str:
        return f"{self.topic_heartbeat_prefix}.{self.topic_prefix}"

    @property
    def transaction_topic(self) -> str:
        return f"{self.topic_prefix}.{self.topic_transaction}"
