"""Declarative property definitions, validation and typed access.

Why this module exists: Debezium's value is largely its configuration contract - hundreds of
users have working ``.properties`` files whose names, defaults and accepted values Headwater
must honour.  Rather than reading strings ad hoc all over the code base, each connector declares
its properties once (:class:`Property`), groups them in a :class:`ConfigDef`, and
:meth:`ConfigDef.validate` turns raw strings into a :class:`ValidatedConfig` of typed values.

Validation is designed for humans reading the output once, at startup:

* every problem is collected and reported together in one :class:`ConfigError`;
* each message names the property, the offending value (never for secrets) and what is expected,
  with a "did you mean" suggestion for misspelt enum values and unknown property names;
* Debezium 1.x names (``database.server.name``, ``*.whitelist``/``*.blacklist`` ...) still work
  as aliases, with a deprecation warning pointing at the current name;
* secrets (``Property.type == PASSWORD``) become :class:`~headwater.config.secrets.Secret`
  objects and ``${env:...}``/``${file:...}`` references are resolved in every value;
* unknown properties are warnings, not errors (Kafka Connect behaves the same way), except that
  pass-through prefixes (``transforms.``, ``offset.storage.`` ...) are never reported;
* families of properties whose names carry a value (Debezium's
  ``column.truncate.to.<length>.chars``) are declared once as a :class:`PatternProperty`: each
  matching key is validated like a property, its name's variable parts by a key check, and the
  typed values are in :attr:`ValidatedConfig.patterned`.

Values are trimmed like Kafka's ``ConfigDef`` does; an empty value means "not set" (the
default applies, or a required property is reported missing).  Warnings are also logged on the
``headwater.config`` logger.
"""

from __future__ import annotations

import difflib
import logging
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, TypeAlias, TypedDict

from headwater.config.loader import ConfigError
from headwater.config.pipeline_names import PIPELINE_PROPERTIES
from headwater.config.secrets import (
    REDACTED,
    Secret,
    SecretReferenceError,
    has_reference,
    is_sensitive_key,
    resolve_references,
)

__all__ = [
    "ConfigDef",
    "ConfigError",
    "ConfigValue",
    "PatternProperty",
    "Property",
    "PropertyType",
    "ValidateOptions",
    "ValidatedConfig",
    "ValidationContext",
    "Validator",
    "attribute_name",
    "list_members_validator",
    "regex_list_validator",
    "split_list",
]

logger = logging.getLogger("headwater.config")

ConfigValue: TypeAlias = str | int | float | bool | tuple[str, ...] | Secret | Path | None
"""A typed configuration value: the Python type follows :class:`PropertyType`."""

Validator: TypeAlias = Callable[[ConfigValue], str | None]
"""Extra check run on a converted, non-``None`` value; returns a problem description or ``None``."""

Parser: TypeAlias = Callable[[str], ConfigValue]
"""Custom string -> value conversion; raises ``ValueError(<what is expected>)`` on bad input."""

Check: TypeAlias = Callable[["ValidationContext"], None]
"""Cross-property check; reports through :meth:`ValidationContext.error` / ``warning``."""

KeyCheck: TypeAlias = Callable[["re.Match[str]"], str | None]
"""Check of the variable parts of a :class:`PatternProperty` key; returns a problem or ``None``."""

_INT32: Final = (-(2**31), 2**31 - 1)
_INT64: Final = (-(2**63), 2**63 - 1)
_INTEGER_TEXT: Final = re.compile(r"[+-]?[0-9]+")
_DOUBLE_TEXT: Final = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


# Set to `warn` in a configuration, properties Headwater does not honour (unknown, or Debezium
# options it does not implement) are warned about instead of refused.
LENIENT: Final = "headwater.config.unsupported.properties"

class PropertyType(StrEnum):
    """How a property's string value is converted (and the Python type it becomes)."""

    STRING = "string"  # str
    INT = "int"  # int, 32-bit like Kafka's INT
    LONG = "long"  # int, 64-bit
    BOOLEAN = "bool"  # bool; only true/false (any case), as Kafka
    DOUBLE = "double"  # float, finite
    ENUM = "enum"  # str, canonicalised to lowercase, one of Property.allowed
    LIST = "list"  # tuple[str, ...], comma-separated (``\\,`` escapes a comma)
    PASSWORD = "password"  # Secret
    PATH = "path"  # pathlib.Path, relative paths resolved against the config file's directory


