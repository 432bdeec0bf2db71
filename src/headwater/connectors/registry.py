"""The connector registry: which connector runs a `connector.class`, and how the pipeline
orders the events whose `source.connector` names it.

Why: the capture entry point and the pipeline must not know the databases.  Each
`connectors/<db>/registration.py` declares one `ConnectorRegistration`; a connector living
outside this package declares one too and is found through the entry point group
``headwater.connectors`` (the entry point names the registration object) or an explicit
`register()` call.  Nothing is defaulted: an unknown `connector.class` or `source.connector`
is an error listing what is known, because ordering one connector's events with another's
rules silently loses changes (e.g. two updates of a key taken for one re-delivery).

This module stays light to import (the pipeline and the CLI import it): registrations import
their database drivers, Spark or Arrow only inside the functions that need them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import entry_points
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

from headwater.model.record import SnapshotMarker
from headwater.model.topic_naming import SCHEMA_STRATEGY

if TYPE_CHECKING:
    from headwater.engine.metrics import CaptureMetrics
    from headwater.engine.source import Connector
    from headwater.formats.debezium_json import SourceBlock
    from headwater.model.topic_naming import TopicNaming

log = logging.getLogger("headwater.connectors")

ENTRY_POINT_GROUP: Final = "headwater.connectors"
BUILTINS: Final = (
    "headwater.connectors.postgres.registration:REGISTRATION",
    "headwater.connectors.mysql.registration:REGISTRATION",
    "headwater.connectors.mongodb.registration:REGISTRATION",
    "headwater.connectors.sqlserver.registration:REGISTRATION",
    "headwater.connectors.db2.registration:REGISTRATION",
)
# `source.snapshot` values of snapshot reads (the rest, "false" or null, are stream events).
# Every SnapshotMarker but "false" (Debezium 3.x adds first, first/last_in_data_collection).
SNAPSHOT_MARKERS: Final = frozenset(
    {m.value for m in SnapshotMarker if m is not SnapshotMarker.FALSE} | {True})


class RegistryError(ValueError):
    """An unknown connector, or two registrations claiming one name."""


class CaptureConfig(Protocol):
    """What the capture runtime and the CLI read from any connector's typed configuration."""

    @property
    def connector_class(self) -> str: ...
    @property
    def topic_prefix(self) -> str: ...
    @property
    def max_queue_size(self) -> int: ...
    @property
    def max_batch_size(self) -> int: ...
    @property
    def poll_interval_ms(self) -> int: ...
    @property
    def errors_max_retries(self) -> int: ...
    @property
    def retriable_restart_connector_wait_ms(self) -> int: ...
    @property
    def key_converter(self) -> str: ...
    @property
    def value_converter(self) -> str: ...
    @property
    def passthrough(self) -> Mapping[str, str]: ...
    @property
    def key_converter_schemas_enable(self) -> bool: ...
    @property
    def value_converter_schemas_enable(self) -> bool: ...
    @property
    def header_converter(self) -> str: ...
    @property
    def tombstones_on_delete(self) -> bool: ...
    @property
    def extended_headers_enabled(self) -> bool: ...
    @property
    def provide_transaction_metadata(self) -> bool: ...
    @property
    def topic_transaction(self) -> str: ...
    @property
    def topic_heartbeat_prefix(self) -> str: ...
    @property
    def topic_naming_strategy(self) -> str | None: ...
    @property
    def topic_delimiter(self) -> str: ...
    @property
    def headwater_topics_dir(self) -> Path: ...
    @property
    def headwater_topics_segment_bytes(self) -> int: ...
    @property
    def headwater_topics_segment_ms(self) -> int: ...
    @property
    def offset_storage_file_filename(self) -> Path: ...

    def redacted(self) -> dict[str, object]: ...


class ConnectorParts(NamedTuple):
    """What a registration builds for one run."""

    connector: Connector
    source_block: SourceBlock
    unavailable_value_placeholder: str  # rendered for values the source did not send


SequenceKey = Callable[[dict[str, Any], "int | None", int], str]
"""(source block, transaction total_order, topic offset) -> the event's sequence string."""

PositionKey = Callable[[dict[str, Any]], tuple[Any, ...]]
"""source block -> the change's position: equal for the re-deliveries of one change."""

