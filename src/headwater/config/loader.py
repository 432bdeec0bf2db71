"""Reading connector configuration files into flat ``{property: string}`` maps.

Why this module exists: Debezium users already have configurations, written in one of a few
shapes, and Headwater should accept them unchanged:

* ``.properties`` - Kafka Connect standalone / Debezium Server / embedded engine files.  Parsed
  exactly like ``java.util.Properties.load`` (``key=value``, ``key: value``, ``key value``,
  ``#``/``!`` comments, backslash line continuation, ``\\t \\n \\r \\f \\uXXXX`` escapes, leading
  whitespace trimmed, trailing whitespace kept).  One deviation: files are decoded as UTF-8 (with
  an optional BOM) rather than ISO-8859-1, because that is what people write today; ``\\uXXXX``
  escapes still work.
* ``.yaml`` / ``.yml`` and ``.json`` - nested mappings are flattened with ``.``
  (``database: {hostname: h}`` -> ``database.hostname=h``), lists of scalars are joined with
  ``,`` (a comma inside an item is written ``\\,``, the escape Debezium's list splitter
  understands), JSON numbers/booleans become their text (``true``/``false``), ``null`` means
  "not set".  YAML scalars keep their literal text (``5432``, ``yes``, ``0755`` stay exactly that)
  so that a YAML 1.1 resolver cannot silently turn a password ``yes`` into ``true``.

Wrappers are unwrapped so the rest of Headwater only ever sees connector properties:

* Kafka Connect REST form ``{"name": ..., "config": {...}}`` (also the ``GET /connectors/<n>``
  answer with ``tasks``/``type``): ``config`` is used and ``name`` comes from the top level.
* Strimzi ``KafkaConnector`` resources (``metadata.name``, ``spec.class``, ``spec.tasksMax``,
  ``spec.config``), as in the Debezium guide's deployment example.
* Debezium Server ``application.properties`` / ``application.yaml``: ``debezium.source.X`` becomes
  ``X`` and ``debezium.transforms``/``debezium.predicates`` lose their ``debezium.`` prefix; other
  ``debezium.*`` keys (sink, format, ...) are kept for pass-through.

Every error names the file and, where the format gives one, the line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import yaml

__all__ = [
    "ConfigError",
    "ConfigFileError",
    "load_properties",
    "parse_properties",
    "unwrap_debezium_server",
]

_PROPERTIES_SUFFIXES: Final = (".properties",)
_YAML_SUFFIXES: Final = (".yaml", ".yml")
_JSON_SUFFIXES: Final = (".json",)

_NATURAL_LINE: Final = re.compile(r"\r\n|\r|\n")
_WHITESPACE: Final = " \t\f"
_ESCAPES: Final = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}

_DEBEZIUM_SERVER_SOURCE: Final = "debezium.source."
_DEBEZIUM_SERVER_RENAMED: Final = ("debezium.transforms", "debezium.predicates")


class ConfigError(ValueError):
    """Invalid configuration.  ``problems`` lists every problem found (one line each).

    The base of every configuration error (files, values, secrets).  It lives in this module,
    the lowest layer of the package, so that secrets and definitions can both import it.
    """

    def __init__(self, problems: Sequence[str], source: str | None = None) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        self.source = source
        super().__init__(self._format())

    def _format(self) -> str:
        where = f" in {self.source}" if self.source else ""
        if len(self.problems) == 1:
            return f"invalid configuration{where}: {self.problems[0]}" if where else (
                self.problems[0]
            )
        lines = "\n".join(f"  - {problem}" for problem in self.problems)
        return f"{len(self.problems)} configuration problems{where}:\n{lines}"


class ConfigFileError(ConfigError):
    """A configuration file cannot be read or parsed.  The message starts with ``file:line``."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__([f"{where}: {message}"])
        self.path = path
        self.line = line


# --------------------------------------------------------------------------------------------
# Entry point


