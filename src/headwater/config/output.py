"""Where a capture's events go and in which format: `headwater.event.format`,
`headwater.datastream.stream.name`, `headwater.destination` and `headwater.destination.files.*`.

Declared once for every connector.  A property that the chosen format or destination would
ignore is an error when it changes meaning (files settings with the topic log, a stream name
for Debezium events) and a warning when it is a Debezium-only setting that Datastream events
simply do not have: nothing set is silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from headwater.config.definition import Property, PropertyType, ValidatedConfig, ValidationContext

DEBEZIUM: Final = "debezium"
DATASTREAM: Final = "datastream"
TOPICS: Final = "topics"
FILES: Final = "files"

_FILES_PROPERTIES: Final = (
    "headwater.destination.files.dir",
    "headwater.destination.files.format",
    "headwater.destination.files.max.bytes",
    "headwater.destination.files.max.ms",
    "headwater.destination.files.json.compression",
)
# Debezium envelope settings a Datastream event has no place for.
_DEBEZIUM_ONLY: Final = (
    "tombstones.on.delete",
    "key.converter.schemas.enable",
    "value.converter.schemas.enable",
    "provide.transaction.metadata",
    "extended.headers.enabled",
)
_TOPIC_LOG: Final = ("headwater.topics.segment.bytes", "headwater.topics.segment.ms")

OUTPUT_PROPERTIES: Final[tuple[Property, ...]] = (
    Property("headwater.event.format", PropertyType.ENUM, DEBEZIUM, allowed=(DEBEZIUM, DATASTREAM),
             doc="debezium (Debezium change events) or datastream (Google Datastream events; "
                 "docs/datastream.md)"),
    Property("headwater.datastream.stream.name", PropertyType.STRING,
             doc="the events' stream_name (e.g. projects/<p>/locations/<l>/streams/<id>); "
                 "default: topic.prefix; only with headwater.event.format=datastream"),
    Property("headwater.destination", PropertyType.ENUM, TOPICS, allowed=(TOPICS, FILES),
             doc="topics (the local topic log) or files (Datastream's Cloud Storage layout; "
                 "needs headwater.event.format=datastream)"),
    Property("headwater.destination.files.dir", PropertyType.PATH, Path("data/files"),
             doc="root of the files destination (relative to the config file)"),
    Property("headwater.destination.files.format", PropertyType.ENUM, "json",
             allowed=("json", "avro"), doc="json (JSON lines) or avro (object container files)"),
    Property("headwater.destination.files.max.bytes", PropertyType.LONG, 50 * 1024 * 1024,
             min_value=1, doc="a file is published before it would grow past this size"),
    Property("headwater.destination.files.max.ms", PropertyType.LONG, 60_000, min_value=1,
             doc="a file is published this long after it was opened at the latest; source "
                 "positions are acknowledged only once their files are published"),
    Property("headwater.destination.files.json.compression", PropertyType.ENUM, "none",
             allowed=("none", "gzip"),
             doc="none (.jsonl) or gzip (.jsonl.gz), as Datastream's JSON file format "
                 "compression; JSON files only"),
)


@dataclass(frozen=True, slots=True)
class OutputConfig:
    event_format: str = DEBEZIUM
    stream_name: str | None = None  # None: topic.prefix
    destination: str = TOPICS
    files_dir: Path = Path("data/files")
    files_format: str = "json"
    files_max_bytes: int = 50 * 1024 * 1024
    files_max_ms: int = 60_000
    files_compression: str = "none"

    @staticmethod
    def from_config(c: ValidatedConfig) -> OutputConfig:
        files = "headwater.destination.files."
        return OutputConfig(**c.attributes(
            event_format="headwater.event.format",
            stream_name="headwater.datastream.stream.name",
            destination="headwater.destination",
            files_dir=files + "dir",
            files_format=files + "format",
            files_max_bytes=files + "max.bytes",
            files_max_ms=files + "max.ms",
            files_compression=files + "json.compression"))


def check_output(context: ValidationContext) -> None:
    """Refuses combinations in which a set property would be ignored (module docstring)."""
    values, explicit = context.values, context.explicit
    event_format = values.get("headwater.event.format")
    destination = values.get("headwater.destination")
    if event_format == DEBEZIUM:
        if "headwater.datastream.stream.name" in explicit:
            context.error("headwater.datastream.stream.name is only used with "
                          "headwater.event.format=datastream")
        if destination == FILES:
            context.error("headwater.destination=files writes Datastream events: it needs "
                          "headwater.event.format=datastream")
    if destination == TOPICS:
        for name in _FILES_PROPERTIES:
            if name in explicit:
                context.error(f"{name} is only used with headwater.destination=files")
    if (destination == FILES and values.get("headwater.destination.files.format") == "avro"
            and "headwater.destination.files.json.compression" in explicit):
        context.error("headwater.destination.files.json.compression is only used with "
                      "headwater.destination.files.format=json (Avro files are not compressed)")
    if event_format == DATASTREAM:
        for name in _DEBEZIUM_ONLY:
            if name in explicit:
                context.warning(f"{context.label(name)} has no effect on Datastream events "
                                "(headwater.event.format=datastream)")
    if destination == FILES:
        for name in _TOPIC_LOG:
            if name in explicit:
                context.warning(f"{name} has no effect with headwater.destination=files")


def refuse_datastream(connector: str, why: str) -> Callable[[ValidationContext], None]:
    """`check_output` for a connector that writes no Datastream events: the configuration is
    refused, naming the property, rather than rendered some other way (a relational rendering
    of another shape would be wrong events)."""

    def check(context: ValidationContext) -> None:
        if context.values.get("headwater.event.format") == DATASTREAM:
            context.error(f"headwater.event.format=datastream: the {connector} connector does "
                          f"not write Datastream events ({why}); use "
                          "headwater.event.format=debezium")
            return
        check_output(context)

    return check
