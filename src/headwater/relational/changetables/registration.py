"""The registration (headwater.connectors.registry) of a change-table connector, declared
once for SQL Server and Db2.

Why: the two registrations differ only by names (connector class, source connector, modules);
everything else - the lazy loaders, the placeholder for unsent columns, the schema topic
naming strategy - is the same.  Light to import: the configuration, the connector and its
driver load on first use.
"""

from __future__ import annotations

from headwater.connectors.lazy import config_loaders, connector_builder
from headwater.connectors.registry import ConnectorRegistration, EventOrder
from headwater.engine.topic_naming import SCHEMA_STRATEGY


def changetable_registration(*, name: str, kind: str, connector_class: str, config: str,
                             loader: str, config_definition: str, connector: str,
                             source_block: str, order: EventOrder,
                             extras: tuple[str, ...] = ()) -> ConnectorRegistration:
    """The registration of connector `kind`, its parts named as `module:attribute` of
    `headwater.connectors.<kind>`: `config` (the config class), `loader` (its load function),
    `config_definition`, `connector` and `source_block`."""
    package = f"headwater.connectors.{kind}"
    load, load_without_secrets = config_loaders(f"{package}.config:{loader}")
    return ConnectorRegistration(
        name=name,
        connector_classes=(connector_class,),
        source_connectors=(kind,),
        load_config=load,
        load_config_without_secrets=load_without_secrets,
        build=connector_builder(
            kind=kind, config=f"{package}.config:{config}",
            connector=f"{package}.connector:{connector}",
            source_block=f"{package}.position:{source_block}",
            placeholder=lambda cfg: "__debezium_unavailable_value"),
        order=order,
        default_topic_naming_strategy=SCHEMA_STRATEGY,
        class_aliases=(kind,),
        config_definition=f"{package}.config:{config_definition}",
        extras=extras,
    )