def load_properties(path: Path) -> dict[str, str]:
    """Read ``path`` (``.properties``, ``.yaml``/``.yml`` or ``.json``) into a flat string map.

    Wrappers (Kafka Connect REST, Strimzi ``KafkaConnector``, Debezium Server prefixes) are
    unwrapped.  Raises :class:`ConfigFileError` (a :class:`ConfigError`, i.e. ``ValueError``)
    naming the file and line.
    """
    source = str(path)
    suffix = path.suffix.lower()
    if suffix not in _PROPERTIES_SUFFIXES + _YAML_SUFFIXES + _JSON_SUFFIXES:
        raise ConfigFileError(
            source,
            f"unsupported configuration file type '{path.suffix or '(none)'}'; "
            "expected .properties, .yaml, .yml or .json",
        )
    text = _read(path)
    if suffix in _PROPERTIES_SUFFIXES:
        flat = parse_properties(text, source=source)
    else:
        tree = _parse_yaml(text, source) if suffix in _YAML_SUFFIXES else _parse_json(text, source)
        flat = _unwrap_and_flatten(tree, source)
    return unwrap_debezium_server(flat, source=source)


def _read(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigFileError(
            str(path), f"cannot read configuration file ({exc.strerror or exc})"
        ) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigFileError(str(path), "file is not valid UTF-8", line) from None


# --------------------------------------------------------------------------------------------
# java.util.Properties


def parse_properties(text: str, *, source: str = "<string>") -> dict[str, str]:
    """Parse Java properties text like ``java.util.Properties.load``, except that a key given
    twice is an error naming both lines (Java keeps the last silently, which hides a
    forgotten earlier setting)."""
    result: dict[str, str] = {}
    lines: dict[str, int] = {}
    for line_no, logical in _logical_lines(text):
        key, value = _split_key_value(logical)
        name = _unescape(key, source, line_no)
        if name in lines:
            raise ConfigFileError(
                source, f"property '{name}' is given twice (first at line {lines[name]})",
                line_no)
        result[name] = _unescape(value, source, line_no)
        lines[name] = line_no
    return result


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Yield ``(first natural line number, logical line)``; comments and blank lines skipped."""
    lines = _NATURAL_LINE.split(text)
    index = 0
    while index < len(lines):
        first = index + 1
        line = lines[index].lstrip(_WHITESPACE)
        index += 1
        if not line or line[0] in "#!":
            # A comment line cannot be continued with a trailing backslash.
            continue
        parts: list[str] = []
        while True:
            trailing = len(line) - len(line.rstrip("\\"))
            if trailing % 2 == 0:
                parts.append(line)
                break
            parts.append(line[:-1])
            if index >= len(lines):
                break
            # Leading whitespace of a continuation line is discarded; an empty one ends it.
            line = lines[index].lstrip(_WHITESPACE)
            index += 1
        yield first, "".join(parts)


def _split_key_value(line: str) -> tuple[str, str]:
    """Split a logical line at the first unescaped ``=``, ``:`` or whitespace (Java rules)."""
    length = len(line)
    position = 0
    value_start = length
    has_separator = False
    while position < length:
        char = line[position]
        if char == "\\":
            position += 2
            continue
        if char in "=:":
            has_separator = True
            value_start = position + 1
            break
        if char in _WHITESPACE:
            value_start = position + 1
            break
        position += 1
    key = line[: min(position, length)]
    while value_start < length:
        char = line[value_start]
        if char not in _WHITESPACE:
            if not has_separator and char in "=:":
                has_separator = True
            else:
                break
        value_start += 1
    return key, line[value_start:]


def _unescape(text: str, source: str, line_no: int) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    position = 0
    length = len(text)
    while position < length:
        char = text[position]
        if char != "\\":
            out.append(char)
            position += 1
            continue
        position += 1
        if position >= length:
            break  # a lone trailing backslash (end of file continuation) is dropped
        char = text[position]
        position += 1
        if char == "u":
            digits = text[position : position + 4]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigFileError(source, "malformed \\uXXXX escape", line_no)
            out.append(chr(int(digits, 16)))
            position += 4
        else:
            out.append(_ESCAPES.get(char, char))
    return "".join(out)


# --------------------------------------------------------------------------------------------
# YAML / JSON trees


@dataclass(frozen=True, slots=True)
class _Scalar:
    text: str | None  # None = null / "not set"
    line: int | None


@dataclass(frozen=True, slots=True)
class _Seq:
    items: tuple[_Tree, ...]
    line: int | None


@dataclass(frozen=True, slots=True)
class _Map:
    entries: dict[str, _Tree]
    lines: dict[str, int | None]
    line: int | None


_Tree = _Scalar | _Seq | _Map

_YAML_NULL: Final = "tag:yaml.org,2002:null"
_YAML_MERGE: Final = "tag:yaml.org,2002:merge"


def _parse_yaml(text: str, source: str) -> _Tree:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigFileError(source, f"invalid YAML: {problem}", line) from None
    except yaml.YAMLError as exc:
        raise ConfigFileError(source, f"invalid YAML: {exc}") from None
    if root is None:
        return _Map({}, {}, None)
    return _yaml_node(root, source)


def _yaml_node(node: yaml.Node, source: str) -> _Tree:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.ScalarNode):
        if node.tag == _YAML_NULL:
            return _Scalar(None, line)
        return _Scalar(str(node.value), line)
    if isinstance(node, yaml.SequenceNode):
        return _Seq(tuple(_yaml_node(item, source) for item in node.value), line)
    if isinstance(node, yaml.MappingNode):
        entries: dict[str, _Tree] = {}
        lines: dict[str, int | None] = {}
        merged: list[_Map] = []
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1
            if key_node.tag == _YAML_MERGE:
                merged.extend(_yaml_merge_sources(value_node, source))
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                raise ConfigFileError(source, "mapping keys must be plain strings", key_line)
            key = str(key_node.value)
            if key in entries:
                raise ConfigFileError(
                    source, f"duplicate key '{key}' (first at line {lines[key]})", key_line
                )
            entries[key] = _yaml_node(value_node, source)
            lines[key] = key_line
        for extra in merged:  # explicit keys win over << merges
            for key, value in extra.entries.items():
                if key not in entries:
                    entries[key] = value
                    lines[key] = extra.lines.get(key)
        return _Map(entries, lines, line)
    raise ConfigFileError(source, "unsupported YAML node", line)  # pragma: no cover


def _yaml_merge_sources(node: yaml.Node, source: str) -> list[_Map]:
    tree = _yaml_node(node, source)
    if isinstance(tree, _Map):
        return [tree]
    if isinstance(tree, _Seq) and all(isinstance(item, _Map) for item in tree.items):
        return [item for item in tree.items if isinstance(item, _Map)]
    raise ConfigFileError(source, "'<<' merge needs a mapping or a list of mappings", tree.line)


def _parse_json(text: str, source: str) -> _Tree:
    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        result: dict[str, object] = {}
        for key, value in items:
            if key in result:
                raise ConfigFileError(source, f"duplicate key '{key}'{_json_lines(text, key)}")
            result[key] = value
        return result

    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise ConfigFileError(source, f"invalid JSON: {exc.msg}", exc.lineno) from None
    return _json_node(data, source)


def _json_lines(text: str, key: str) -> str:
    """` (lines A and B)`: where `"key":` is written (the json module gives no positions;
    the first two places the key is written are the pair in all but contrived files)."""
    pattern = re.compile(re.escape(json.dumps(key)) + r"\s*:")
    found = [text.count("\n", 0, m.start()) + 1 for m in pattern.finditer(text)]
    return f" (lines {found[0]} and {found[1]})" if len(found) >= 2 else ""


def _json_node(value: object, source: str) -> _Tree:
    if isinstance(value, dict):
        entries = {str(k): _json_node(v, source) for k, v in value.items()}
        return _Map(entries, dict.fromkeys(entries), None)
    if isinstance(value, list):
        return _Seq(tuple(_json_node(v, source) for v in value), None)
    if value is None:
        return _Scalar(None, None)
    if isinstance(value, bool):
        return _Scalar("true" if value else "false", None)
    if isinstance(value, float):
        return _Scalar(repr(value), None)
    return _Scalar(str(value), None)


# --------------------------------------------------------------------------------------------
# Wrappers and flattening


def _unwrap_and_flatten(tree: _Tree, source: str) -> dict[str, str]:
    if not isinstance(tree, _Map):
        raise ConfigFileError(source, "the top level must be a mapping of properties", tree.line)
    config = tree.entries.get("config")
    if isinstance(config, _Map):
        # Kafka Connect REST: {"name": ..., "config": {...}, ("tasks": [...], "type": ...)}
        flat = _flatten(config, source)
        _set_wrapper_value(flat, "name", tree.entries.get("name"), source)
        return flat
    spec = tree.entries.get("spec")
    kind = tree.entries.get("kind")
    is_strimzi = isinstance(kind, _Scalar) and kind.text == "KafkaConnector"
    if isinstance(spec, _Map) and (is_strimzi or isinstance(spec.entries.get("config"), _Map)):
        # Strimzi KafkaConnector custom resource.
        spec_config = spec.entries.get("config")
        flat = _flatten(spec_config, source) if isinstance(spec_config, _Map) else {}
        metadata = tree.entries.get("metadata")
        if isinstance(metadata, _Map):
            _set_wrapper_value(flat, "name", metadata.entries.get("name"), source)
        _set_wrapper_value(flat, "connector.class", spec.entries.get("class"), source)
        _set_wrapper_value(flat, "tasks.max", spec.entries.get("tasksMax"), source)
        return flat
    return _flatten(tree, source)


def _set_wrapper_value(flat: dict[str, str], key: str, node: _Tree | None, source: str) -> None:
    if node is None:
        return
    if not isinstance(node, _Scalar):
        raise ConfigFileError(source, f"'{key}' must be a single value", node.line)
    if node.text is None:
        return
    if key in flat and flat[key] != node.text:
        raise ConfigFileError(
            source,
            f"'{key}' is '{node.text}' in the wrapper but '{flat[key]}' inside the config",
            node.line,
        )
    flat[key] = node.text


def _flatten(tree: _Map, source: str) -> dict[str, str]:
    out: dict[str, str] = {}
    lines: dict[str, int | None] = {}
    _flatten_into(tree, "", out, lines, source)
    return out


def _flatten_into(
    tree: _Map, prefix: str, out: dict[str, str], lines: dict[str, int | None], source: str
) -> None:
    for key, node in tree.entries.items():
        name = f"{prefix}{key}"
        line = tree.lines.get(key)
        if isinstance(node, _Map):
            _flatten_into(node, f"{name}.", out, lines, source)
            continue
        text = _scalar_text(node, name, source)
        if text is None:
            continue  # null: not set
        if name in out:
            first = lines.get(name)
            where = f" (first at line {first})" if first is not None else ""
            raise ConfigFileError(source, f"property '{name}' is given twice{where}", line)
        out[name] = text
        lines[name] = line


def _scalar_text(node: _Scalar | _Seq, name: str, source: str) -> str | None:
    if isinstance(node, _Scalar):
        return node.text
    items: list[str] = []
    for item in node.items:
        if not isinstance(item, _Scalar):
            raise ConfigFileError(
                source, f"list '{name}' may only contain plain values", item.line or node.line
            )
        if item.text is not None:
            items.append(item.text.replace(",", "\\,"))
    return ",".join(items)


def unwrap_debezium_server(flat: dict[str, str], *, source: str = "<string>") -> dict[str, str]:
    """Map Debezium Server keys (``debezium.source.X``) to connector keys (``X``).

    Files without any ``debezium.source.`` key are returned unchanged.
    """
    if not any(key.startswith(_DEBEZIUM_SERVER_SOURCE) for key in flat):
        return flat
    result: dict[str, str] = {}
    origin: dict[str, str] = {}
    for key, value in flat.items():
        target = key
        if key.startswith(_DEBEZIUM_SERVER_SOURCE):
            target = key[len(_DEBEZIUM_SERVER_SOURCE) :]
        elif key.startswith(_DEBEZIUM_SERVER_RENAMED):
            target = key[len("debezium.") :]
        if target in result:
            raise ConfigFileError(
                source, f"'{key}' and '{origin[target]}' both set property '{target}'"
            )
        result[target] = value
        origin[target] = key
    return result
