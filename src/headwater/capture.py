"""Assembles a capture runtime from a connector configuration (what `headwater run` runs).

Generic over connectors: `connector.class` picks a registration (headwater.connectors.registry),
which loads the typed configuration and builds the connector and its source block.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from headwater.config.loader import ConfigError, load_properties
from headwater.config.output import DATASTREAM, FILES, OutputConfig
from headwater.connectors.registry import CaptureConfig, RegistryError, registration_for_class
from headwater.destinations.files import FileDestination
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.notifications import Notifier
from headwater.engine.offsets import FileOffsetStore
from headwater.engine.runtime import CaptureRuntime, RecordRenderer, TopicWriter
from headwater.engine.supersede import LocalTopicRanges, SnapshotRestarts
from headwater.formats.datastream.renderer import DatastreamFormat
from headwater.formats.debezium_json import DebeziumJsonFormat
from headwater.kafka import assembly as kafka_assembly
from headwater.log_context import connector_name, task_id
from headwater.model.topic_naming import TopicNaming, TopicNamingError
from headwater.ops.logging import use_format
from headwater.topics.retention_config import local_retention, refuse_elsewhere
from headwater.topics.sink import TopicLogSink

# The connector's log format (text, json), where no command-line option can say it (a
# connector created over the REST API of `headwater serve`).
LOG_FORMAT_PROPERTY = "headwater.ops.log.format"

if TYPE_CHECKING:
    from headwater.converters.base import Converter
    from headwater.transforms.chain import TransformChain


OPS_PROPERTIES = {LOG_FORMAT_PROPERTY}
_T = TypeVar("_T")


def unhonoured(props: dict[str, str]) -> list[str]:
    """Problems with `headwater.ops.*` properties: the namespace passes the connector's
    validation untouched, so a misspelt key would be accepted and silently do nothing."""
    from headwater.ops.logging import log_format

    problems = [f"{key}: unknown property (headwater.ops.* has "
                f"{', '.join(sorted(OPS_PROPERTIES))}); it would be accepted and ignored"
                for key in sorted(props) if key.startswith("headwater.ops.")
                and key not in OPS_PROPERTIES]
    if props.get(LOG_FORMAT_PROPERTY):
        try:
            log_format(props[LOG_FORMAT_PROPERTY])
        except ValueError as exc:
            problems.append(f"{LOG_FORMAT_PROPERTY}: {exc}")
    return problems


def load_connector_config(path: Path, *, secrets: bool = True) -> CaptureConfig:
    """The typed configuration of the connector `connector.class` names (ConfigError if that
    property is missing or names no registered connector).

    `secrets=False` is for the read-only commands (`status`, `topics`, `offsets`): they work
    from the topics and offsets alone, so the secrets need not be resolvable where they run.
    """
    value = load_properties(path).get("connector.class")
    try:
        registration = registration_for_class(None if value is None else str(value))
    except RegistryError as exc:
        raise ConfigError([str(exc)], source=str(path)) from None
    if not secrets and registration.load_config_without_secrets is not None:
        cfg = registration.load_config_without_secrets(path)
    else:
        cfg = registration.load_config(path)
    problems = unhonoured(getattr(cfg, "passthrough", None) or {})
    if problems:
        raise ConfigError(problems, source=str(path))
    return cfg


def topic_naming(cfg: CaptureConfig) -> TopicNaming:
    """The connector's topic names from its `topic.*` properties (ConfigError if invalid)."""
    try:
        strategy = cfg.topic_naming_strategy or registration_for_class(
            cfg.connector_class).default_topic_naming_strategy
        return TopicNaming(cfg.topic_prefix, strategy, cfg.topic_delimiter,
                           cfg.topic_transaction, cfg.topic_heartbeat_prefix)
    except (RegistryError, TopicNamingError) as exc:
        raise ConfigError([str(exc)]) from None