# What a value of each type must be (Property.expectation); the number types add their range.
_EXPECTED: Final = MappingProxyType({
    PropertyType.STRING: "a string", PropertyType.PASSWORD: "a string",
    PropertyType.INT: "an integer", PropertyType.LONG: "an integer",
    PropertyType.DOUBLE: "a number", PropertyType.BOOLEAN: "true or false",
    PropertyType.LIST: "a comma-separated list", PropertyType.PATH: "a file system path",
})
_RANGED: Final = frozenset({PropertyType.INT, PropertyType.LONG, PropertyType.DOUBLE})


@dataclass(frozen=True, slots=True)
class Property:
    """One configuration property.

    ``default`` is the typed value used when the property is not set (``None`` = no value).
    ``aliases`` are older names (a deprecation warning names the current one).  ``value_aliases``
    maps deprecated enum values to their replacement (warning); ``rejected_values`` maps known but
    unsupported enum values to the reason.  ``hint`` is appended to "invalid value" errors (for
    enums only when there is no "did you mean" suggestion).  ``deprecated`` (a reason) warns
    when the property is set.
    """

    name: str
    type: PropertyType = PropertyType.STRING
    default: ConfigValue = None
    required: bool = False
    allowed: tuple[str, ...] = ()
    validator: Validator | None = field(default=None, compare=False)
    doc: str = ""
    aliases: tuple[str, ...] = ()
    deprecated: str | None = None
    min_value: int | float | None = None
    max_value: int | float | None = None
    value_aliases: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    hint: str | None = None
    parser: Parser | None = field(default=None, compare=False)
    rejected_values: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        if self.type is PropertyType.ENUM:
            if not self.allowed:
                raise ValueError(f"enum property {self.name} needs allowed values")
            if any(value != value.lower() for value in self.allowed):
                raise ValueError(f"enum property {self.name}: allowed values must be lowercase")
            unknown = set(self.value_aliases.values()) - set(self.allowed)
            if unknown:
                raise ValueError(f"{self.name}: value aliases point to unknown {sorted(unknown)}")
        if self.required and self.default is not None:
            raise ValueError(f"required property {self.name} cannot have a default")

    @property
    def is_secret(self) -> bool:
        return self.type is PropertyType.PASSWORD

    def expectation(self) -> str:
        """Human description of acceptable values (used in error messages and docs)."""
        if self.type is PropertyType.ENUM:
            return "one of " + ", ".join(self.allowed)
        text = _EXPECTED[self.type]
        if self.type in _RANGED:
            return text + _range_text(self.min_value, self.max_value)
        return text


@dataclass(frozen=True, slots=True)
class PatternProperty:
    """A family of properties named by a pattern, e.g. ``column.truncate.to.<length>.chars``.

    ``pattern`` is a regular expression matched against the whole key.  A matching key is first
    checked by ``key_check`` (given the match: the name's variable parts), then its value is
    converted and validated like a :class:`Property` of ``type`` with ``validator`` and
    ``hint``.  ``name`` is the human form used in documentation and suggestions.  Problems are
    reported under the key as written.
    """

    name: str
    pattern: str
    type: PropertyType = PropertyType.STRING
    validator: Validator | None = field(default=None, compare=False)
    key_check: KeyCheck | None = field(default=None, compare=False)
    doc: str = ""
    hint: str | None = None

    def template(self) -> Property:
        """The :class:`Property` each matching key's value is validated as."""
        return Property(self.name, self.type, validator=self.validator, doc=self.doc,
                        hint=self.hint)


