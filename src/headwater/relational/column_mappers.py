"""Debezium's column mappers: truncation, masking, hashing and source-type propagation.

Why this module exists: relational Debezium connectors let a configuration rewrite selected
columns before events leave the connector (hide or pseudonymise personal data, cap huge text
values) and describe the source column in the field schema (so JDBC sinks can size columns).
The rules are the same for every relational source, so they live here, independent of the
database: a connector builds one :class:`ColumnMappers` from its configuration and, once per
column and table version, calls :meth:`ColumnMappers.apply` with the column's Connect schema,
its converter and the source metadata.  A column no rule matches comes back unchanged (the very
same objects), so the per-value hot path pays nothing for the feature.

Properties (names exactly as Debezium's; each value is a comma-separated list of regular
expressions, ``\\,`` escaping a comma):

==================================================  ===========================================
``column.truncate.to.<length>.chars``               values longer than ``length`` characters are
                                                    cut to ``length`` (0 allowed: empty string)
``column.mask.with.<length>.chars``                 character values become ``length`` ``*``
``column.mask.hash.<algorithm>.with.salt.<salt>``   character values become the hex digest of
                                                    salt + value, "hashing strategy" V1
``column.mask.hash.v2.<algorithm>.with.salt.<salt>``  the same with strategy V2
``column.propagate.source.type``                    add ``__debezium.source.column.*`` schema
                                                    parameters to matching columns
``datatype.propagate.source.type``                  the same, matched on the data type
==================================================  ===========================================

Column regular expressions are matched against the whole fully-qualified column name
(``<schema>.<table>.<column>`` for PostgreSQL, ``<database>.<table>.<column>`` for MySQL; the
caller builds it), case-insensitively, like the include/exclude lists.  Data type expressions
are matched against ``<table id>.<type name>`` (e.g. ``public.orders.varchar``; Debezium's own
tests write ``.+\\.VARCHAR``).

Decisions, with the Debezium evidence (debezium-core ``io.debezium.relational.mapping``:
``ColumnMappers``, ``TruncateColumn`` (formerly ``TruncateStrings``), ``MaskStrings``,
``PropagateSourceMetadataToSchemaParameter``, their unit tests, and ``TableSchemaBuilder``):

1. **One mapper per column, first match wins.**  ``ColumnMappers.mapperFor`` is
   ``rules.stream().filter(matches).findFirst()`` and ``TableSchemaBuilder`` applies that single
   mapper to the field schema and the value.  Rules are registered in this order by
   ``ColumnMappers.create``: every ``column.truncate.to.*``, every ``column.mask.with.*``,
   ``column.propagate.source.type``, ``datatype.propagate.source.type``, every
   ``column.mask.hash.*`` (V1), every ``column.mask.hash.v2.*``.  So a column matched by a
   truncation and a mask is only truncated, and a masked column gets no propagated type
   parameters.  A rule that turns out to be a no-op for the column (truncation of a
   ``varchar(5)`` to 10 characters, masking a non-character column) still "wins".  Within one
   family Debezium follows the iteration order of its configuration map (unspecified);
   Headwater uses the order of the properties in the configuration.
2. **Truncation** (``TruncateColumn``): applies when the column length is unknown or larger than
   the limit, then cuts every ``String`` value, and since DBZ-7925 (Debezium 2.7) every plain
   binary (``ByteBuffer``) value, whatever the column's source type: a JSON, UUID or
   ZonedTimestamp string is truncated too.  Other values (numbers, Decimals, bit strings) pass
   unchanged.  The field schema gets the parameter ``truncateLength=<length>``.  Length 0 is
   allowed (DBZ-7079: empty string).  Lengths count UTF-16 code units like Java's
   ``String.length()``, so multi-byte characters count as one and a character outside the
   Basic Multilingual Plane (emoji) as two.  *Difference*: where Java's ``substring`` would
   split such a character and emit half a surrogate pair (not valid Unicode, unencodable as
   UTF-8), Headwater drops the whole character.
3. **Masking and hashing** (``MaskStrings``) change only *character* columns (JDBC CHAR,
   VARCHAR, LONGVARCHAR, CLOB, NCHAR, NVARCHAR, LONGNVARCHAR, NCLOB, DATALINK); any other
   matched column keeps its values.  Both add the schema parameter ``masked=true`` to every
   matched column, character or not, and keep the schema type (STRING).  Headwater decides
   "character" from the source type name (:data:`CHARACTER_TYPES`: the names drivers report with
   those JDBC types, e.g. PostgreSQL ``text``/``varchar``/``bpchar``/``name``, MySQL
   ``char``/``varchar``/``*text``/``enum``/``set``); a connector that knows better passes
   ``character=``: PostgreSQL enums are VARCHAR for pgjdbc (so Debezium masks them), pass
   ``character=True`` for them; ``citext`` and other extension types are OTHER (not masked).
4. **Fixed masks replace NULL too** (``MaskingValueConverter.convert`` ignores its input;
   ``ColumnMappersTest``: "null values are masked, too").  Headwater converters never see NULL,
   so the mask converter is a :class:`MaskConverter` whose ``mask`` the caller emits for NULL
   values to match Debezium.  Hashes and truncation keep NULL.
5. **Hashing**: ``digest.update(salt.getBytes()); digest.digest(bytes(value))``, lower-case hex,
   then shortened to the column length when that is known and positive.  V1 hashes Java's
   serialisation of the ``String`` (``ObjectOutputStream.writeObject``: stream header
   ``AC ED 00 05``, ``TC_STRING 0x74`` + 2-byte length + modified UTF-8, or
   ``TC_LONGSTRING 0x7C`` + 8-byte length above 65535 bytes); V2 hashes the value's bytes.
   Reproduced byte for byte, checked against the digests in Debezium's ``MaskStringsTest`` and
   ``ColumnMappersTest``.  *Unavoidable assumption*: ``getBytes()`` uses the JVM default charset,
   UTF-8 on every JDK since 18 and on the usual Linux JVMs before; Headwater always uses UTF-8
   (and, like Java's encoder, writes ``?`` for an unpaired surrogate).  Algorithms: the Java
   ``MessageDigest`` names Python's ``hashlib`` can compute (:data:`HASH_ALGORITHMS`, any case,
   with Java's aliases ``SHA``, ``SHA1``, ``SHA256`` ...); MD2 is not available.  V2 is
   selected by the ``.v2.`` in the property name (DBZ-4033, DBZ-5366); Debezium has no separate
   "hashing strategy" property.
6. **Propagation** (``PropagateSourceMetadataToSchemaParameter``):
   ``__debezium.source.column.type`` (the source type name upper-cased),
   ``__debezium.source.column.length`` (when known), ``__debezium.source.column.scale`` (when
   known) and ``__debezium.source.column.name`` (current Debezium, for field name adjustment),
   added in that order after the type's own parameters.  Debezium also adds
   ``__debezium.source.column.comment`` with ``include.schema.comments``, which Headwater does
   not implement.  Length and scale are what the connector passes: Debezium takes them from the
   JDBC driver (pgjdbc reports ``text`` as length 2147483647 and scale 0, ``varchar(2)`` as 2 and
   0, ``numeric(5,2)`` as 5 and 2: ``AbstractRecordsProducerTest``), so the connector should pass
   the driver's values to match exactly.
7. **Message keys** are built by Debezium without mappers (``TableSchemaBuilder`` passes no
   mappers for the key schema and the key converters), while the value's fields of the same
   columns get them: a masked key column stays clear in the key and is masked in
   ``before``/``after``.  Headwater derives keys from the converted row, so a connector passes
   ``key=True`` for key columns: propagation (schema parameters only) applies to the value's
   field as in Debezium, the key keeping the unmapped schema (:attr:`Column.key_schema`);
   value-changing rules are not applied (otherwise a fixed mask would give every row the same
   key), a documented difference (docs/compatibility.md).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Final, TypeAlias

from headwater.config.definition import split_list
from headwater.model.schema import BYTES, STRING, Column, ConnectSchema

__all__ = [
    "CHARACTER_TYPES",
    "COLUMN_PROPAGATE_PROPERTY",
    "DATATYPE_PROPAGATE_PROPERTY",
    "HASH_ALGORITHMS",
    "HASH_PROPERTY",
    "MASKED_PARAMETER",
    "MASK_PROPERTY",
    "SOURCE_COLUMN_LENGTH_PARAMETER",
    "SOURCE_COLUMN_NAME_PARAMETER",
    "SOURCE_COLUMN_SCALE_PARAMETER",
    "SOURCE_COLUMN_TYPE_PARAMETER",
    "TRUNCATE_LENGTH_PARAMETER",
    "TRUNCATE_PROPERTY",
    "ColumnMappers",
    "ColumnRule",
    "Converter",
    "MaskConverter",
    "RuleKind",
    "algorithm_problem",
    "canonical_algorithm",
    "is_character_type",
    "java_serialized_string",
    "length_problem",
    "truncate_chars",
]

Converter: TypeAlias = Callable[[str], Any]
"""Source text form → Connect value (never called with None)."""

# Property names.  Patterns are matched against the whole key, case-sensitively like Java
# property names; they accept malformed lengths so that those are reported, not ignored.
TRUNCATE_PROPERTY: Final = r"column\.truncate\.to\.(?P<length>.*)\.chars"
MASK_PROPERTY: Final = r"column\.mask\.with\.(?P<length>.*)\.chars"
HASH_PROPERTY: Final = (
    r"column\.mask\.hash\.(?:(?P<v2>v2)\.)?(?P<algorithm>[^.]+)\.with\.salt\.(?P<salt>.+)"
)
COLUMN_PROPAGATE_PROPERTY: Final = "column.propagate.source.type"
DATATYPE_PROPAGATE_PROPERTY: Final = "datatype.propagate.source.type"

_TRUNCATE_KEY: Final = re.compile(TRUNCATE_PROPERTY)
_MASK_KEY: Final = re.compile(MASK_PROPERTY)
_HASH_KEY: Final = re.compile(HASH_PROPERTY)

# Schema parameters.
SOURCE_COLUMN_TYPE_PARAMETER: Final = "__debezium.source.column.type"
SOURCE_COLUMN_LENGTH_PARAMETER: Final = "__debezium.source.column.length"
SOURCE_COLUMN_SCALE_PARAMETER: Final = "__debezium.source.column.scale"
SOURCE_COLUMN_NAME_PARAMETER: Final = "__debezium.source.column.name"
MASKED_PARAMETER: Final = "masked"
TRUNCATE_LENGTH_PARAMETER: Final = "truncateLength"

_JAVA_INT_MAX: Final = 2**31 - 1
_DIGITS: Final = re.compile(r"[0-9]+")

# Java MessageDigest standard names → hashlib names; Java's SUN provider aliases.
_DIGESTS: Final[Mapping[str, str]] = {
    "MD5": "md5",
    "SHA-1": "sha1",
    "SHA-224": "sha224",
    "SHA-256": "sha256",
    "SHA-384": "sha384",
    "SHA-512": "sha512",
    "SHA-512/224": "sha512_224",
    "SHA-512/256": "sha512_256",
    "SHA3-224": "sha3_224",
    "SHA3-256": "sha3_256",
    "SHA3-384": "sha3_384",
    "SHA3-512": "sha3_512",
}
_DIGEST_ALIASES: Final[Mapping[str, str]] = {
    "SHA": "SHA-1",
    "SHA1": "SHA-1",
    "SHA224": "SHA-224",
    "SHA256": "SHA-256",
    "SHA384": "SHA-384",
    "SHA512": "SHA-512",
    "SHA512/224": "SHA-512/224",
    "SHA512/256": "SHA-512/256",
}
HASH_ALGORITHMS: Final[tuple[str, ...]] = tuple(
    name for name, python_name in _DIGESTS.items() if python_name in hashlib.algorithms_available
)
"""Java ``MessageDigest`` names accepted in ``column.mask.hash.<algorithm>...`` (any case)."""

CHARACTER_TYPES: Final = frozenset(
    {
        # PostgreSQL (pgjdbc: CHAR / VARCHAR)
        "text", "varchar", "character varying", "bpchar", "character", "char", "name",
        # MySQL (CHAR / VARCHAR / LONGVARCHAR; ENUM and SET are CHAR in Debezium's parser)
        "tinytext", "mediumtext", "longtext", "enum", "set",
        "nchar", "nvarchar", "national char", "national character", "national varchar",
        # SQL Server, Oracle, Db2
        "ntext", "varchar2", "nvarchar2", "clob", "nclob", "long varchar", "dbclob",
        "graphic", "vargraphic", "datalink",
    }
)
"""Source type names of character columns (JDBC CHAR/VARCHAR/LONGVARCHAR/CLOB/N* types)."""

_ASTRAL: Final = re.compile("[\U00010000-\U0010ffff]")
_SERIAL_HEADER: Final = b"\xac\xed\x00\x05"  # ObjectOutputStream STREAM_MAGIC, STREAM_VERSION


# --------------------------------------------------------------------------------------------
# Property-name checks (shared with the configuration definitions)


def length_problem(text: str) -> str | None:
    """Why ``text`` (the ``<length>`` of a property name) is not a length, or None."""
    if not _DIGITS.fullmatch(text) or int(text) > _JAVA_INT_MAX:
        return (
            f"'{text}' in the property name is not a length: expected an integer "
            f"0-{_JAVA_INT_MAX}"
        )
    return None


def canonical_algorithm(name: str) -> str | None:
    """The Java standard name of hash algorithm ``name`` (any case, aliases), or None."""
    upper = name.upper()
    upper = _DIGEST_ALIASES.get(upper, upper)
    return upper if upper in HASH_ALGORITHMS else None


def algorithm_problem(name: str) -> str | None:
    """Why ``name`` is not a usable hash algorithm, or None."""
    if canonical_algorithm(name) is not None:
        return None
    supported = ", ".join(HASH_ALGORITHMS)
    if name.upper() == "MD2":
        return f"hash algorithm 'MD2' is not available in Headwater; supported: {supported}"
    return (
        f"unknown hash algorithm '{name}'; supported (Java MessageDigest names, any case): "
        f"{supported}"
    )


def is_character_type(source_type: str) -> bool:
    """Whether a source type name denotes character data (see :data:`CHARACTER_TYPES`)."""
    name = source_type.split("(", 1)[0].strip().strip('"').lower()
    return name in CHARACTER_TYPES


# --------------------------------------------------------------------------------------------
# Value transformations


def truncate_chars(value: str, limit: int) -> str:
    """``value`` cut to ``limit`` characters counted as Java does (UTF-16 code units).

    A character outside the BMP counts two and is never split (it is dropped whole).
    """
    size = len(value)
    if size <= limit:
        if value.isascii() or size * 2 <= limit or _ASTRAL.search(value) is None:
            return value  # at most `limit` code units
    elif value.isascii() or _ASTRAL.search(value, 0, limit) is None:
        return value[:limit]  # the first `limit` characters are one code unit each
    units = 0
    for index, char in enumerate(value):
        units += 2 if char > "\uffff" else 1
        if units > limit:
            return value[:index]
    return value


def _surrogate_pair(match: re.Match[str]) -> str:
    code = ord(match.group()) - 0x10000
    return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))


def java_serialized_string(value: str) -> bytes:
    """The bytes ``ObjectOutputStream.writeObject(value)`` writes for a ``String`` (V1 hashing).

    Modified UTF-8: U+0000 as ``C0 80``, characters outside the BMP as two 3-byte surrogates.
    """
    if value.isascii() and "\x00" not in value:
        data = value.encode("ascii")
    else:
        data = (
            _ASTRAL.sub(_surrogate_pair, value)
            .encode("utf-8", "surrogatepass")
            .replace(b"\x00", b"\xc0\x80")
        )
    size = len(data)
    if size <= 0xFFFF:
        return _SERIAL_HEADER + b"t" + size.to_bytes(2, "big") + data
    return _SERIAL_HEADER + b"|" + size.to_bytes(8, "big") + data


def _java_bytes(value: str) -> bytes:
    """``String.getBytes()`` with UTF-8 (unpaired surrogates become ``?``, as in Java)."""
    return value.encode("utf-8", "replace")


class MaskConverter:
    """Converter of a masked character column: every value becomes :attr:`mask`.

    Debezium masks NULL values too; a caller that handles NULL itself (Headwater's codecs do)
    should emit :attr:`mask` for them when the converter is a ``MaskConverter``.
    """

    __slots__ = ("mask",)

    def __init__(self, mask: str) -> None:
        self.mask = mask

    def __call__(self, text: str) -> str:
        return self.mask

    def __repr__(self) -> str:
        return f"MaskConverter({self.mask!r})"


def _truncating(convert: Converter, limit: int, schema: ConnectSchema) -> Converter:
    if schema.type == STRING:
        if convert is str:

            def truncate_text(text: str) -> Any:
                return truncate_chars(text, limit)

            return truncate_text

        def truncate_string(text: str) -> Any:
            return truncate_chars(convert(text), limit)

        return truncate_string

    if schema.type == BYTES and schema.name is None:

        def truncate_bytes(text: str) -> Any:
            value = convert(text)
            if isinstance(value, bytes | bytearray) and len(value) > limit:
                return bytes(value[:limit])
            return value

        return truncate_bytes
    return convert


def _hashing(
    convert: Converter, algorithm: str, salt: str, v2: bool, limit: int | None
) -> Converter:
    salted = hashlib.new(_DIGESTS[algorithm])
    salted.update(_java_bytes(salt))
    copy = salted.copy
    to_bytes = _java_bytes if v2 else java_serialized_string
    if limit is not None and limit > 0:

        def hash_shortened(text: str) -> Any:
            digest = copy()
            digest.update(to_bytes(convert(text)))
            return digest.hexdigest()[:limit]

        return hash_shortened

    def hash_value(text: str) -> Any:
        digest = copy()
        digest.update(to_bytes(convert(text)))
        return digest.hexdigest()

    return hash_value


def _with_parameters(column: Column, extra: Mapping[str, str]) -> Column:
    parameters = dict(column.schema.parameters or {})
    parameters.update(extra)
    return replace(column, schema=replace(column.schema, parameters=parameters))


# --------------------------------------------------------------------------------------------
# Rules


class RuleKind(StrEnum):
    """The mapper families, in Debezium's order of precedence."""

    TRUNCATE = "truncate"
    MASK = "mask"
    PROPAGATE_COLUMN = "propagate_column"
    PROPAGATE_DATATYPE = "propagate_datatype"
    HASH_V1 = "hash_v1"
    HASH_V2 = "hash_v2"


_PRECEDENCE: Final = {kind: position for position, kind in enumerate(RuleKind)}
_SCHEMA_ONLY: Final = frozenset({RuleKind.PROPAGATE_COLUMN, RuleKind.PROPAGATE_DATATYPE})


@dataclass(frozen=True, slots=True, repr=False)
class ColumnRule:
    """One configured mapper: the property (``key``) it comes from and the regexes it matches.

    ``length``: truncation limit or mask length; ``algorithm`` (Java standard name) and
    ``salt``: hashing.  Data type rules match ``<table id>.<type name>``, the others the
    fully-qualified column name.  The salt is never shown (:attr:`display_key`).
    """

    kind: RuleKind
    key: str  # the configuration property it comes from
    regexes: tuple[str, ...]
    length: int | None = None
    algorithm: str | None = None
    salt: str | None = field(default=None, repr=False)
    patterns: tuple[re.Pattern[str], ...] = field(
        default=(), init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        compiled = tuple(re.compile(regex, re.IGNORECASE) for regex in self.regexes)
        object.__setattr__(self, "patterns", compiled)

    @property
    def display_key(self) -> str:
        """The property name with the salt (part of the name for hashing) hidden."""
        if self.salt is None:
            return self.key
        return self.key[: len(self.key) - len(self.salt)] + "********"

    def __repr__(self) -> str:
        return f"ColumnRule({self.kind.value}, {self.display_key!r}, {self.regexes!r})"

    def matches(self, qualified_name: str, datatype_name: str) -> bool:
        name = datatype_name if self.kind is RuleKind.PROPAGATE_DATATYPE else qualified_name
        return any(pattern.fullmatch(name) for pattern in self.patterns)

    def apply(
        self,
        column: Column,
        convert: Converter,
        source_type: str,
        length: int | None,
        scale: int | None,
        character: bool,
    ) -> tuple[Column, Converter]:
        """This mapper applied to one column (see the module documentation)."""
        kind = self.kind
        if kind is RuleKind.PROPAGATE_COLUMN or kind is RuleKind.PROPAGATE_DATATYPE:
            extra = {SOURCE_COLUMN_TYPE_PARAMETER: source_type.upper()}
            if length is not None:
                extra[SOURCE_COLUMN_LENGTH_PARAMETER] = str(length)
            if scale is not None:
                extra[SOURCE_COLUMN_SCALE_PARAMETER] = str(scale)
            extra[SOURCE_COLUMN_NAME_PARAMETER] = column.name
            return _with_parameters(column, extra), convert
        if kind is RuleKind.TRUNCATE:
            limit = self.length or 0
            if length is not None and 0 <= length <= limit:
                return column, convert  # values cannot be longer: Debezium's passthrough
            mapped = _with_parameters(column, {TRUNCATE_LENGTH_PARAMETER: str(limit)})
            return mapped, _truncating(convert, limit, mapped.schema)
        masked = _with_parameters(column, {MASKED_PARAMETER: "true"})
        if not character or column.schema.type != STRING:
            return masked, convert  # Debezium: passthrough converter, parameter still added
        if kind is RuleKind.MASK:
            return masked, MaskConverter("*" * (self.length or 0))
        if self.algorithm is None or self.salt is None:  # pragma: no cover - built by _rule_from
            raise ValueError(f"{self.key}: hash rule without algorithm or salt")
        return masked, _hashing(
            convert, self.algorithm, self.salt, kind is RuleKind.HASH_V2, length
        )


def _rule_from(key: str, value: object, problems: list[str]) -> ColumnRule | None:
    """The rule a configuration entry defines, None for other keys (problems are appended)."""
    kind: RuleKind
    length: int | None = None
    algorithm: str | None = None
    salt: str | None = None
    if key == COLUMN_PROPAGATE_PROPERTY:
        kind = RuleKind.PROPAGATE_COLUMN
    elif key == DATATYPE_PROPAGATE_PROPERTY:
        kind = RuleKind.PROPAGATE_DATATYPE
    elif (match := _TRUNCATE_KEY.fullmatch(key) or _MASK_KEY.fullmatch(key)) is not None:
        kind = RuleKind.TRUNCATE if match.re is _TRUNCATE_KEY else RuleKind.MASK
        problem = length_problem(match["length"])
        if problem is not None:
            problems.append(f"{key}: {problem}")
            return None
        length = int(match["length"])
    elif (match := _HASH_KEY.fullmatch(key)) is not None:
        kind = RuleKind.HASH_V2 if match["v2"] else RuleKind.HASH_V1
        algorithm = canonical_algorithm(match["algorithm"])
        if algorithm is None:
            problems.append(f"{key}: {algorithm_problem(match['algorithm'])}")
            return None
        salt = match["salt"]
    else:
        return None
    regexes = _regex_list(value)
    for regex in regexes:
        try:
            re.compile(regex, re.IGNORECASE)
        except re.error as exc:
            problems.append(f"{key}: invalid regular expression '{regex}': {exc}")
            return None
    if not regexes:
        return None
    return ColumnRule(kind, key, regexes, length, algorithm, salt)


def _regex_list(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return split_list(value.strip())
    if isinstance(value, Iterable):
        return tuple(str(item).strip() for item in value if str(item).strip())
    return split_list(str(value).strip())


# --------------------------------------------------------------------------------------------
# The rule set


@dataclass(frozen=True, slots=True)
class ColumnMappers:
    """The configured column mappers of a connector, in Debezium's order of precedence.

    Build with :meth:`from_config`; the empty value maps nothing.
    """

    rules: tuple[ColumnRule, ...] = ()

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.rules, key=lambda rule: _PRECEDENCE[rule.kind]))
        object.__setattr__(self, "rules", ordered)

    @classmethod
    def from_config(cls, properties: Mapping[str, object]) -> ColumnMappers:
        """The mappers defined by ``properties`` (other keys are ignored).

        Values are a comma-separated string of regular expressions (split like Debezium) or an
        already split sequence; empty values define nothing.  Raises ``ValueError`` listing
        every problem (malformed length, unknown algorithm, invalid regular expression).
        """
        problems: list[str] = []
        rules = [
            rule
            for key, value in properties.items()
            if (rule := _rule_from(str(key).strip(), value, problems)) is not None
        ]
        if problems:
            raise ValueError("; ".join(problems))
        return cls(tuple(rules))

    def __bool__(self) -> bool:
        return bool(self.rules)

    def rule_for(self, qualified_name: str, datatype_name: str = "") -> ColumnRule | None:
        """The rule applied to a column (the first matching one), or None.

        ``datatype_name`` is ``<table id>.<source type name>`` (for data type rules).
        """
        for rule in self.rules:
            if rule.matches(qualified_name, datatype_name):
                return rule
        return None

    def apply(
        self,
        column: Column,
        convert: Converter,
        qualified_name: str,
        source_type: str,
        length: int | None,
        scale: int | None,
        *,
        character: bool | None = None,
        key: bool = False,
    ) -> tuple[Column, Converter]:
        """``column`` with its schema adjusted and ``convert`` wrapped by the matching mapper.

        ``qualified_name`` is the column's fully-qualified name (``<schema>.<table>.<column>``
        for PostgreSQL), ``source_type`` the source's type name, ``length``/``scale`` the source
        column's (None when unknown).  ``character``: whether the column holds character data
        (masking and hashing apply only then); by default decided from ``source_type``.  A
        column no rule matches is returned as is, with the same converter object.

        ``key``: the column is part of the message key (decision 7).  Only a propagation rule
        applies then: it adds its parameters to the value's field and keeps the unmapped schema
        as the column's :attr:`Column.key_schema`, as Debezium's key schema has none.  A rule
        that changes values leaves a key column unmapped, because Headwater's keys come from the
        converted row.
        """
        if not self.rules:
            return column, convert
        suffix = "." + column.name
        if qualified_name.endswith(suffix):
            table_id = qualified_name[: -len(suffix)]
        else:
            table_id = qualified_name.rpartition(".")[0]
        rule = self.rule_for(qualified_name, f"{table_id}.{source_type}")
        if rule is None:
            return column, convert
        if key:
            if rule.kind not in _SCHEMA_ONLY:
                return column, convert
            mapped, _ = rule.apply(column, convert, source_type, length, scale, False)
            return replace(mapped, key_schema=column.schema_in_key), convert
        if character is None:
            character = is_character_type(source_type)
        return rule.apply(column, convert, source_type, length, scale, character)

    def describe(self, *, hide_salts: bool = True) -> list[str]:
        """``<property>=<regexes>`` of every rule in precedence order (salts hidden)."""
        return [
            f"{rule.display_key if hide_salts else rule.key}={','.join(rule.regexes)}"
            for rule in self.rules
        ]
