"""A registration's functions, declared by the dotted names of what they use.

A registration must stay light to import (the CLI and the pipeline import every one), so the
configuration loader, the connector and its source block are named as ``module:attribute``
and imported on first call.  What is left of each connector's registration is declarations;
the loading and the type check are written once, here.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from headwater.connectors.registry import CaptureConfig, ConnectorParts, ConnectorRegistration

if TYPE_CHECKING:
    from headwater.connectors.registry import EventOrder
    from headwater.engine.metrics import CaptureMetrics
    from headwater.model.topic_naming import TopicNaming

Build = Callable[[CaptureConfig, "CaptureMetrics", "TopicNaming"], ConnectorParts]


def imported(name: str) -> Any:
    """The object a ``module:attribute`` name names."""
    module, _, attribute = name.partition(":")
    return getattr(import_module(module), attribute)


def config_loaders(loader: str) -> tuple[Callable[[Path], CaptureConfig],
                                         Callable[[Path], CaptureConfig]]:
    """`load_config` and `load_config_without_secrets` from a `ConfigLoader.load`-like
    function (``(path, *, secrets) -> (config, warnings)``)."""

    def load(path: Path) -> CaptureConfig:
        config: CaptureConfig = imported(loader)(path)[0]
        return config

    def load_without_secrets(path: Path) -> CaptureConfig:
        config: CaptureConfig = imported(loader)(path, secrets=False)[0]
        return config

    return load, load_without_secrets


def connector_builder(*, kind: str, config: str, connector: str, source_block: str,
                      placeholder: Callable[[Any], str]) -> Build:
    """`build` for a connector class taking ``(config, metrics, naming)`` and a source block
    class taking the connector's `source.connector` name; `kind` is the connector type the logs
    show, `placeholder` the value rendered for unsent columns."""

    def build(cfg: CaptureConfig, metrics: CaptureMetrics, naming: TopicNaming
              ) -> ConnectorParts:
        from headwater.log_context import connector_type

        expected = imported(config)
        if not isinstance(cfg, expected):
            raise TypeError(f"the {kind} connector needs a {expected.__name__}, got "
                            f"{type(cfg).__name__}")
        connector_type.set(kind)
        built = imported(connector)(cfg, metrics, naming)
        return ConnectorParts(built, imported(source_block)(built.context.kind),
                              placeholder(cfg))

    return build


def package_registration(*, name: str, kind: str, stem: str, connector_classes: tuple[str, ...],
                         source_connectors: tuple[str, ...], placeholder: Callable[[Any], str],
                         order: EventOrder, default_topic_naming_strategy: str,
                         class_aliases: tuple[str, ...], extras: tuple[str, ...] = (),
                         validate_dialect: str = "",
                         event_model: str = "debezium") -> ConnectorRegistration:
    """The registration of the built-in connector of package `headwater.connectors.<kind>`,
    its parts the attributes its modules name after `stem` and `kind` (for stem `Postgres`,
    kind `postgres`): in `config` the config class `PostgresConnectorConfig`, its load
    function `load_postgres_config` and its definition `POSTGRES_CONFIG_DEF`; in `connector`
    `PostgresConnector`; in `position` `PostgresSourceBlock`.  Why: every built-in
    registration wires the same modules the same way; only the names and declarations
    differ."""
    package = f"headwater.connectors.{kind}"
    load, load_without_secrets = config_loaders(f"{package}.config:load_{kind}_config")
    return ConnectorRegistration(
        name=name,
        connector_classes=connector_classes,
        source_connectors=source_connectors,
        load_config=load,
        load_config_without_secrets=load_without_secrets,
        build=connector_builder(
            kind=kind, config=f"{package}.config:{stem}ConnectorConfig",
            connector=f"{package}.connector:{stem}Connector",
            source_block=f"{package}.position:{stem}SourceBlock", placeholder=placeholder),
        order=order,
        default_topic_naming_strategy=default_topic_naming_strategy,
        class_aliases=class_aliases,
        config_definition=f"{package}.config:{kind.upper()}_CONFIG_DEF",
        extras=extras,
        validate_dialect=validate_dialect,
        event_model=event_model,
    )
