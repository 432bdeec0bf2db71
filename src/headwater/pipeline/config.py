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
| headwater.pipeline.max.files.per.trigger | 1000 | segment files per micro-batch |
| headwater.pipeline.id | headwater-<topic.prefix> | the Delta app transaction id |
| headwater.pipeline.track.history.column.list | (all) | SCD2: columns whose changes make versions |
| headwater.pipeline.track.history.except.column.list | | SCD2: columns whose changes do not |

Relative paths are relative to the configuration file's directory, like the connector's.
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass
from pathlib import Path

from headwater.config import ConfigError
from headwater.config.loader import load_properties

log = logging.getLogger("headwater.pipeline.config")

MODES = ("scd1", "scd2", "changelog")
_KNOWN = (
    "headwater.pipeline.mode", "headwater.pipeline.delta.path",
    "headwater.pipeline.checkpoint.dir", "headwater.pipeline.topics",
    "headwater.pipeline.trigger.interval.ms", "headwater.pipeline.max.files.per.trigger",
    "headwater.pipeline.id", "headwater.pipeline.track.history.column.list",
    "headwater.pipeline.track.history.except.column.list",
)


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    topic_prefix: str
    topics_dir: Path
    delta_path: Path
    checkpoint_dir: Path
    topics_glob: str
    mode: str = "scd1"
    trigger_interval_ms: int = 1000
    max_files_per_trigger: int = 1000
    pipeline_id: str = ""
    track_history_column_list: tuple[str, ...] | None = None
    track_history_except_column_list: tuple[str, ...] | None = None


def _int(props: dict[str, str], name: str, default: int, errors: list[str]) -> int:
    text = props.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        errors.append(f"{name}: expected a positive integer, got {text!r}")
        return default
    if value <= 0:
        errors.append(f"{name}: expected a positive integer, got {value}")
    return value


def load_pipeline_config(path: Path) -> PipelineConfig:
    props = load_properties(path)
    base = path.parent.resolve()
    errors: list[str] = []
    prefix = props.get("topic.prefix") or props.get("database.server.name")
    if not prefix:
        errors.append("topic.prefix: required (the connector's topic prefix)")
        prefix = ""
    for name in props:
        if name.startswith("headwater.pipeline.") and name not in _KNOWN:
            close = difflib.get_close_matches(name, _KNOWN, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            log.warning("unknown property %r%s", name, hint)
    mode = props.get("headwater.pipeline.mode", "scd1").lower()
    if mode not in MODES:
        errors.append(f"headwater.pipeline.mode: {mode!r} is not one of {', '.join(MODES)}")

    def resolve(name: str, default: str) -> Path:
        p = Path(props.get(name) or default)
        return p if p.is_absolute() else base / p

    track = _list(props, "headwater.pipeline.track.history.column.list")
    track_except = _list(props, "headwater.pipeline.track.history.except.column.list")
    if track is not None and track_except is not None:
        errors.append("headwater.pipeline.track.history.column.list and "
                      "headwater.pipeline.track.history.except.column.list are exclusive")
    interval = _int(props, "headwater.pipeline.trigger.interval.ms", 1000, errors)
    max_files = _int(props, "headwater.pipeline.max.files.per.trigger", 1000, errors)
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
        max_files_per_trigger=max_files,
        pipeline_id=props.get("headwater.pipeline.id") or f"headwater-{prefix}",
        track_history_column_list=track,
        track_history_except_column_list=track_except,
    )


def _list(props: dict[str, str], name: str) -> tuple[str, ...] | None:
    text = props.get(name)
    if not text:
        return None
    return tuple(p.strip() for p in text.split(",") if p.strip())