ColumnarSequences = Callable[[Any, Any, Any], Any]
"""(source StructArray, total_order Array, offsets ndarray) -> sequence string Array, equal to
the `SequenceKey` strings; raises `connectors.sequence_columns.NotColumnar` outside its shape."""


def source_position(*fields: str) -> PositionKey:
    """A `PositionKey`: the values of the `source` fields named, in that order (None for a
    field the block lacks).  Per event on the pipeline's row path: one `itemgetter` call when
    the block has every field, as it does when it follows its schema."""
    if len(fields) < 2:
        raise ValueError("a position names two or more source fields")
    every = itemgetter(*fields)

    def position(source: dict[str, Any]) -> tuple[Any, ...]:
        try:
            found: tuple[Any, ...] = every(source)
        except KeyError:
            return tuple(map(source.get, fields))
        return found

    return position


def lazy_columnar(module: str, name: str) -> ColumnarSequences:
    """A `ColumnarSequences` that imports `module` (which imports Arrow) at its first call
    and calls its function `name`: the registration stays light to import."""

    def columnar(source: Any, total_order: Any, offsets: Any) -> Any:
        build: ColumnarSequences = getattr(import_module(module), name)
        return build(source, total_order, offsets)

    return columnar


class EventOrder(NamedTuple):
    """How the pipeline orders one connector's events and recognizes re-deliveries.

    `sequence` strings must be fixed-width per connector and end with the topic offset, so that
    their lexical order is the change order and they are unique.  `columnar` (optional) builds
    them for a whole batch; without it the connector's batches take the event-by-event path.

    `columnar_position` declares, as data, the `source` fields the column-wise reader
    (pipeline.columnar) parses for this connector: each (field, Arrow type name as
    `pyarrow.type_for_alias` reads it, e.g. "int64", "string").  They are exactly the fields
    of `position` (the column-wise re-delivery key, compared as `position` compares them); the
    reader parses them besides the fields it reads for every connector (`connector`,
    `snapshot`, `sequence`, `schema`, `db`, `table`), and `columnar` reads no other, so a new
    connector goes column-wise without a change to the pipeline.  Type names, not pyarrow
    types: this module and the registrations stay light to import.  The first field should be
    the one most often distinct per change (when all its values in a batch are, the
    re-delivery pass is skipped).
    """

    sequence: SequenceKey
    position: PositionKey
    columnar: ColumnarSequences | None = None
    columnar_position: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ConnectorRegistration:
    """One connector: its names, its configuration, its runtime and its events' order."""

    name: str  # for messages ("PostgreSQL")
    connector_classes: tuple[str, ...]  # `connector.class` values, exact
    source_connectors: tuple[str, ...]  # `source.connector` values its events carry
    load_config: Callable[[Path], CaptureConfig]
    build: Callable[[CaptureConfig, CaptureMetrics, TopicNaming], ConnectorParts]
    order: EventOrder
    # `topic.naming.strategy` when unset (Debezium's default for this connector)
    default_topic_naming_strategy: str = SCHEMA_STRATEGY
    class_aliases: tuple[str, ...] = ()  # short `connector.class` names, any case
    # For the read-only commands: the configuration with its secrets left out (None: such a
    # connector's read-only commands need its secrets resolvable, as `load_config` does).
    load_config_without_secrets: Callable[[Path], CaptureConfig] | None = None
    # ``module:attribute`` of the connector's `ConfigDef` (the REST service's plugin
    # descriptions and per-property validation; empty: only whole-config validation).
    config_definition: str = ""
    # The pip extras (headwater.extras) its driver comes from: checked before a run starts,
    # so a missing driver is one line naming the extra, not an ImportError mid-start.
    extras: tuple[str, ...] = ()
    # `headwater validate`'s SQL dialect for this database (validate/source.py);
    # empty: validate cannot read this database and says so.
    validate_dialect: str = ""
    # How the pipeline reads its events (`pipeline.capabilities.MODELS`): "debezium" rows with
    # a Connect schema, or "documents" (MongoDB's Extended JSON): decided from `connector.class`
    # at start, never from a topic's records.
    event_model: str = "debezium"


