"""`/connector-plugins`: the registered connectors, their properties, and validation in
Kafka Connect's ConfigInfos shape with the errors under the property they concern.

Why the errors are matched to properties by name: Headwater's configuration validation
reports every problem as one line starting with the property (`database.port: ...`); a
problem about several properties (two mutually exclusive ones) is listed under each named.
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Body

from headwater import __version__
from headwater.config.definition import Property, PropertyType
from headwater.connectors.registry import REGISTRY, ConnectorRegistration, RegistryError
from headwater.server.connectors import HIDDEN, definition, is_secret, validation_problems
from headwater.server.errors import ApiError, responses
from headwater.server.models import (
    ConfigInfo,
    ConfigInfos,
    ConfigKeyInfo,
    ConfigScalar,
    ConfigValueInfo,
    PluginInfo,
    flat_config,
)
from headwater.server.service import Service

_TYPES = {PropertyType.INT: "INT", PropertyType.LONG: "LONG", PropertyType.BOOLEAN: "BOOLEAN",
          PropertyType.DOUBLE: "DOUBLE", PropertyType.LIST: "LIST",
          PropertyType.PASSWORD: "PASSWORD"}
_LEAD = re.compile(r"^'?([A-Za-z0-9_.<>-]+)'?(?: \(given as '[^']*'\))?:")


def key_info(prop: Property, group: str, order: int) -> ConfigKeyInfo:
    default = prop.default
    text = None if default is None else (
        ",".join(default) if isinstance(default, tuple)
        else ("true" if default else "false") if isinstance(default, bool) else str(default))
    return ConfigKeyInfo(
        name=prop.name, type=_TYPES.get(prop.type, "STRING"), required=prop.required,
        default_value=None if prop.is_secret else text,
        importance="HIGH" if prop.required else "MEDIUM", documentation=prop.doc, group=group,
        order=order, width="NONE", display_name=prop.name, dependents=[])


def assign(problems: list[str], names: list[str]) -> dict[str, list[str]]:
    """Each problem under the property it starts with, else under every property it names,
    else under `connector.class`."""
    out: dict[str, list[str]] = {}
    for problem in problems:
        m = _LEAD.match(problem)
        lead = m.group(1) if m and m.group(1) in names else None
        hits = [lead] if lead else [n for n in names if f"'{n}'" in problem
                                    or problem.startswith(n)]
        for name in hits or ["connector.class"]:
            out.setdefault(name, []).append(problem)
    return out


def router(svc: Service) -> APIRouter:
    r = APIRouter(prefix="/connector-plugins", tags=["connector-plugins"])

    def plugin(name: str) -> ConnectorRegistration:
        try:
            return REGISTRY.for_class(name)
        except RegistryError as exc:
            raise ApiError(404, str(exc)) from None

    @r.get("", response_model=list[PluginInfo], response_model_by_alias=True)
    def list_plugins(connectorsOnly: bool = True) -> list[PluginInfo]:  # noqa: N803
        return [PluginInfo.model_validate({"class": reg.connector_classes[0],
                                           "type": "source", "version": __version__})
                for reg in REGISTRY.registrations]

    @r.get("/{plugin_name}/config", response_model=list[ConfigKeyInfo],
           responses=responses(404))
    def plugin_config(plugin_name: str) -> list[ConfigKeyInfo]:
        reg = plugin(plugin_name)
        defn = definition(reg)
        return [] if defn is None else [key_info(p, reg.name, i) for i, p in enumerate(defn)]

    @r.put("/{plugin_name}/config/validate", response_model=ConfigInfos,
           responses=responses(400, 404))
    def validate(plugin_name: str, body: Annotated[dict[str, ConfigScalar], Body()]
                 ) -> ConfigInfos:
        reg = plugin(plugin_name)
        config = flat_config(body)
        given = config.get("connector.class")
        if given is None:
            config["connector.class"] = reg.connector_classes[0]
        else:
            try:
                if REGISTRY.for_class(given) is not reg:
                    raise ApiError(400, f"connector.class {given!r} is not {plugin_name!r}")
            except RegistryError as exc:
                raise ApiError(400, str(exc)) from None
        defn = definition(reg)
        props = list(defn) if defn is not None else []
        names = [p.name for p in props]
        names += [k for k in config if k not in names]
        problems = validation_problems(svc.data_dir, config.get("name") or "validate", config)
        errors = assign(problems, names)
        configs: list[ConfigInfo] = []
        for i, name in enumerate(names):
            prop = props[i] if i < len(props) else Property(name)
            value = config.get(name)
            if value is not None and is_secret(name, defn):
                value = HIDDEN
            configs.append(ConfigInfo(
                definition=key_info(prop, reg.name, i),
                value=ConfigValueInfo(name=name, value=value, recommended_values=list(
                    prop.allowed), errors=errors.get(name, []), visible=True)))
        return ConfigInfos(name=reg.connector_classes[0],
                           error_count=sum(len(v) for v in errors.values()),
                           groups=[reg.name], configs=configs)

    return r
