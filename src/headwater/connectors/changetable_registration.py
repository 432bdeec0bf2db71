"""The registration (headwater.connectors.registry) of a change-table connector, declared
once for SQL Server and Db2.

Why: the two registrations differ only by names (connector class, source connector, modules);
everything else - the placeholder for unsent columns, the schema topic naming strategy - is
the same.  Light to import: the configuration, the connector and its driver load on first use
(connectors.lazy).
"""

from __future__ import annotations

from headwater.connectors.lazy import package_registration
from headwater.connectors.registry import ConnectorRegistration, EventOrder
from headwater.model.topic_naming import SCHEMA_STRATEGY


def changetable_registration(*, name: str, kind: str, stem: str, connector_class: str,
                             order: EventOrder,
                             extras: tuple[str, ...] = ()) -> ConnectorRegistration:
    """The registration of connector `kind`, its parts named after `stem` in the modules of
    `headwater.connectors.<kind>` (connectors.lazy.package_registration)."""
    return package_registration(
        name=name, kind=kind, stem=stem, connector_classes=(connector_class,),
        source_connectors=(kind,),
        placeholder=lambda cfg: "__debezium_unavailable_value", order=order,
        default_topic_naming_strategy=SCHEMA_STRATEGY, class_aliases=(kind,), extras=extras)