def output_stages(cfg: CaptureConfig) -> tuple[TransformChain, Converter, Converter] | None:
    """The transform chain and converters, or None when the fast path applies (no
    transforms, JsonConverter for key and value).  ConfigError names every property that is
    wrong: an unknown transform or converter class, or a property it does not implement."""
    from headwater.connect.props import PluginConfigError
    from headwater.converters.factory import JSON, build_converter
    from headwater.transforms.chain import build_chain

    # A connector outside this package may predate the protocol's `passthrough` (then it
    # has no transforms or converter properties to give).
    props = getattr(cfg, "passthrough", None) or {}
    # MongoDbConnectorConfig has no converter class fields (yet): JsonConverter there.
    key_class = getattr(cfg, "key_converter", JSON)
    value_class = getattr(cfg, "value_converter", JSON)
    errors: list[str] = []

    def built(make: Callable[[], _T]) -> _T | None:  # every stage's problems, not the first's
        try:
            return make()
        except PluginConfigError as exc:
            errors.extend(str(exc).split("\n"))
            return None

    chain = built(lambda: build_chain(props))
    key = built(lambda: build_converter(key_class, props, is_key=True,
                                        schemas_enable=cfg.key_converter_schemas_enable))
    value = built(lambda: build_converter(value_class, props, is_key=False,
                                          schemas_enable=cfg.value_converter_schemas_enable))
    if errors or chain is None or key is None or value is None:
        raise ConfigError(errors)
    if not chain and key_class == JSON and value_class == JSON:
        return None
    return chain, key, value


def header_converter(cfg: CaptureConfig) -> Converter:
    """The `header.converter` (SimpleHeaderConverter unless configured), with its
    `header.converter.*` properties; ConfigError names a property it does not implement."""
    from headwater.connect.props import PluginConfigError
    from headwater.converters.factory import SIMPLE_HEADER, build_header_converter

    props = getattr(cfg, "passthrough", None) or {}
    try:
        return build_header_converter(getattr(cfg, "header_converter", SIMPLE_HEADER), props)
    except PluginConfigError as exc:
        raise ConfigError(str(exc).split("\n")) from None


def refuse_binary_records_on_the_local_log(cfg: CaptureConfig, store: str) -> None:
    """The local topic log stores each key and value as a JSON document spliced into its
    line (headwater.topics.log): AvroConverter, StringConverter and ByteArrayConverter bytes
    are not JSON and would make lines its readers call damaged.  Kafka stores any bytes."""
    from headwater.converters.factory import JSON, JSON_BYTES

    output: OutputConfig = getattr(cfg, "output", None) or OutputConfig()
    if output.destination == FILES or store == "kafka":
        return
    wrong = [f"{side}.converter={name}" for side, name in (
        ("key", getattr(cfg, "key_converter", JSON)),
        ("value", getattr(cfg, "value_converter", JSON))) if name not in JSON_BYTES]
    if wrong:
        raise ConfigError([
            f"{w}: the local topic log stores JSON documents (JsonConverter); write these "
            "records to Kafka (headwater.topics.store=kafka) or use JsonConverter"
            for w in wrong])


def refuse_partitions_on_the_local_log(cfg: CaptureConfig, store: str) -> None:
    """A topic of the local log (or of the files destination) has one partition:
    Debezium's PartitionRouting with more than one would have nowhere to put its records (the
    log refuses them, files would ignore the partition; better said at start)."""
    output: OutputConfig = getattr(cfg, "output", None) or OutputConfig()
    if output.destination != FILES and store == "kafka":
        return
    props: dict[str, str] = dict(getattr(cfg, "passthrough", None) or {})
    wrong = [
        f"transforms.{name}.partition.topic.num={props.get(f'transforms.{name}.partition.topic.num')}"
        for name in (n.strip() for n in props.get("transforms", "").split(","))
        if props.get(f"transforms.{name}.type", "").strip()
        == "io.debezium.transforms.partitions.PartitionRouting"
        and props.get(f"transforms.{name}.partition.topic.num", "").strip() != "1"]
    if wrong:
        raise ConfigError([
            f"{w}: PartitionRouting chooses Kafka partitions and the local topic log (or the "
            "files destination) has one per topic; write to Kafka (headwater.topics.store=kafka)"
            for w in wrong])


def notifier_of(cfg: CaptureConfig) -> Notifier | None:
    """The snapshot notifications' channels (`notification.enabled.channels`), if any."""
    signals = getattr(cfg, "signals", None)
    channels: tuple[str, ...] = getattr(signals, "notification_channels", ())
    if not channels:
        return None
    topic: str | None = getattr(signals, "notification_sink_topic", None)
    if "sink" in channels and not topic:
        raise ConfigError(["notification.enabled.channels includes sink: set "
                           "notification.sink.topic.name to the topic it writes to"])
    from headwater.converters.factory import JSON, build_converter

    props = getattr(cfg, "passthrough", None) or {}
    key = build_converter(getattr(cfg, "key_converter", JSON), props, is_key=True,
                          schemas_enable=cfg.key_converter_schemas_enable)
    value = build_converter(getattr(cfg, "value_converter", JSON), props, is_key=False,
                            schemas_enable=cfg.value_converter_schemas_enable)
    return Notifier(cfg.topic_prefix, channels, topic, key_converter=key,
                    value_converter=value)