def _range_text(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f" {_num(low)}-{_num(high)}"
    if low is not None:
        return f" >= {_num(low)}"
    if high is not None:
        return f" <= {_num(high)}"
    return ""


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def split_list(value: str) -> tuple[str, ...]:
    """Split a comma-separated list like Debezium's ``RegExSplitterByComma``.

    A comma preceded by a backslash (``\\,``) does not split and becomes a plain comma; other
    backslash sequences are kept (they belong to the regular expression).  Items are trimmed and
    empty items dropped.
    """
    parts: list[str] = []
    buffer: list[str] = []
    position = 0
    while position < len(value):
        char = value[position]
        if char == "\\" and position + 1 < len(value):
            buffer.append(value[position : position + 2])
            position += 2
            continue
        if char == ",":
            parts.append("".join(buffer))
            buffer = []
        else:
            buffer.append(char)
        position += 1
    parts.append("".join(buffer))
    items = (part.strip().replace("\\,", ",") for part in parts)
    return tuple(item for item in items if item)


def regex_list_validator(value: ConfigValue) -> str | None:
    """Validator for LIST properties holding regular expressions (compiled case-insensitively)."""
    if not isinstance(value, tuple):
        return None
    problems = []
    for pattern in value:
        try:
            re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            problems.append(f"invalid regular expression '{pattern}': {exc}")
    return "; ".join(problems) or None


def list_members_validator(allowed: Iterable[str],
                           problem: Callable[[list[str]], str]) -> Validator:
    """Validator for LIST properties whose items, in any case, must be among `allowed`;
    `problem` words the error from the items that are not."""
    members = frozenset(allowed)

    def check(value: ConfigValue) -> str | None:
        if isinstance(value, tuple):
            unknown = [item for item in value if item.lower() not in members]
            if unknown:
                return problem(unknown)
        return None

    return check


class ValidateOptions(TypedDict, total=False):
    """The keyword options of `ConfigDef.validate`, for entry points that pass them on."""

    base_dir: Path | None
    source: str | None
    env: Mapping[str, str] | None


# --------------------------------------------------------------------------------------------
# Validation result


@dataclass(frozen=True, slots=True)
class ValidatedConfig:
    """Typed, validated values of one :class:`ConfigDef` plus the warnings produced.

    ``values`` holds every defined property (defaults filled in, ``None`` when unset and without
    default); ``explicit`` the canonical names the user actually set; ``passthrough`` the raw
    (reference-resolved) strings of pass-through keys such as ``transforms.*``; ``patterned``
    the typed values of keys matching a :class:`PatternProperty`, by key, in the order given
    (empty values are left out); ``types`` each defined property's type (what `typed` checks).
    """

    values: Mapping[str, ConfigValue]
    warnings: tuple[str, ...] = ()
    explicit: frozenset[str] = frozenset()
    passthrough: Mapping[str, str] = field(default_factory=dict)
    source: str | None = None
    base_dir: Path | None = None
    patterned: Mapping[str, ConfigValue] = field(default_factory=dict)
    types: Mapping[str, PropertyType] = field(default_factory=dict)

    def __getitem__(self, name: str) -> ConfigValue:
        return self.values[name]

    def __contains__(self, name: object) -> bool:
        return name in self.values

    def is_set(self, name: str) -> bool:
        """True if the user gave the property (under its name or an alias)."""
        return name in self.explicit

    def get_str(self, name: str) -> str:
        value = self.values[name]
        if not isinstance(value, str):
            raise TypeError(f"{name} is {type(value).__name__}, not str")
        return value

    def get_optional_str(self, name: str) -> str | None:
        value = self.values[name]
        return None if value is None else self.get_str(name)

    def get_int(self, name: str) -> int:
        value = self.values[name]
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{name} is {type(value).__name__}, not int")
        return value

    def get_float(self, name: str) -> float:
        value = self.values[name]
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise TypeError(f"{name} is {type(value).__name__}, not float")
        return float(value)

    def get_bool(self, name: str) -> bool:
        value = self.values[name]
        if not isinstance(value, bool):
            raise TypeError(f"{name} is {type(value).__name__}, not bool")
        return value

    def get_list(self, name: str) -> tuple[str, ...]:
        value = self.values[name]
        if value is None:
            return ()
        if not isinstance(value, tuple):
            raise TypeError(f"{name} is {type(value).__name__}, not a list")
        return value

    def get_path(self, name: str) -> Path:
        value = self.values[name]
        if not isinstance(value, Path):
            raise TypeError(f"{name} is {type(value).__name__}, not Path")
        return value

    def get_optional_path(self, name: str) -> Path | None:
        return None if self.values[name] is None else self.get_path(name)

    def get_secret(self, name: str) -> Secret | None:
        value = self.values[name]
        if value is not None and not isinstance(value, Secret):
            raise TypeError(f"{name} is {type(value).__name__}, not Secret")
        return value

    def typed(self, name: str) -> ConfigValue:
        """The value of ``name`` checked against its property's type by that type's getter
        (``get_int`` for INT and LONG, ...); None when unset without default, except a LIST,
        which is then ()."""
        kind = self.types.get(name)
        if kind is None:
            raise KeyError(f"{name} is not a property of this configuration")
        if kind is PropertyType.LIST:
            return self.get_list(name)
        if self.values[name] is None:
            return None
        getter: Callable[[ValidatedConfig, str], ConfigValue] = _GETTERS[kind]
        return getter(self, name)

    def attributes(self, *names: str, **renamed: str) -> dict[str, Any]:
        """The `typed` values of the properties ``names`` by attribute name, the property's
        name in snake case (`attribute_name`); ``renamed`` maps an attribute to a property whose
        name does not follow that rule.  For a typed configuration's constructor."""
        values = {attribute_name(name): self.typed(name) for name in names}
        values.update({attribute: self.typed(name) for attribute, name in renamed.items()})
        return values

    def redacted(self) -> dict[str, str | int | float | bool | list[str] | None]:
        """All values as plain JSON-friendly data, secrets replaced by ``'********'``."""
        out: dict[str, str | int | float | bool | list[str] | None] = {}
        for name in sorted(self.values):
            out[name] = _plain(self.values[name])
        for key in sorted(self.patterned):
            out[key] = _plain(self.patterned[key])
        for key in sorted(self.passthrough):
            out[key] = REDACTED if is_sensitive_key(key) else self.passthrough[key]
        return out

    def __repr__(self) -> str:
        return (
            f"ValidatedConfig(source={self.source!r}, values={self.redacted()!r}, "
            f"warnings={list(self.warnings)!r})"
        )


_GETTERS: Final[Mapping[PropertyType, Callable[[ValidatedConfig, str], ConfigValue]]] = {
    PropertyType.STRING: ValidatedConfig.get_str,
    PropertyType.ENUM: ValidatedConfig.get_str,
    PropertyType.INT: ValidatedConfig.get_int,
    PropertyType.LONG: ValidatedConfig.get_int,
    PropertyType.BOOLEAN: ValidatedConfig.get_bool,
    PropertyType.DOUBLE: ValidatedConfig.get_float,
    PropertyType.LIST: ValidatedConfig.get_list,
    PropertyType.PASSWORD: ValidatedConfig.get_secret,
    PropertyType.PATH: ValidatedConfig.get_path,
}

_CAMEL_HUMP: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def attribute_name(name: str) -> str:
    """A property's attribute in a typed configuration: ``database.trustServerCertificate`` ->
    ``database_trust_server_certificate`` (``.`` and ``-`` -> ``_``, camelCase split)."""
    return _CAMEL_HUMP.sub("_", name).lower().replace(".", "_").replace("-", "_")


def _plain(value: ConfigValue) -> str | int | float | bool | list[str] | None:
    if isinstance(value, Secret):
        return REDACTED
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


class ValidationContext:
    """What a cross-property :data:`Check` sees: converted values and a way to report."""

    def __init__(
        self,
        values: Mapping[str, ConfigValue],
        explicit: frozenset[str],
        failed: frozenset[str],
        given_as: Mapping[str, str],
    ) -> None:
        self.values = values
        self.explicit = explicit
        self.failed = failed  # properties whose own validation failed (skip checks on them)
        self._given_as = given_as
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def ok(self, *names: str) -> bool:
        """True when none of ``names`` failed its own validation."""
        return not any(name in self.failed for name in names)

    def label(self, name: str) -> str:
        """The property name, plus the alias the user wrote if different."""
        given = self._given_as.get(name, name)
        return name if given == name else f"{name} (given as '{given}')"

    def error(self, message: str) -> None:
        self.errors.append(message)

    def warning(self, message: str) -> None:
        self.warnings.append(message)


# --------------------------------------------------------------------------------------------
# Definition set


class ConfigDef:
    """A set of :class:`Property` definitions plus the rules that relate them.

    ``passthrough_prefixes``: keys starting with one of these (or equal to one without its final
    dot) are kept verbatim, never "unknown".
    ``ignored``: ``{name: reason}`` of recognised properties Headwater does not implement (a
    warning says so instead of "unknown property").  ``ignored_patterns``: the same for families
    of names (regular expressions matched against the whole key).  ``pattern_properties``:
    families of supported properties named by a pattern (:class:`PatternProperty`; the first
    matching one applies).  ``exclusive``: pairs of properties that may not both be set.
    ``checks``: cross-property checks.
    """

    def __init__(
        self,
        properties: Iterable[Property],
        *,
        passthrough_prefixes: Iterable[str] = (),
        ignored: Mapping[str, str] | None = None,
        ignored_patterns: Iterable[tuple[str, str]] = (),
        exclusive: Iterable[tuple[str, str]] = (),
        checks: Iterable[Check] = (),
        pattern_properties: Iterable[PatternProperty] = (),
    ) -> None:
        self._properties: dict[str, Property] = {}
        self._aliases: dict[str, str] = {}
        for prop in properties:
            if prop.name in self._properties or prop.name in self._aliases:
                raise ValueError(f"property {prop.name} defined twice")
            self._properties[prop.name] = prop
        for prop in self._properties.values():
            for alias in prop.aliases:
                if alias in self._properties or alias in self._aliases:
                    raise ValueError(f"alias {alias} of {prop.name} clashes")
                self._aliases[alias] = prop.name
        self.passthrough_prefixes: tuple[str, ...] = tuple(passthrough_prefixes)
        self.ignored: Mapping[str, str] = MappingProxyType(dict(ignored or {}))
        self.ignored_patterns: tuple[tuple[re.Pattern[str], str], ...] = tuple(
            (re.compile(pattern), reason) for pattern, reason in ignored_patterns
        )
        self.exclusive: tuple[tuple[str, str], ...] = tuple(exclusive)
        self.checks: tuple[Check, ...] = tuple(checks)
        self.pattern_properties: tuple[PatternProperty, ...] = tuple(pattern_properties)
        self._patterns: tuple[tuple[re.Pattern[str], PatternProperty, Property], ...] = tuple(
            (re.compile(p.pattern), p, p.template()) for p in self.pattern_properties
        )
        for first, second in self.exclusive:
            if first not in self._properties or second not in self._properties:
                raise ValueError(f"exclusive pair ({first}, {second}) names unknown properties")

    # -- introspection ------------------------------------------------------------------------

    def __contains__(self, name: object) -> bool:
        return name in self._properties

    def __iter__(self) -> Iterator[Property]:
        return iter(self._properties.values())

    def __len__(self) -> int:
        return len(self._properties)

    def __getitem__(self, name: str) -> Property:
        return self._properties[name]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._properties)

    def canonical_name(self, key: str) -> str | None:
        """The defined property ``key`` refers to (itself or through an alias), else ``None``."""
        if key in self._properties:
            return key
        return self._aliases.get(key)

    def extend(
        self,
        properties: Iterable[Property] = (),
        *,
        passthrough_prefixes: Iterable[str] = (),
        ignored: Mapping[str, str] | None = None,
        checks: Iterable[Check] = (),
        pattern_properties: Iterable[PatternProperty] = (),
    ) -> ConfigDef:
        """A new definition with extra properties / prefixes / checks (e.g. for a sink)."""
        return ConfigDef(
            [*self._properties.values(), *properties],
            passthrough_prefixes=(*self.passthrough_prefixes, *passthrough_prefixes),
            ignored={**self.ignored, **(ignored or {})},
            ignored_patterns=[(p.pattern, reason) for p, reason in self.ignored_patterns],
            exclusive=self.exclusive,
            checks=(*self.checks, *checks),
            pattern_properties=(*self.pattern_properties, *pattern_properties),
        )

    def unknown_keys(self, keys: Iterable[str]) -> list[str]:
        """One problem per key that is neither a property (or alias) nor a pattern property
        nor under a pass-through prefix, with the closest name; for property sets stored
        before they are validated as a whole (a stream's connection profile)."""
        problems = []
        for key in keys:
            if (self.canonical_name(key) is not None or self._is_passthrough(key)
                    or self._pattern_for(key) is not None):
                continue
            near = self._suggest(key, defined_only=True)
            problems.append(f"unknown property '{key}'"
                            + (f" (did you mean '{near}'?)" if near else ""))
        return problems

    def merge(self, base: Mapping[str, str], overrides: Mapping[str, str]) -> dict[str, str]:
        """``base`` updated with ``overrides``; an override also replaces alias spellings."""
        merged = dict(base)
        for key, value in overrides.items():
            canonical = self.canonical_name(key)
            if canonical is not None:
                for existing in list(merged):
                    if existing != key and self.canonical_name(existing) == canonical:
                        del merged[existing]
            merged[key] = value
        return merged

    def _is_passthrough(self, key: str) -> bool:
        # "transforms." also covers "transforms" itself (the list of transform names).
        return key.startswith(self.passthrough_prefixes) or any(
            key == prefix.rstrip(".") for prefix in self.passthrough_prefixes
        )

    def _pattern_for(
        self, key: str
    ) -> tuple[re.Match[str], PatternProperty, Property] | None:
        for pattern, family, template in self._patterns:
            match = pattern.fullmatch(key)
            if match is not None:
                return match, family, template
        return None

    def _ignored_reason(self, key: str) -> str | None:
        if key in self.ignored:
            return self.ignored[key]
        for pattern, reason in self.ignored_patterns:
            if pattern.fullmatch(key):
                return reason
        return None

    def _suggest(self, key: str, *, cutoff: float = 0.6, defined_only: bool = False) -> str | None:
        candidates = [*self._properties, *self._aliases]
        if not defined_only:
            candidates.extend(self.ignored)
            candidates.extend(p.name for p in self.pattern_properties)
            # The pipeline's keys share the file and pass through here: a misspelt one
            # (`headwater.pipline.delta.path`) is nearest to its own, not to a connector's.
            candidates.extend(PIPELINE_PROPERTIES)
        matches = difflib.get_close_matches(key, candidates, n=1, cutoff=cutoff)
        if not matches:
            return None
        return self._aliases.get(matches[0], matches[0])

    # -- validation ---------------------------------------------------------------------------

    def validate(
        self,
        raw: Mapping[str, object],
        *,
        base_dir: Path | None = None,
        source: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ValidatedConfig:
        """Convert and check ``raw``; raise :class:`ConfigError` listing every problem.

        ``base_dir`` anchors relative paths (PATH properties and ``${file:...}`` references),
        normally the directory of the configuration file.  ``env`` replaces ``os.environ`` for
        ``${env:...}`` references (tests).
        """
        errors: list[str] = []
        warnings: list[str] = []
        given: dict[str, tuple[str, str]] = {}  # canonical -> (key as written, raw text)
        passthrough: dict[str, str] = {}
        conflicting: set[str] = set()
        patterned_given: dict[str, str] = {}

        unsupported: list[str] = []  # set but not honoured: errors unless LENIENT says warn
        lenient = str(raw.get(LENIENT, "")).strip().lower()
        if lenient not in ("", "error", "warn"):
            errors.append(f"{LENIENT}: '{lenient}' is not one of error, warn")
        for raw_key, raw_value in raw.items():
            key = str(raw_key).strip()
            text = _as_text(raw_value)
            if text is None or key == LENIENT:
                continue
            canonical = self.canonical_name(key)
            if canonical is None and self._pattern_for(key) is not None:
                patterned_given[key] = text
                continue
            if canonical is None:
                self._unknown_key(
                    key, text=text, passthrough=passthrough, warnings=warnings,
                    unsupported=unsupported, errors=errors, base_dir=base_dir, env=env,
                )
                continue
            if canonical != key:
                warnings.append(
                    f"property '{key}' is deprecated; use '{canonical}' instead"
                )
            if canonical in given:
                other_key, other_text = given[canonical]
                if other_text.strip() != text.strip():
                    shown = (
                        "" if self._properties[canonical].is_secret
                        else f" ('{other_text.strip()}' vs '{text.strip()}')"
                    )
                    errors.append(
                        f"{canonical}: set twice with different values, as '{other_key}' and "
                        f"'{key}'{shown}; keep only '{canonical}'"
                    )
                    conflicting.add(canonical)
                    continue
                warnings.append(
                    f"'{other_key}' and '{key}' both set '{canonical}' to the same value; "
                    f"keep only '{canonical}'"
                )
                if key != canonical:
                    continue
            given[canonical] = (key, text)

        if lenient == "warn":
            warnings.extend(f"{message} and is ignored ({LENIENT}=warn)"
                            for message in unsupported)
        else:
            # A property that is set but not honoured would change nothing silently.
            errors.extend(f"{message}: remove it (or set {LENIENT}=warn to run without it)"
                          for message in unsupported)
        values: dict[str, ConfigValue] = {}
        failed: set[str] = set()
        explicit: set[str] = set()
        for name, prop in self._properties.items():
            if name in conflicting:
                failed.add(name)
                continue
            label = name
            entry = given.get(name)
            if entry is not None and entry[0] != name:
                label = f"{name} (given as '{entry[0]}')"
            value, problem, notes = _convert(prop, entry[1] if entry else None, base_dir, env)
            warnings.extend(f"{label}: {note}" for note in notes)
            if problem is not None:
                errors.append(f"{label}: {problem}")
                failed.add(name)
                continue
            if value is None:
                value = prop.default
                if isinstance(value, Path) and base_dir is not None and not value.is_absolute():
                    value = base_dir / value
                if prop.required and value is None:
                    what = f" ({prop.doc})" if prop.doc else ""
                    errors.append(f"{label}: missing required property{what}")
                    failed.add(name)
                    continue
            else:
                explicit.add(name)
                if prop.deprecated:
                    warnings.append(f"{label}: deprecated: {prop.deprecated}")
            values[name] = value

        patterned: dict[str, ConfigValue] = {}
        for key, text in patterned_given.items():
            found = self._pattern_for(key)
            assert found is not None
            name_match, family, template = found
            problem = family.key_check(name_match) if family.key_check is not None else None
            typed: ConfigValue = None
            if problem is None:
                typed, problem, notes = _convert(template, text, base_dir, env)
                warnings.extend(f"{key}: {note}" for note in notes)
            if problem is not None:
                errors.append(f"{key}: {problem}")
            elif typed is not None:
                patterned[key] = typed

        for first, second in self.exclusive:
            if _has_value(given, first) and _has_value(given, second):
                errors.append(
                    f"{_label(first, given)} and {_label(second, given)} are mutually "
                    f"exclusive; set only one of them"
                )

        context = ValidationContext(
            MappingProxyType(values),
            frozenset(explicit),
            frozenset(failed),
            {name: entry[0] for name, entry in given.items()},
        )
        for check in self.checks:
            check(context)
        errors.extend(context.errors)
        warnings.extend(context.warnings)

        if errors:
            raise ConfigError(errors, source)
        for message in warnings:
            logger.warning("%s%s", f"{source}: " if source else "", message)
        return ValidatedConfig(
            values=MappingProxyType(values),
            warnings=tuple(warnings),
            explicit=frozenset(explicit),
            passthrough=MappingProxyType(passthrough),
            source=source,
            base_dir=base_dir,
            patterned=MappingProxyType(patterned),
            types=MappingProxyType({p.name: p.type for p in self._properties.values()}),
        )

    def _unknown_key(
        self,
        key: str,
        *,
        text: str,
        passthrough: dict[str, str],
        warnings: list[str],
        unsupported: list[str],
        errors: list[str],
        base_dir: Path | None,
        env: Mapping[str, str] | None,
    ) -> None:
        if self._is_passthrough(key):
            # A near miss of a defined property under a pass-through prefix is still worth a
            # word (offset.storage.file.filenme), but with a high bar.
            near = self._suggest(key, cutoff=0.9, defined_only=True)
            if near is not None and not key.startswith(f"{near}."):
                warnings.append(f"property '{key}' is passed through; did you mean '{near}'?")
            try:
                passthrough[key] = resolve_references(text, env=env, base_dir=base_dir)
            except SecretReferenceError as exc:
                errors.append(f"{key}: {exc}")
            return
        reason = self._ignored_reason(key)
        if reason is not None:
            unsupported.append(f"property '{key}' is not supported by Headwater"
                               + (f" ({reason})" if reason else ""))
            return
        suggestion = self._suggest(key)
        if suggestion is not None:
            unsupported.append(f"unknown property '{key}' (did you mean '{suggestion}'?)")
        else:
            unsupported.append(f"unknown property '{key}'")


def _has_value(given: Mapping[str, tuple[str, str]], name: str) -> bool:
    return name in given and bool(given[name][1].strip())


def _label(name: str, given: Mapping[str, tuple[str, str]]) -> str:
    entry = given.get(name)
    if entry is None or entry[0] == name:
        return f"'{name}'"
    return f"'{name}' (given as '{entry[0]}')"


def _as_text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Secret):
        return value.reveal()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list | tuple):
        return ",".join(str(item).replace(",", "\\,") for item in value)
    return str(value)


