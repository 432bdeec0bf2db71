"""The configuration the SQL Server and Db2 connectors share: Debezium's property groups of a
change-table connector, the configuration definition built from them and the typed base.

Why a base: Debezium's SqlServerConnectorConfig and Db2ConnectorConfig declare the same
properties with the same defaults (the connection, `snapshot.mode`, `snapshot.isolation.mode`,
schema/table/column filters, `time.precision.mode`, event and operation settings) and differ
only in the connection's details, the isolation modes and each server's reading options.  Each
connector's config.py passes those differences to `changetable_properties` and
`changetable_config_def`, and its typed configuration subclasses `ChangeTableConnectorConfig`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from headwater.config.connector_common import NameFilter, check_queue
from headwater.config.definition import (
    ConfigDef,
    Property,
    ValidatedConfig,
    ValidationContext,
)
from headwater.config.output import check_output
from headwater.relational import config as relational
from headwater.relational import history_config as history
from headwater.relational.changetables.signal_config import (
    check_read_only,
    signal_collections,
    with_signal_collection,
)
from headwater.relational.config import RelationalConnectorConfig

_S, _I, _L, _B, _E, _LIST, _PW, _P = relational.TYPE_ALIASES

# Debezium's snapshot modes of both connectors (and their 1.x names); Debezium 3.x's SQL
# Server connector alone adds `when_needed_no_data`.
SNAPSHOT_MODES: Final = ("initial", "initial_only", "no_data", "when_needed", "always",
                         "recovery")
SNAPSHOT_MODE: Final = Property(
    "snapshot.mode", _E, "initial", allowed=SNAPSHOT_MODES,
    value_aliases={"schema_only": "no_data", "schema_only_recovery": "recovery"})
TIME_PRECISION_MODE: Final = Property(
    "time.precision.mode", _E, "adaptive",
    allowed=("adaptive", "adaptive_time_microseconds", "connect"))
# Accepted by Debezium, not implemented here: refused at start (config/definition.py).
IGNORED_NAMES: Final = relational.IGNORED_NAMES

Check = Callable[[ValidationContext], None]


def connector_class_property(connector_class: str, alias: str, label: str) -> Property:
    """`connector.class`: Debezium's class name, or its short alias."""

    def parse(text: str) -> str:
        if text == connector_class or text.lower() == alias:
            return connector_class
        raise ValueError(f"the {label} connector ({connector_class}, or '{alias}')")

    return Property("connector.class", _S, connector_class, parser=parse,
                    doc=f"{connector_class} (or {alias})")


def changetable_properties(*, connector_class: str, kind: str, label: str, port: int,
                           connection: Iterable[Property], driver: Property,
                           isolation_modes: tuple[str, ...],
                           reading: Iterable[Property],
                           signal_collection: Property,
                           snapshot_mode: Property = SNAPSHOT_MODE) -> tuple[Property, ...]:
    """A change-table connector's properties in Debezium's order: identity (`connector.class`
    takes `connector_class` or its alias `kind`), the connection
    (`connection`: the server's own properties after host, port and user), the driver module,
    the snapshot, the server's `reading` options, filters, events, `time.precision.mode` and
    the operation settings (with the server's form of `signal.data.collection`)."""
    connection = tuple(connection)
    return (
        *relational.identity_properties(
            connector_class_property(connector_class, kind, label), label),
        Property("database.hostname", _S, required=True),
        Property("database.port", _I, port, min_value=1, max_value=65535),
        Property("database.user", _S, required=True),
        Property("database.password", _PW),
        *connection,
        Property("database.initial.statements", _S),
        driver,
        snapshot_mode,
        Property("snapshot.isolation.mode", _E, "repeatable_read", allowed=isolation_modes),
        *relational.snapshot_properties("snapshot reader threads (Headwater reads with one)"),
        *reading,
        *relational.filter_properties("schema"),
        *relational.EVENT_PROPERTIES,
        TIME_PRECISION_MODE,
        *history.HISTORY_PROPERTIES,  # the schema history block (relational/history_config.py)
        *with_signal_collection(relational.OPERATION_PROPERTIES, signal_collection),
    )


def changetable_config_def(properties: tuple[Property, ...], label: str,
                           ignored: Iterable[str] = (),
                           output_check: Check = check_output,
                           checks: Iterable[Check] = ()) -> ConfigDef:
    """The configuration definition: `ignored` names the server's Debezium options Headwater
    does not implement (refused at start); `output_check` checks `headwater.event.format`
    and the destination (a connector without Datastream events passes its refusal);
    `checks` are the server's own cross-property checks."""
    return ConfigDef(
        properties,
        passthrough_prefixes=(*relational.PASSTHROUGH_PREFIXES, "driver.",
                              *history.HISTORY_PASSTHROUGH),
        ignored={**{name: relational.NOT_IMPLEMENTED for name in (*IGNORED_NAMES, *ignored)},
                 **history.HISTORY_IGNORED},
        ignored_patterns=relational.IGNORED_PATTERNS,
        exclusive=relational.exclusive_lists("schema"),
        checks=(check_queue, output_check, relational.check_tasks(label),
                relational.check_heartbeat, check_read_only(label), history.check_history,
                *checks),
        pattern_properties=relational.PATTERN_PROPERTIES,
    )


@dataclass(frozen=True, slots=True)
class ChangeTableConnectorConfig(RelationalConnectorConfig):
    """The validated properties both change-table connectors have; subclasses add their own
    and name their defaults."""

    connector_class: str = ""
    database_port: int = 0
    snapshot_isolation_mode: str = "repeatable_read"
    schema_include_list: tuple[str, ...] = ()
    schema_exclude_list: tuple[str, ...] = ()
    time_precision_mode: str = "adaptive"
    # include.schema.changes, schema.history.internal.* (relational/history_config.py)
    schema_history: history.SchemaHistoryConfig = field(
        default_factory=history.SchemaHistoryConfig)

    @classmethod
    def changetable_values(cls, c: ValidatedConfig) -> dict[str, Any]:
        """The shared constructor arguments from a validated configuration."""
        return {
            **cls.common_values(c),
            **c.attributes("connector.class", "database.port", "snapshot.isolation.mode",
                           "schema.include.list", "schema.exclude.list", "time.precision.mode"),
            "schema_history": history.schema_history_config(c),
        }

    def never_captured(self, schema: str, table: str) -> bool:
        """Tables the server's own capture machinery owns, never captured whatever the
        filters say (none by default)."""
        return False

    @property
    def signal_names(self) -> tuple[tuple[str, ...], ...]:
        """The signal tables `signal.data.collection` names, each as its name parts (the
        server's form: `<schema>.<table>` on Db2, `<database>.<schema>.<table>` on SQL
        Server)."""
        return signal_collections(self.signals.data_collection)

    def is_signal_table(self, schema: str, table: str, database: str | None = None) -> bool:
        """Whether the table is a signal table (`signal.data.collection`, in the server's
        form); each connector compares names as its server does."""
        return False

    def table_filter(self, schema: str, table: str, database: str | None = None) -> bool:
        """Whether `<schema>.<table>` is captured (Debezium's whole-name, case-insensitive
        regular expressions; the schema lists first).  A signal table is captured whatever
        the lists say: Debezium 3.x adds the signal tables to its table filter, and signals
        reach the connector through the signal table's change table."""
        if self.is_signal_table(schema, table, database):
            return True
        if self.never_captured(schema, table):
            return False
        if not NameFilter(self.schema_include_list, self.schema_exclude_list).admits(schema):
            return False
        return self._tables.admits(f"{schema}.{table}")