def _collect(problems: list[str], check: Callable[[], _T]) -> _T | None:
    try:
        return check()
    except ConfigError as exc:
        problems.extend(exc.problems)
        return None


def config_problems(cfg: CaptureConfig) -> list[str]:
    """Every problem of a loaded connector configuration that its run would meet before
    connecting: transforms, predicates and converters (an unknown class, Avro without a
    registry), notifications, topic names, the log format, the Kafka settings (a Kafka store
    without `bootstrap.servers`), and the combinations that name two destinations.

    The one validation after loading: `headwater run` (through `build_runtime`), `headwater
    check` and the REST API (`config/validate`, creating or updating a connector) all call
    it, so each says the same thing about the same configuration."""
    from headwater.config.debezium_server import server_problems

    props: dict[str, str] = dict(getattr(cfg, "passthrough", None) or {})
    problems = unhonoured(props) + server_problems(props)
    stages_problems: list[str] = []
    stages = _collect(stages_problems, lambda: output_stages(cfg))
    problems += stages_problems
    _collect(problems, lambda: header_converter(cfg))
    _collect(problems, lambda: notifier_of(cfg))
    _collect(problems, lambda: topic_naming(cfg))
    kafka = _collect(problems, lambda: kafka_assembly.settings_of(cfg))
    output: OutputConfig = getattr(cfg, "output", None) or OutputConfig()
    if output.event_format == DATASTREAM and stages is not None:
        # Transforms and converters work on Kafka Connect records of Debezium events.
        problems.append(
            "transforms and key.converter/value.converter other than JsonConverter apply to "
            "Debezium events: they cannot be combined with headwater.event.format=datastream")
    store = kafka.store if kafka is not None else "local"
    if kafka is not None:  # (an unknown store is a problem of its own, listed above)
        _collect(problems, lambda: refuse_binary_records_on_the_local_log(cfg, store))
        _collect(problems, lambda: refuse_partitions_on_the_local_log(cfg, store))
    if store == "kafka" and output.destination == FILES:
        problems.append("headwater.topics.store=kafka and headwater.destination=files name "
                        "two destinations: choose one")
    if output.destination == FILES or store == "kafka":
        _collect(problems, lambda: refuse_elsewhere(
            props, "files" if output.destination == FILES else "Kafka"))
    return problems


def check_connector(path: Path, *, secrets: bool = True) -> list[str]:
    """Every problem of the connector configuration at `path`, loaded as `headwater run`
    loads it (empty: valid); nothing connects.  `headwater check` and the REST API's
    validation both answer with this list."""
    from headwater.extras import MissingExtra, require

    try:
        cfg = load_connector_config(path, secrets=secrets)
    except ConfigError as exc:
        return list(exc.problems)
    problems = config_problems(cfg)
    for extra, what in required_extras(cfg):
        try:
            require(extra, what)
        except MissingExtra as exc:
            problems.append(str(exc))
    return problems


def required_extras(cfg: CaptureConfig) -> list[tuple[str, str]]:
    """(pip extra, what needs it) for a run of this configuration: the connector's driver,
    and Kafka's client when the topics or offsets are in Kafka."""
    registration = registration_for_class(cfg.connector_class)
    needed = [(extra, f"the {registration.name} connector") for extra in registration.extras]
    props = getattr(cfg, "passthrough", None) or {}
    if props.get("headwater.topics.store", "").strip().lower() == "kafka":
        needed.append(("kafka", "headwater.topics.store=kafka"))
    elif props.get("offset.storage.topic"):
        needed.append(("kafka", "offset.storage.topic"))
    return needed


def check_extras(cfg: CaptureConfig) -> None:
    """MissingExtra (one line naming the extra) for the first extra a run would lack."""
    from headwater.extras import require

    for extra, what in required_extras(cfg):
        require(extra, what)