def _convert(
    prop: Property,
    text: str | None,
    base_dir: Path | None,
    env: Mapping[str, str] | None,
) -> tuple[ConfigValue, str | None, list[str]]:
    """Return ``(value, problem, warnings)``; ``value`` is ``None`` when not set."""
    notes: list[str] = []
    if text is None:
        return None, None, notes
    origin = ""
    if has_reference(text):
        try:
            resolved = resolve_references(text, env=env, base_dir=base_dir)
        except SecretReferenceError as exc:
            return None, str(exc), notes
        origin = f" (from {text.strip()})"
        text = resolved
    if prop.is_secret:
        # Literal passwords are trimmed (Kafka does); resolved ones are used verbatim.
        secret = text if origin else text.strip()
        return (Secret(secret) if secret else None), None, notes
    stripped = text.strip()
    if not stripped:
        return None, None, notes

    def invalid(expected: str) -> tuple[ConfigValue, str | None, list[str]]:
        message = f"expected {expected}, got '{stripped}'{origin}"
        if prop.hint:
            message += f"; {prop.hint}"
        return None, message, notes

    value: ConfigValue
    if prop.parser is not None:
        try:
            value = prop.parser(stripped)
        except ValueError as exc:
            return invalid(str(exc) or prop.expectation())
    elif prop.type in (PropertyType.INT, PropertyType.LONG):
        low, high = _INT32 if prop.type is PropertyType.INT else _INT64
        low = max(low, int(prop.min_value)) if prop.min_value is not None else low
        high = min(high, int(prop.max_value)) if prop.max_value is not None else high
        if not _INTEGER_TEXT.fullmatch(stripped) or not low <= int(stripped) <= high:
            return invalid(prop.expectation())
        value = int(stripped)
    elif prop.type is PropertyType.DOUBLE:
        if not _DOUBLE_TEXT.fullmatch(stripped) or not math.isfinite(float(stripped)):
            return invalid(prop.expectation())
        value = float(stripped)
        if (prop.min_value is not None and value < prop.min_value) or (
            prop.max_value is not None and value > prop.max_value
        ):
            return invalid(prop.expectation())
    elif prop.type is PropertyType.BOOLEAN:
        lowered = stripped.lower()
        if lowered not in ("true", "false"):
            return invalid(prop.expectation())
        value = lowered == "true"
    elif prop.type is PropertyType.ENUM:
        lowered = stripped.lower()
        if lowered in prop.value_aliases:
            replacement = prop.value_aliases[lowered]
            notes.append(f"value '{lowered}' is deprecated; using '{replacement}' instead")
            lowered = replacement
        if lowered in prop.rejected_values:
            return None, (
                f"'{stripped}'{origin} is not supported by Headwater: "
                f"{prop.rejected_values[lowered]}; expected {prop.expectation()}"
            ), notes
        if lowered not in prop.allowed:
            close = difflib.get_close_matches(lowered, [*prop.allowed, *prop.value_aliases], n=1)
            message = f"'{stripped}'{origin} is not {prop.expectation()}"
            if close:
                message += f"; did you mean '{prop.value_aliases.get(close[0], close[0])}'?"
            elif prop.hint:
                message += f"; {prop.hint}"
            return None, message, notes
        value = lowered
    elif prop.type is PropertyType.LIST:
        value = split_list(stripped)
        if not value:
            return None, None, notes
    elif prop.type is PropertyType.PATH:
        path = Path(stripped).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        value = path
    else:
        value = stripped

    if prop.validator is not None:
        problem = prop.validator(value)
        if problem is not None:
            suffix = f"; {prop.hint}" if prop.hint else ""
            return None, f"{problem}{suffix}", notes
    return value, None, notes
