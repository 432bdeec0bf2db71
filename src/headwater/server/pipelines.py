"""A pipeline of the service: where its files live, its effective configuration, its secrets
hidden, and its validation.

Why the same shape as `connectors.py`: a pipeline is the property map `headwater pipeline`
takes, run by a worker process of the service; what differs is only which paths it owns.
Each gets `<data dir>/pipelines/<name>/` for the checkpoint (and its status file) and the
Delta tables, when its configuration leaves them unset, so two pipelines never share a
checkpoint.  A pipeline that names no `headwater.topics.dir` reads the topic log of the
service's connector with its `topic.prefix` (a connector created over REST keeps its topics
under its own directory, which the user need not know).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from headwater.config.secrets import is_sensitive_key
from headwater.server.connectors import (
    HIDDEN,
    InvalidConnector,
    check_name,
    problems_as_stored,
)
from headwater.server.store import ConnectorStore

CONFIG_FILE: Final = "pipeline.json"


class InvalidPipeline(InvalidConnector):
    """A pipeline configuration that cannot run as given; `problems` lists why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems)
        self.args = (f"Pipeline configuration is invalid and contains the following "
                     f"{len(problems)} error(s):\n" + "\n".join(problems),)


def pipeline_dir(data_dir: Path, name: str) -> Path:
    return data_dir / "pipelines" / name


def connector_topics_dir(data_dir: Path, prefix: str) -> str | None:
    """The topic log of the service's connector whose `topic.prefix` is `prefix`."""
    from headwater.server.connectors import effective as connector_effective

    store = ConnectorStore(data_dir)
    try:
        for row in store.all():
            if row.config.get("topic.prefix") == prefix:
                return connector_effective(data_dir, row.name, row.config).get(
                    "headwater.topics.dir")
    finally:
        store.close()
    return None


def effective(data_dir: Path, name: str, config: Mapping[str, str]) -> dict[str, str]:
    """The configuration the worker runs: the user's, plus this pipeline's own paths."""
    home = pipeline_dir(data_dir, name).resolve()
    props = dict(config)
    props.setdefault("headwater.pipeline.checkpoint.dir", str(home / "checkpoint"))
    props.setdefault("headwater.pipeline.delta.path", str(home / "delta"))
    prefix = props.get("topic.prefix") or props.get("database.server.name")
    if not props.get("headwater.topics.dir") and prefix:
        found = connector_topics_dir(data_dir, prefix)
        if found:
            props["headwater.topics.dir"] = found
    return props


def hidden(config: Mapping[str, str]) -> dict[str, str]:
    """Secret values (`headwater.pipeline.jdbc.password`, the connector's passwords when the
    file is shared) as `[hidden]`, as for connectors."""
    return {k: (HIDDEN if v and is_sensitive_key(k) else v) for k, v in config.items()}


def validation_problems(data_dir: Path, name: str, config: Mapping[str, str]) -> list[str]:
    """Every problem `headwater pipeline`'s loader finds (empty: valid); nothing connects."""
    from headwater.config import ConfigError
    from headwater.pipeline.config import load_pipeline_config

    def check(path: Path) -> list[str]:
        try:
            load_pipeline_config(path)
        except ConfigError as exc:
            return list(exc.problems)
        return []

    return problems_as_stored(data_dir, effective(data_dir, name, config), check, CONFIG_FILE)


def validate_new(data_dir: Path, name: str, config: Mapping[str, str]) -> None:
    """InvalidPipeline listing every problem."""
    try:
        check_name(name)
    except InvalidConnector as exc:
        raise InvalidPipeline([p.replace("connector name", "pipeline name")
                               for p in exc.problems]) from None
    problems = validation_problems(data_dir, name, config)
    if problems:
        raise InvalidPipeline(problems)
