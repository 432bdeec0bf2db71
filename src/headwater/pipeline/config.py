"""Pipeline configuration: `headwater.pipeline.*` properties, usually in the connector's file.

The pipeline reads what the connector wrote, so it takes `topic.prefix` and
`headwater.topics.dir` from the same file; its own properties are:

| property | default | meaning |
|---|---|---|
| headwater.pipeline.mode | scd1 | scd1 (upsert/delete), scd2 (history), changelog (every event) |
| headwater.pipeline.delta.path | data/delta | root of the Delta tables: `<path>/<schema>/<table>` |
| headwater.pipeline.checkpoint.dir | data/checkpoints/<topic.prefix> | Spark checkpoint |
| headwater.pipeline.topics | `<topic.prefix>.*` | glob of the topics to materialize |
| headwater.pipeline.trigger.interval.ms | 1000 | micro-batch interval when running continuously |
| headwater.pipeline.max.records.per.trigger | 500000 | change records per micro-batch |
| headwater.pipeline.id | headwater-<topic.prefix> | the Delta app transaction id |
| headwater.pipeline.target | delta | delta, jdbc (PostgreSQL, MariaDB), or iceberg |
| headwater.pipeline.schema.evolution | evolve | new source columns: evolve, ignore, fail |
| headwater.pipeline.delta.compact.interval.batches | 100 | compact + vacuum (0: never) |
| headwater.pipeline.delta.writer | delta-rs | delta-rs (in the driver), or spark (delta-spark) |
| headwater.pipeline.iceberg.warehouse | data/iceberg | Iceberg: the Hadoop catalog's warehouse |
| headwater.pipeline.iceberg.catalog | headwater | Iceberg: the catalog's name in Spark SQL |
| headwater.pipeline.iceberg.compact.interval.batches | 100 | Iceberg: compact, expire (0: never) |
| headwater.pipeline.jdbc.url | | jdbc:postgresql://h:5432/db, jdbc:mysql://h:3306/db |
| headwater.pipeline.jdbc.user / .password | | credentials (${env:VAR}, ${file:/path}) |
| headwater.pipeline.jdbc.schema | public / the URL's database | target schema |
| headwater.pipeline.track.history.column.list | (all) | SCD2: columns whose changes make versions |
| headwater.pipeline.track.history.except.column.list | | SCD2: columns whose changes do not |
| headwater.pipeline.mongodb.nested | struct | MongoDB: nested values as struct/array, or json |
| headwater.pipeline.mongodb.flatten.struct | false | MongoDB: nested documents as columns `a_b` |
| headwater.pipeline.mongodb.flatten.struct.delimiter | _ | MongoDB: flattened names' delimiter |
| headwater.pipeline.source | topics | topics (the topic log), or datastream-files |
| headwater.pipeline.datastream.files.dir | destination.files.dir | the files destination's root |
| headwater.pipeline.datastream.files.format | auto | json (.jsonl[.gz]), avro, or auto (both) |
| headwater.pipeline.datastream.max.files.per.trigger | 1000 | files per micro-batch |
| headwater.pipeline.executors.min.records | 100000 | ranges this long run on executors (0: all) |
| connector.class, headwater.event.format | | the event model (`event_model`, see below) |
| spark.* | | any Spark setting, given to the session builder as is (`spark.master`, ...) |

Relative paths are relative to the configuration file's directory, like the connector's.  An
object-store URI (`s3a://`, `gs://`, `abfss://`, any `scheme://` but `file://`) as the Delta
path, the checkpoint, the topic log read (`headwater.topics.dir`) or the Datastream files
read is refused by name: the pipeline reads the topic log, the files and its checkpoint and
writes some paths of its Delta tables through the local file system (delta-rs), so such a
URI would silently become a local directory.

The event model (Debezium rows, Datastream events, MongoDB documents) comes from the
configuration, never from a topic's records: `connector.class` through the connector registry
(`ConnectorRegistration.event_model`), `headwater.event.format`, and the files source (the
files destination writes Datastream events only).  The reader, that model, the target and the
mode must be a supported combination (`capabilities`): else one error names it and says why.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from headwater.config import ConfigError
from headwater.config.definition import LENIENT
from headwater.config.kafka import KafkaSettings, kafka_settings
from headwater.config.loader import load_properties
from headwater.config.pipeline_names import PIPELINE_PROPERTIES
from headwater.config.secrets import Secret, resolve_references
from headwater.pipeline import capabilities
from headwater.pipeline.documents.options import NESTED_MODES, DocumentOptions

log = logging.getLogger("headwater.pipeline.config")

MODES = ("scd1", "scd2", "changelog")
SOURCES = ("topics", "datastream-files")
FILE_FORMATS = ("json", "avro", "auto")
EVOLUTION = ("evolve", "ignore", "fail")
TARGETS = ("delta", "jdbc", "iceberg")
# How Delta tables are written: delta-rs in the driver, or Delta Lake's Spark connector.
DELTA_WRITERS = ("delta-rs", "spark")


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    topic_prefix: str
    topics_dir: Path
    delta_path: Path
    checkpoint_dir: Path
    topics_glob: str
    mode: str = "scd1"
    trigger_interval_ms: int = 1000
    max_records_per_trigger: int = 500_000
    pipeline_id: str = ""
    track_history_column_list: tuple[str, ...] | None = None
    track_history_except_column_list: tuple[str, ...] | None = None
    target: str = "delta"
    schema_evolution: str = "evolve"
    jdbc_url: str | None = None
    jdbc_user: str | None = None
    jdbc_password: Secret | None = None
    jdbc_schema: str | None = None
    compact_interval_batches: int = 100
    # A Spark job costs seconds, the driver's column-wise path milliseconds for a small range.
    executors_min_records: int = 100_000
    documents: DocumentOptions = DocumentOptions()  # noqa: RUF009 (frozen: shared safely)
    # Set when the connector writes to Kafka (headwater.topics.store=kafka): read from there.
    kafka: KafkaSettings | None = None
    # The connector's key/value.converter* properties: how the Kafka records are read
    # (`kafka_decoders`).
    converter_props: tuple[tuple[str, str], ...] = ()
    source: str = "topics"
    files_dir: Path | None = None  # datastream-files: the files destination's root
    files_format: str = "auto"
    max_files_per_trigger: int = 1000
    # The configuration's `spark.*` properties, for the session builder (`spark_session`).
    spark_conf: tuple[tuple[str, str], ...] = ()
    delta_writer: str = "delta-rs"
    iceberg_warehouse: Path = Path("data/iceberg")
    iceberg_catalog: str = "headwater"
    iceberg_compact_interval_batches: int = 100
    # `capabilities.MODELS`, from the configuration (module docstring); None when it names
    # neither a connector nor an event format: the topic log's reader then learns each
    # topic's model from its first record (a pipeline-only file over mixed topics).
    event_model: str | None = None


def capability_cell(cfg: PipelineConfig) -> capabilities.Cell:
    """The configuration's cell of the capabilities table (an undeclared model checks as
    Debezium rows at start, Datastream events for the files reader, and each topic's own
    model again when it is learnt)."""
    reader = capabilities.reader_key(cfg.source, cfg.kafka is not None)
    model = cfg.event_model or (capabilities.DATASTREAM if reader == capabilities.FILES
                                else capabilities.ROWS)
    return capabilities.Cell(reader, model,
                             capabilities.target_key(cfg.target, cfg.delta_writer), cfg.mode)


def require_supported(cfg: PipelineConfig) -> None:
    """Refuses an unsupported reader x event model x target x mode (`capabilities`)."""
    capabilities.require(capability_cell(cfg))


def _int(props: dict[str, str], name: str, default: int, errors: list[str],
         minimum: int = 1) -> int:
    kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    text = props.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        errors.append(f"{name}: expected {kind}, got {text!r}")
        return default
    if value < minimum:
        errors.append(f"{name}: expected {kind}, got {value}")
    return value


def unknown_pipeline_properties(props: Mapping[str, str]) -> list[str]:
    """`unknown property 'headwater.pipeline.x' (did you mean ...?)` for each key of the
    pipeline's namespace no pipeline setting has: a misspelled mode or path would otherwise
    run the pipeline on its default.  The connector's validation hands this namespace here
    (`headwater check` asks this too), so the two never disagree."""
    found = []
    for name in props:
        if name.startswith("headwater.pipeline.") and name not in PIPELINE_PROPERTIES:
            close = difflib.get_close_matches(name, PIPELINE_PROPERTIES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            found.append(f"unknown property {name!r}{hint}")
    return found


def load_pipeline_config(path: Path) -> PipelineConfig:
    props = load_properties(path)
    base = path.parent.resolve()
    errors: list[str] = []
    prefix = props.get("topic.prefix") or props.get("database.server.name")
    if not prefix:
        errors.append("topic.prefix: required (the connector's topic prefix)")
        prefix = ""
    unknown = unknown_pipeline_properties(props)
    if str(props.get(LENIENT, "")).strip().lower() == "warn":
        for message in unknown:
            log.warning("%s and is ignored (%s=warn)", message, LENIENT)
    else:
        errors.extend(f"{message}: remove it (or set {LENIENT}=warn to run without it)"
                      for message in unknown)
    mode = props.get("headwater.pipeline.mode", "scd1").lower()
    if mode not in MODES:
        errors.append(f"headwater.pipeline.mode: {mode!r} is not one of {', '.join(MODES)}")

    def resolve(name: str, default: str) -> Path:
        text = props.get(name) or default
        p = Path(text.removeprefix("file://") if text.startswith("file:///") else text)
        return p if p.is_absolute() else base / p

    for name in ("headwater.pipeline.delta.path", "headwater.pipeline.checkpoint.dir",
                 "headwater.pipeline.iceberg.warehouse"):
        problem = object_store_problem(name, props.get(name) or "")
        if problem:
            errors.append(problem)

    track = _list(props, "headwater.pipeline.track.history.column.list")
    track_except = _list(props, "headwater.pipeline.track.history.except.column.list")
    if track is not None and track_except is not None:
        errors.append("headwater.pipeline.track.history.column.list and "
                      "headwater.pipeline.track.history.except.column.list are exclusive")
    target = props.get("headwater.pipeline.target", "delta").lower()
    if target not in TARGETS:
        errors.append(f"headwater.pipeline.target: {target!r} is not one of {', '.join(TARGETS)}")
    writer_text = props.get("headwater.pipeline.delta.writer")
    delta_writer = (writer_text or "delta-rs").strip().lower()
    if delta_writer not in DELTA_WRITERS:
        errors.append(f"headwater.pipeline.delta.writer: {delta_writer!r} is not one of "
                      f"{', '.join(DELTA_WRITERS)}")
    elif writer_text and target != "delta":
        errors.append(f"headwater.pipeline.delta.writer: set, but headwater.pipeline.target="
                      f"{target} writes no Delta table")
    iceberg_catalog = _iceberg(props, target, errors)
    evolution = props.get("headwater.pipeline.schema.evolution", "evolve").lower()
    if evolution not in EVOLUTION:
        errors.append(f"headwater.pipeline.schema.evolution: {evolution!r} is not one of "
                      f"{', '.join(EVOLUTION)}")
    jdbc_url = props.get("headwater.pipeline.jdbc.url") or None
    if target == "jdbc" and not jdbc_url:
        errors.append("headwater.pipeline.jdbc.url: required with headwater.pipeline.target=jdbc "
                      "(e.g. jdbc:postgresql://host:5432/db)")
    password: Secret | None = None
    raw_password = props.get("headwater.pipeline.jdbc.password")
    if raw_password:
        try:
            password = Secret(resolve_references(raw_password, base_dir=base))
        except ValueError as exc:  # the message names the variable or path, not the value
            errors.append(f"headwater.pipeline.jdbc.password: {exc}")
    interval = _int(props, "headwater.pipeline.trigger.interval.ms", 1000, errors)
    max_records = _int(props, "headwater.pipeline.max.records.per.trigger", 500_000, errors)
    compact = _int(props, "headwater.pipeline.delta.compact.interval.batches", 100, errors,
                   minimum=0)
    iceberg_compact = _int(props, "headwater.pipeline.iceberg.compact.interval.batches", 100,
                           errors, minimum=0)
    executors_min = _int(props, "headwater.pipeline.executors.min.records", 100_000, errors,
                         minimum=0)
    documents = _documents(props, errors)
    kafka: KafkaSettings | None = None
    converter_props: tuple[tuple[str, str], ...] = ()
    if props.get("headwater.topics.store", "local").strip().lower() == "kafka":
        # The connector's Kafka settings (security included) are the pipeline's too.
        try:
            raw = {k: resolve_references(str(v), base_dir=base) for k, v in props.items()
                   if not k.startswith("database.")}
            kafka = kafka_settings(raw, props.get("name") or prefix)
        except ConfigError as exc:
            errors.extend(exc.problems)
        except ValueError as exc:
            errors.append(str(exc))
        converter_props = _converter_props(props, errors)
    source = props.get("headwater.pipeline.source", "topics").lower()
    if source not in SOURCES:
        errors.append(f"headwater.pipeline.source: {source!r} is not one of {', '.join(SOURCES)}")
    files_format = props.get("headwater.pipeline.datastream.files.format", "auto").lower()
    if files_format not in FILE_FORMATS:
        errors.append(f"headwater.pipeline.datastream.files.format: {files_format!r} is not one "
                      f"of {', '.join(FILE_FORMATS)}")
    max_files = _int(props, "headwater.pipeline.datastream.max.files.per.trigger", 1000, errors)
    if source == "datastream-files" and kafka is not None:
        errors.append("headwater.pipeline.source=datastream-files reads the files destination, "
                      "but headwater.topics.store=kafka names Kafka: choose one")
    event_model = _event_model(props, source, errors)
    # The paths the source reads (by the executors too, on a cluster) are local as well.
    read_from = ["headwater.topics.dir"] if kafka is None and source == "topics" else []
    if source == "datastream-files":
        read_from.append("headwater.pipeline.datastream.files.dir"
                         if props.get("headwater.pipeline.datastream.files.dir")
                         else "headwater.destination.files.dir")
    for name in read_from:
        problem = object_store_problem(name, props.get(name) or "")
        if problem:
            errors.append(problem)
    if not errors:
        cell = capabilities.Cell(capabilities.reader_key(source, kafka is not None),
                                 event_model or capabilities.ROWS,
                                 capabilities.target_key(target, delta_writer), mode)
        reason = capabilities.refusal(cell)
        if reason is not None:
            errors.append(capabilities.message(cell, reason))
    if errors:
        raise ConfigError(errors, source=str(path))
    return PipelineConfig(
        topic_prefix=prefix,
        topics_dir=resolve("headwater.topics.dir", "data/topics"),
        delta_path=resolve("headwater.pipeline.delta.path", "data/delta"),
        checkpoint_dir=resolve("headwater.pipeline.checkpoint.dir", f"data/checkpoints/{prefix}"),
        topics_glob=props.get("headwater.pipeline.topics") or f"{prefix}.*",
        mode=mode,
        trigger_interval_ms=interval,
        max_records_per_trigger=max_records,
        pipeline_id=props.get("headwater.pipeline.id") or f"headwater-{prefix}",
        track_history_column_list=track,
        track_history_except_column_list=track_except,
        target=target,
        schema_evolution=evolution,
        jdbc_url=jdbc_url,
        jdbc_user=props.get("headwater.pipeline.jdbc.user") or None,
        jdbc_password=password,
        jdbc_schema=props.get("headwater.pipeline.jdbc.schema") or None,
        compact_interval_batches=compact,
        executors_min_records=executors_min,
        documents=documents,
        kafka=kafka,
        converter_props=converter_props,
        source=source,
        # The connector's own files destination, when the pipeline reads the same file.
        files_dir=resolve("headwater.pipeline.datastream.files.dir",
                          props.get("headwater.destination.files.dir") or "data/files"),
        files_format=files_format,
        max_files_per_trigger=max_files,
        spark_conf=tuple(sorted((k, str(v)) for k, v in props.items() if k.startswith("spark."))),
        delta_writer=delta_writer,
        iceberg_warehouse=resolve("headwater.pipeline.iceberg.warehouse", "data/iceberg"),
        iceberg_catalog=iceberg_catalog,
        iceberg_compact_interval_batches=iceberg_compact,
        event_model=event_model,
    )


def _event_model(props: dict[str, str], source: str, errors: list[str]) -> str | None:
    """The event model the configuration declares (module docstring); None: undeclared."""
    from headwater.connectors.registry import RegistryError, registration_for_class

    connector_class = props.get("connector.class")
    registered = None
    if connector_class:
        try:
            registered = registration_for_class(connector_class).event_model
        except RegistryError as exc:
            errors.append(str(exc))
    event_format = (props.get("headwater.event.format") or "").strip().lower()
    if event_format == "datastream":  # (MongoDB's Datastream events too: rows of _id, payload)
        return capabilities.DATASTREAM
    if event_format:
        return capabilities.DOCUMENTS if registered == capabilities.DOCUMENTS else capabilities.ROWS
    if source == capabilities.FILES:
        return capabilities.DATASTREAM  # the files destination writes nothing else
    return registered


_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def object_store_problem(name: str, value: str) -> str | None:
    """The error for a property holding an object-store URI (None for a local path or a
    `file://` URI): `Path` would turn `s3a://bucket/x` into a local `s3a:/bucket/x`."""
    found = _URI.match(value.strip())
    if found is None or found.group(1).lower() == "file":
        return None
    return (f"{name}: {value!r} is a {found.group(1)}:// URI; the pipeline takes local (or "
            "mounted) paths only for now, a URI would become a local directory next to the "
            "configuration file")


_CATALOG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _iceberg(props: dict[str, str], target: str, errors: list[str]) -> str:
    """The Iceberg catalog's name, and the checks of the Iceberg target's settings."""
    catalog = (props.get("headwater.pipeline.iceberg.catalog") or "headwater").strip()
    if not _CATALOG_NAME.match(catalog):
        errors.append(f"headwater.pipeline.iceberg.catalog: {catalog!r} is not a Spark catalog "
                      "name (letters, digits and _, not starting with a digit)")
    if target != "iceberg":
        for name in ("headwater.pipeline.iceberg.warehouse", "headwater.pipeline.iceberg.catalog",
                     "headwater.pipeline.iceberg.compact.interval.batches"):
            if props.get(name):
                errors.append(f"{name}: set, but headwater.pipeline.target={target} writes no "
                              "Iceberg table")
    return catalog


def _documents(props: dict[str, str], errors: list[str]) -> DocumentOptions:
    """The MongoDB document path's options (see `documents.options`)."""
    nested = props.get("headwater.pipeline.mongodb.nested", "struct").lower()
    if nested not in NESTED_MODES:
        errors.append(f"headwater.pipeline.mongodb.nested: {nested!r} is not one of "
                      f"{', '.join(NESTED_MODES)}")
    flatten = props.get("headwater.pipeline.mongodb.flatten.struct", "false").lower()
    if flatten not in ("true", "false"):
        errors.append(f"headwater.pipeline.mongodb.flatten.struct: expected true or false, got "
                      f"{flatten!r}")
    delimiter = props.get("headwater.pipeline.mongodb.flatten.struct.delimiter", "_")
    if not delimiter:
        errors.append("headwater.pipeline.mongodb.flatten.struct.delimiter: must not be empty")
    return DocumentOptions(nested, flatten == "true", delimiter or "_")


def _list(props: dict[str, str], name: str) -> tuple[str, ...] | None:
    text = props.get(name)
    if not text:
        return None
    return tuple(p.strip() for p in text.split(",") if p.strip())


def _converter_props(props: dict[str, str], errors: list[str]) -> tuple[tuple[str, str], ...]:
    """The converter properties the Kafka records are read with, checked now (a wrong one is
    a configuration error at start, not a failed first batch)."""
    from headwater.connect.props import PluginConfigError
    from headwater.pipeline.kafka_decoders import converter_problems, decoder_for

    out = tuple(sorted((k, str(v)) for k, v in props.items()
                       if k.startswith(("key.converter", "value.converter"))))
    problems = converter_problems(dict(out))
    if problems:
        errors.extend(problems)
        return out
    try:
        decoder_for(dict(out))
    except (PluginConfigError, ValueError) as exc:
        errors.extend(str(exc).split("\n"))
    return out
