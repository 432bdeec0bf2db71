"""A connector of the service: where its files live, its effective configuration, its
secrets hidden, and its validation.

Why defaults under the data directory: a connector created over REST names no files, yet
its offsets, topics and schema history must survive restarts of the service and must not
collide with another connector's; so each gets `<data dir>/connectors/<name>/` for every
path its configuration leaves unset (a path it sets is honoured).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from headwater.config.secrets import is_sensitive_key
from headwater.connectors.lazy import imported
from headwater.connectors.registry import (
    ConnectorRegistration,
    RegistryError,
    registration_for_class,
)
from headwater.relational.history_config import uses_file_history
from headwater.streams.translate import write_config

if TYPE_CHECKING:
    from headwater.config.definition import ConfigDef

HIDDEN: Final = "[hidden]"  # Kafka Connect's rendering of a PASSWORD value
CONFIG_FILE: Final = "connector.json"
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class InvalidConnector(ValueError):
    """A connector that cannot be created as given; `problems` lists why."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        n = len(problems)
        super().__init__(f"Connector configuration is invalid and contains the following {n} "
                         f"error(s):\n" + "\n".join(problems))


def check_name(name: str) -> None:
    """Names become directory names: letters, digits, '.', '_', '-' (not '.' or '..')."""
    if not _NAME.fullmatch(name) or name in (".", ".."):
        raise InvalidConnector([f"connector name {name!r}: use letters, digits, '.', '_' or "
                                "'-' (at most 128 characters, starting with a letter or digit)"])


def connector_dir(data_dir: Path, name: str) -> Path:
    return data_dir / "connectors" / name


def registration(config: Mapping[str, str]) -> ConnectorRegistration:
    try:
        return registration_for_class(config.get("connector.class"))
    except RegistryError as exc:
        raise InvalidConnector([str(exc)]) from None


def definition(reg: ConnectorRegistration) -> ConfigDef | None:
    if not reg.config_definition:
        return None
    found: ConfigDef = imported(reg.config_definition)
    return found


def effective(data_dir: Path, name: str, config: Mapping[str, str]) -> dict[str, str]:
    """The configuration the worker runs: the user's, plus this connector's own files for
    every path it leaves unset."""
    home = connector_dir(data_dir, name).resolve()
    props = {"name": name, **config}
    defaults = {
        "offset.storage.file.filename": str(home / "offsets.json"),
        "headwater.topics.dir": str(home / "topics"),
        "schema.history.internal.file.filename": str(home / "schema-history.jsonl"),
    }
    try:
        defn = definition(registration(config))
    except InvalidConnector:
        defn = None
    if not uses_file_history(props):  # a Kafka history has no file to default
        del defaults["schema.history.internal.file.filename"]
    for key, value in defaults.items():
        if not props.get(key) and (defn is None or key in defn):
            props[key] = value
    return props


def is_secret(key: str, defn: ConfigDef | None) -> bool:
    """A PASSWORD-typed property of the connector, or a key that reads like a secret."""
    if defn is not None:
        name = defn.canonical_name(key)
        if name is not None and defn[name].is_secret:
            return True
    return is_sensitive_key(key)


def hidden(config: Mapping[str, str]) -> dict[str, str]:
    """The configuration as every response shows it: secret values as `[hidden]`."""
    try:
        defn = definition(registration(config))
    except InvalidConnector:
        defn = None
    return {k: (HIDDEN if v and is_secret(k, defn) else v) for k, v in config.items()}


def keep_hidden(new: Mapping[str, str], old: Mapping[str, str]) -> dict[str, str]:
    """A configuration read back (with `[hidden]` secrets) and sent again keeps the stored
    secret: `[hidden]` is never a real password."""
    return {k: (old[k] if v == HIDDEN and k in old else v) for k, v in new.items()}


def validation_problems(data_dir: Path, name: str, config: Mapping[str, str]) -> list[str]:
    """Every problem loading the configuration finds (empty: valid), one line each.

    Loaded as the worker will load it, from a temporary file, by the validation `headwater
    check` runs (capture.check_connector); nothing connects."""
    registration(config)  # an unknown connector.class: InvalidConnector
    from headwater.capture import check_connector

    return problems_as_stored(data_dir, effective(data_dir, name, config), check_connector,
                              CONFIG_FILE)


def problems_as_stored(data_dir: Path, config: Mapping[str, str],
                       check: Callable[[Path], list[str]], stored_name: str) -> list[str]:
    """The problems `check` finds in `config` written, as a worker will read it, to a
    temporary file under `<data_dir>/tmp` (removed after), that file named `stored_name` in
    them; an OSError or ValueError `check` raises is the one problem."""
    home = data_dir / "tmp"
    home.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".validate-", suffix=".json", dir=home)
    os.close(fd)
    try:
        write_config(Path(tmp), config)
        problems = check(Path(tmp))
    except (OSError, ValueError) as exc:
        problems = [str(exc)]
    finally:
        Path(tmp).unlink(missing_ok=True)
    return [p.replace(tmp, stored_name) for p in problems]


def validate_new(data_dir: Path, name: str, config: Mapping[str, str]) -> None:
    """InvalidConnector listing every problem, as Kafka Connect refuses a create or update."""
    check_name(name)
    if "name" in config and config["name"] != name:
        raise InvalidConnector([f"name: the configuration's name {config['name']!r} differs "
                                f"from the connector's name {name!r}"])
    problems = validation_problems(data_dir, name, config)
    if problems:
        raise InvalidConnector(problems)