class ConnectorRegistry:
    """Registrations by `connector.class` and by `source.connector`: the built-ins and the
    entry points are loaded on first use, `register` adds more."""

    def __init__(self, builtins: Iterable[str] = BUILTINS,
                 group: str | None = ENTRY_POINT_GROUP) -> None:
        self._builtins = tuple(builtins)
        self._group = group
        self._loaded = False
        self._registrations: list[ConnectorRegistration] = []
        self._by_class: dict[str, ConnectorRegistration] = {}
        self._by_source: dict[str, ConnectorRegistration] = {}
        self._broken: list[str] = []  # entry points that failed to load, for error messages

    def register(self, registration: ConnectorRegistration) -> None:
        """Add a registration; a name another registration already claims is an error."""
        if not isinstance(registration, ConnectorRegistration):
            raise RegistryError(
                f"register: expected a ConnectorRegistration, got {type(registration).__name__}")
        if any(r is registration for r in self._registrations):
            return  # the same object through an entry point and an explicit call
        if not registration.connector_classes or not registration.source_connectors:
            raise RegistryError(f"connector {registration.name!r}: a registration needs at "
                                "least one connector class and one source.connector name")
        classes = {*registration.connector_classes,
                   *(a.lower() for a in registration.class_aliases)}
        for name in classes:
            taken = self._by_class.get(name)
            if taken is not None:
                raise RegistryError(f"connector.class {name!r} of connector {registration.name!r}"
                                    f" is already registered by {taken.name!r}")
        for name in registration.source_connectors:
            taken = self._by_source.get(name)
            if taken is not None:
                raise RegistryError(f"source.connector {name!r} of connector "
                                    f"{registration.name!r} is already registered by "
                                    f"{taken.name!r}")
        self._registrations.append(registration)
        self._by_class.update(dict.fromkeys(classes, registration))
        self._by_source.update(dict.fromkeys(registration.source_connectors, registration))

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for ref in self._builtins:
            module, _, attr = ref.partition(":")
            self.register(getattr(import_module(module), attr))
        if self._group is None:
            return
        for ep in entry_points(group=self._group):
            try:
                registration = ep.load()
                self.register(registration)
            except Exception as exc:  # a broken plugin must not stop the other connectors
                log.error("connector entry point %s = %s (group %s) not registered: %s",
                          ep.name, ep.value, self._group, exc)
                self._broken.append(f"{ep.name} = {ep.value} ({exc})")

    @property
    def registrations(self) -> tuple[ConnectorRegistration, ...]:
        self._load()
        return tuple(self._registrations)

    def known_classes(self) -> tuple[str, ...]:
        return tuple(c for r in self.registrations for c in r.connector_classes)

    def for_class(self, connector_class: str | None) -> ConnectorRegistration:
        """The registration of a `connector.class` value; missing or unknown: `RegistryError`
        naming the property, the value and the known classes."""
        self._load()
        known = ", ".join(self.known_classes())
        broken = f"; entry points that failed to load: {'; '.join(self._broken)}" if (
            self._broken) else ""
        if connector_class is None or not connector_class.strip():
            raise RegistryError(f"connector.class: required; known classes: {known}{broken}")
        text = connector_class.strip()
        registration = self._by_class.get(text) or self._by_class.get(text.lower())
        if registration is None:
            raise RegistryError(f"connector.class: unknown value {text!r}; known classes: "
                                f"{known}{broken}")
        return registration

    def order_for(self, source_connector: object) -> EventOrder | None:
        """The order of events whose `source.connector` is `source_connector` (None: unknown)."""
        if not self._loaded:
            self._load()
        registration = self._by_source.get(source_connector) if isinstance(
            source_connector, str) else None
        return registration.order if registration is not None else None

    def known_source_connectors(self) -> tuple[str, ...]:
        return tuple(s for r in self.registrations for s in r.source_connectors)


REGISTRY: Final = ConnectorRegistry()


def register(registration: ConnectorRegistration) -> None:
    """Register a connector in the process-wide registry (see `ConnectorRegistry.register`)."""
    REGISTRY.register(registration)


def registration_for_class(connector_class: str | None) -> ConnectorRegistration:
    return REGISTRY.for_class(connector_class)


def event_order(source_connector: object) -> EventOrder | None:
    return REGISTRY.order_for(source_connector)