def build_runtime(cfg: CaptureConfig) -> CaptureRuntime:
    registration = registration_for_class(cfg.connector_class)
    # Before connecting or creating anything: the drivers, then every configuration error.
    check_extras(cfg)
    problems = config_problems(cfg)
    if problems:
        raise ConfigError(problems)
    stages = output_stages(cfg)
    headers = header_converter(cfg)
    metrics = CaptureMetrics(queue_capacity=cfg.max_queue_size)
    metrics.lag_statistics.quantiles = bool(getattr(cfg, "statistics_metrics_enabled", True))
    metrics.notifier = notifier_of(cfg)
    connector_name.set(cfg.topic_prefix)
    task_id.set("0")  # one task per connector (a capture is one ordered reader)
    passthrough: dict[str, str] = getattr(cfg, "passthrough", None) or {}
    if passthrough.get(LOG_FORMAT_PROPERTY):
        try:
            use_format(passthrough[LOG_FORMAT_PROPERTY])
        except ValueError as exc:
            raise ConfigError([f"{LOG_FORMAT_PROPERTY}: {exc}"]) from None
    naming = topic_naming(cfg)
    parts = registration.build(cfg, metrics, naming)
    output: OutputConfig = getattr(cfg, "output", None) or OutputConfig()
    renderer: RecordRenderer
    restarts: SnapshotRestarts | None = None
    # Kafka (headwater.topics.store=kafka, offset.storage.topic) or the local defaults.
    kafka = kafka_assembly.settings_of(cfg)
    if output.event_format == DATASTREAM:
        to_files = output.destination == FILES
        renderer = DatastreamFormat(
            output.stream_name or cfg.topic_prefix,
            encoding="avro" if to_files and output.files_format == "avro" else "json",
            topic_naming=naming,
            file_headers=to_files,
            toasted_value_placeholder=parts.unavailable_value_placeholder,
        )
    else:
        fmt = DebeziumJsonFormat(
            parts.source_block,
            key_schemas=cfg.key_converter_schemas_enable,
            value_schemas=cfg.value_converter_schemas_enable,
            tombstones_on_delete=cfg.tombstones_on_delete,
            toasted_value_placeholder=parts.unavailable_value_placeholder,
            provide_transaction_metadata=cfg.provide_transaction_metadata,
            topic_naming=naming,
            context_headers=cfg.extended_headers_enabled,
            header_converter=headers,
        )
        renderer = fmt
        if stages is not None:
            from headwater.formats.structured import StructuredRenderer

            renderer = StructuredRenderer(fmt, *stages)
            # Superseding an interrupted snapshot reads Debezium JSON envelopes back from the
            # topics; transformed or Avro records are not that, so restarts behave as
            # Debezium's.
        else:
            # A restarted snapshot supersedes its partial output with Debezium deletes on the
            # topics; Datastream events have no such deletes (docs/datastream.md).
            # The topic store reads its topics back (the local log, or Kafka's).
            ranges = kafka_assembly.topic_ranges(kafka, naming.data_topic_prefix()) or \
                LocalTopicRanges(Path(cfg.headwater_topics_dir))
            restarts = SnapshotRestarts(ranges, tombstones_on_delete=cfg.tombstones_on_delete,
                                        batch_size=cfg.max_batch_size)
    connector = parts.connector
    offsets = kafka_assembly.offset_store(kafka, connector.partition) or FileOffsetStore(
        Path(cfg.offset_storage_file_filename), connector.partition)
    if isinstance(offsets, FileOffsetStore):
        # Before the topic log opens: a damaged, foreign or newer-format offset file refuses
        # the start here (OffsetStoreError), not after the writer took the log.
        offsets.load()
    sink: TopicWriter
    passthrough = getattr(cfg, "passthrough", {}) or {}
    if output.destination == FILES:
        sink = FileDestination(
            output.files_dir, output.stream_name or cfg.topic_prefix,
            file_format=output.files_format, max_bytes=output.files_max_bytes,
            max_ms=output.files_max_ms, compression=output.files_compression)
    else:
        sink = kafka_assembly.topic_writer(kafka) or TopicLogSink(
            Path(cfg.headwater_topics_dir),
            cfg.headwater_topics_segment_bytes,
            cfg.headwater_topics_segment_ms,
            local_retention(passthrough),
        )
    return CaptureRuntime(
        connector,
        renderer,
        sink,
        offsets,
        max_queue_size=cfg.max_queue_size,
        max_batch_size=cfg.max_batch_size,
        poll_interval_ms=cfg.poll_interval_ms,
        metrics=metrics,
        max_retries=cfg.errors_max_retries,
        retry_wait_ms=cfg.retriable_restart_connector_wait_ms,
        restarts=restarts,
    )
