"""Debezium's column mappers: truncation, masking, hashing, source-type propagation.

Why: these properties rewrite what leaves the connector (personal data masked or pseudonymised,
long values cut), so a Debezium configuration must produce the same values and schemas here.
Expected digests are computed independently in this file (``hashlib`` over a hand-written Java
serialisation) and also taken verbatim from Debezium's own unit tests (``MaskStringsTest``,
``ColumnMappersTest``).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headwater.config.definition import (
    ConfigDef,
    ConfigError,
    PatternProperty,
    Property,
    PropertyType,
    regex_list_validator,
)
from headwater.connectors.postgres.config import (
    POSTGRES_CONFIG_DEF,
    PostgresConnectorConfig,
    validate_postgres_config,
)
from headwater.convert.decimal import decimal_schema
from headwater.model.schema import BYTES, INT32, STRING, Column, ConnectSchema
from headwater.relational.column_mappers import (
    HASH_ALGORITHMS,
    ColumnMappers,
    MaskConverter,
    RuleKind,
    canonical_algorithm,
    is_character_type,
    java_serialized_string,
    truncate_chars,
)

BASE = {
    "topic.prefix": "fulfillment",
    "database.hostname": "localhost",
    "database.user": "debezium",
    "database.dbname": "postgres",
}
NAME = "public.customers.email"
TYPE_KEY = "__debezium.source.column.type"
LENGTH_KEY = "__debezium.source.column.length"
SCALE_KEY = "__debezium.source.column.scale"
NAME_KEY = "__debezium.source.column.name"


def column(
    name: str = "email",
    type_name: str = "varchar",
    schema: ConnectSchema | None = None,
    length: int | None = None,
    scale: int | None = None,
) -> Column:
    return Column(
        name=name,
        position=0,
        type_name=type_name,
        schema=schema if schema is not None else ConnectSchema(STRING, True),
        length=length,
        scale=scale,
    )


def mappers(**properties: str) -> ColumnMappers:
    """Mappers from keyword properties (``__`` in a keyword stands for ``.``)."""
    return ColumnMappers.from_config({k.replace("__", "."): v for k, v in properties.items()})


def apply(
    m: ColumnMappers,
    col: Column | None = None,
    convert: Callable[[str], Any] = str,
    qualified: str = NAME,
    **kwargs: Any,
) -> tuple[Column, Callable[[str], Any]]:
    col = col if col is not None else column()
    return m.apply(
        col,
        convert,
        qualified,
        kwargs.pop("source_type", col.type_name),
        kwargs.pop("length", col.length),
        kwargs.pop("scale", col.scale),
        **kwargs,
    )


def one(key: str, regexes: str = NAME) -> ColumnMappers:
    return ColumnMappers.from_config({key: regexes})


# --------------------------------------------------------------------------------------------
# Independent reference implementations (no code shared with the module under test)


def java_write_object_string(value: str) -> bytes:
    """``new ObjectOutputStream(bos).writeObject(value)`` for a String, from the JDK spec:
    STREAM_MAGIC AC ED, STREAM_VERSION 00 05, TC_STRING 0x74 + u2 length (or TC_LONGSTRING 0x7C
    + u8 length) + DataOutput modified UTF-8 of the UTF-16 code units."""
    raw = value.encode("utf-16-be", "surrogatepass")
    units = struct.unpack(f">{len(raw) // 2}H", raw)
    data = bytearray()
    for unit in units:
        if 0x0001 <= unit <= 0x007F:
            data.append(unit)
        elif unit <= 0x07FF:  # includes U+0000
            data += bytes([0xC0 | (unit >> 6), 0x80 | (unit & 0x3F)])
        else:
            data += bytes([0xE0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3F), 0x80 | (unit & 0x3F)])
    if len(data) <= 0xFFFF:
        return b"\xac\xed\x00\x05\x74" + struct.pack(">H", len(data)) + bytes(data)
    return b"\xac\xed\x00\x05\x7c" + struct.pack(">Q", len(data)) + bytes(data)


def salted_hex(algorithm: str, salt: str, data: bytes) -> str:
    digest = hashlib.new(algorithm)
    digest.update(salt.encode("utf-8"))
    digest.update(data)
    return digest.hexdigest()


def java_substring(value: str, limit: int) -> str:
    """Java's ``length() > n ? substring(0, n)`` over UTF-16 units, minus a dangling half pair."""
    units = value.encode("utf-16-le", "surrogatepass")
    if len(units) // 2 <= limit:
        return value
    cut = units[: 2 * limit]
    if cut and 0xD800 <= int.from_bytes(cut[-2:], "little") <= 0xDBFF:
        cut = cut[:-2]
    return cut.decode("utf-16-le")


# ============================================================================================
# Truncation


@pytest.mark.parametrize(
    ("limit", "text", "expected"),
    [
        (10, "123456789", "123456789"),  # below
        (10, "1234567890", "1234567890"),  # at
        (10, "12345678901", "1234567890"),  # above
        (10, "12345678901234567890", "1234567890"),  # Debezium's ColumnMappersTest values
        (3, "žšč-ř", "žšč"),  # two-byte UTF-8 characters count one each
        (2, "日本語", "日本"),  # three-byte characters
        (3, "été", "été"),  # at the limit, non-ASCII
        (4, "a😀b", "a😀b"),  # emoji: two UTF-16 units, as Java's String.length()
        (3, "a😀b", "a😀"),
        (2, "a😀b", "a"),  # Java would keep half of the pair; the whole emoji is dropped
        (1, "😀", ""),
        (0, "anything", ""),  # DBZ-7079: length 0 allowed
        (0, "", ""),
        (5, "", ""),
    ],
)
def test_truncation(limit: int, text: str, expected: str) -> None:
    mapped, convert = apply(one(f"column.truncate.to.{limit}.chars"))
    assert convert(text) == expected
    assert mapped.schema.parameters == {"truncateLength": str(limit)}
    assert mapped.schema.type == STRING and mapped.schema.optional


def test_truncation_runs_after_the_type_converter() -> None:
    _, convert = apply(one("column.truncate.to.3.chars"), convert=str.upper)
    assert convert("abcdef") == "ABC"


@given(st.text(), st.integers(min_value=0, max_value=12))
def test_truncation_counts_like_java(text: str, limit: int) -> None:
    truncated = truncate_chars(text, limit)
    assert truncated == java_substring(text, limit)
    assert text.startswith(truncated)


@pytest.mark.parametrize(
    ("length", "applies"),
    [(None, True), (20, True), (11, True), (10, False), (5, False)],
)
def test_truncation_only_when_column_can_be_longer(length: int | None, applies: bool) -> None:
    """TruncateColumn.isTruncationPossible: length unknown or larger than the limit."""
    col = column(length=length)
    original = str
    mapped, convert = apply(one("column.truncate.to.10.chars"), col, original)
    if applies:
        assert mapped.schema.parameters == {"truncateLength": "10"}
        assert convert("x" * 30) == "x" * 10
    else:
        assert mapped is col and convert is original


def test_truncation_of_named_strings_and_binary_values() -> None:
    """Debezium truncates any String (JSON, UUID ...) and plain binary value (DBZ-7925)."""
    json = column(type_name="jsonb", schema=ConnectSchema(STRING, True, "io.debezium.data.Json", 1))
    _, convert = apply(one("column.truncate.to.4.chars"), json, source_type="jsonb")
    assert convert('{"a": 1}') == '{"a"'
    raw = column(type_name="bytea", schema=ConnectSchema(BYTES, True))
    mapped, convert = apply(
        one("column.truncate.to.2.chars"), raw, bytes.fromhex, source_type="bytea"
    )
    assert convert("010203") == b"\x01\x02"
    assert convert("01") == b"\x01"
    assert mapped.schema.parameters == {"truncateLength": "2"}


def test_truncation_leaves_other_values_but_adds_the_parameter() -> None:
    number = column(type_name="int4", schema=ConnectSchema(INT32, False))
    mapped, convert = apply(one("column.truncate.to.1.chars"), number, int, source_type="int4")
    assert convert is int
    assert mapped.schema.parameters == {"truncateLength": "1"}
    assert mapped.schema.type == INT32 and not mapped.schema.optional


# ============================================================================================
# Masking


@pytest.mark.parametrize(
    ("length", "text", "expected"),
    [
        (10, "12345678901234567890", "**********"),
        (10, "123456789", "**********"),
        (3, "žšč-ř", "***"),
        (1, "", "*"),
        (0, "secret", ""),  # length 0: empty string (documented by Debezium)
    ],
)
def test_masking(length: int, text: str, expected: str) -> None:
    mapped, convert = apply(one(f"column.mask.with.{length}.chars"))
    assert convert(text) == expected
    assert isinstance(convert, MaskConverter) and convert.mask == expected
    assert mapped.schema.type == STRING and mapped.schema.optional
    assert mapped.schema.parameters == {"masked": "true"}


@pytest.mark.parametrize("source_type", ["text", "varchar", "bpchar", "name", "TEXT", "char"])
def test_masking_applies_to_character_types(source_type: str) -> None:
    _, convert = apply(one("column.mask.with.2.chars"), column(type_name=source_type))
    assert convert("abc") == "**"


@pytest.mark.parametrize(
    ("source_type", "schema"),
    [
        ("uuid", ConnectSchema(STRING, True, "io.debezium.data.Uuid", 1)),
        ("jsonb", ConnectSchema(STRING, True, "io.debezium.data.Json", 1)),
        ("int4", ConnectSchema(INT32, True)),
        ("numeric", decimal_schema(10, 2, True)),
        ("mood", ConnectSchema(STRING, True)),  # a PostgreSQL enum: not known as character
    ],
)
def test_masking_leaves_non_character_values(source_type: str, schema: ConnectSchema) -> None:
    """MaskStrings.create: passthrough for non-character JDBC types; the parameter stays."""
    col = column(type_name=source_type, schema=schema)
    mapped, convert = apply(one("column.mask.with.5.chars"), col, int)
    assert convert is int
    assert mapped.schema.parameters == {**(schema.parameters or {}), "masked": "true"}
    assert mapped.schema.type == schema.type and mapped.schema.name == schema.name


def test_character_override() -> None:
    enum = column(type_name="mood")
    _, convert = apply(one("column.mask.with.5.chars"), enum, character=True)
    assert convert("happy") == "*****"
    _, convert = apply(one("column.mask.with.5.chars"), column(), str, character=False)
    assert convert is str


def test_character_types() -> None:
    assert is_character_type("character varying(255)")
    assert is_character_type('"VARCHAR"')
    assert not is_character_type("int4")
    assert not is_character_type("_text")  # arrays are not character columns


# ============================================================================================
# Hashing

WORDS = ["hello", "12345678901234567890", "", "žluťoučký kůň", "日本語", "a😀b", "nul\x00byte"]


@pytest.mark.parametrize("algorithm", ["MD5", "SHA-1", "SHA-256", "SHA-512", "SHA3-256"])
@pytest.mark.parametrize("text", WORDS)
def test_hash_v1_serialises_the_java_string(algorithm: str, text: str) -> None:
    python_name = algorithm.lower().replace("-", "").replace("sha3", "sha3_")
    expected = salted_hex(python_name, "CzQMA0cB5K", java_write_object_string(text))
    _, convert = apply(one(f"column.mask.hash.{algorithm}.with.salt.CzQMA0cB5K"))
    assert convert(text) == expected


@pytest.mark.parametrize("algorithm", ["MD5", "SHA-1", "SHA-256", "SHA-512", "SHA3-256"])
@pytest.mark.parametrize("text", WORDS)
def test_hash_v2_hashes_the_utf8_bytes(algorithm: str, text: str) -> None:
    python_name = algorithm.lower().replace("-", "").replace("sha3", "sha3_")
    expected = salted_hex(python_name, "CzQMA0cB5K", text.encode("utf-8"))
    _, convert = apply(one(f"column.mask.hash.v2.{algorithm}.with.salt.CzQMA0cB5K"))
    assert convert(text) == expected


@pytest.mark.parametrize(
    ("key", "text", "expected"),
    [
        # MaskStringsTest (salt "salt")
        ("column.mask.hash.SHA-256.with.salt.salt", "hello",
         "af5843a0f0e728ab0332c8888b6e1190bfb79e584f0d40538de8f10df6ef29c6"),
        ("column.mask.hash.SHA-256.with.salt.salt", "world",
         "4588e1f2dcdc7fefc1515d3acd5acb9033478eace68286f383c337b9ff4464a3"),
        ("column.mask.hash.MD5.with.salt.salt", "hello", "46f48a7a5ea32efba87cbff49d46d35a"),
        ("column.mask.hash.MD5.with.salt.salt", "world", "030f632140d9c9591b0d8c21098024b8"),
        ("column.mask.hash.v2.SHA-256.with.salt.salt", "hello",
         "cd31b3b98ece60cb739c0bf770b2de892ae0ad133f645513c3d83f08757a843a"),
        ("column.mask.hash.v2.SHA-256.with.salt.salt", "world",
         "e84ac3142870113ddc6710c06f76421befc8e8ca6de64e98d2993ed8d41f4085"),
        ("column.mask.hash.v2.MD5.with.salt.salt", "hello", "06decc8b095724f80103712c235586be"),
        ("column.mask.hash.v2.MD5.with.salt.salt", "world", "172c8e95398cc72ab5358ead6981e7e5"),
        # ColumnMappersTest, DBZ-5366 (salt "salt123")
        ("column.mask.hash.SHA-256.with.salt.salt123", "12345678901234567890",
         "5944c66655670e4ce234df8529d452ba1cae10a641b9cd1583abf62585b8515a"),
        ("column.mask.hash.v2.SHA-256.with.salt.salt123", "12345678901234567890",
         "b65875d34a3dedf070f3a012970bf3b5da424560d7be3d2c23b986b525d2d7f3"),
    ],
)
def test_hash_matches_debezium_test_vectors(key: str, text: str, expected: str) -> None:
    mapped, convert = apply(one(key))
    assert convert(text) == expected
    assert mapped.schema.parameters == {"masked": "true"}


def test_hash_v1_of_long_strings_uses_tc_longstring() -> None:
    text = "é" * 40_000  # 80 000 bytes of modified UTF-8 > 65 535
    serialised = java_write_object_string(text)
    assert serialised[4] == 0x7C
    assert java_serialized_string(text) == serialised
    _, convert = apply(one("column.mask.hash.SHA-256.with.salt.s"))
    assert convert(text) == salted_hex("sha256", "s", serialised)


def test_hash_is_shortened_to_the_column_length() -> None:
    """MaskStrings: the hash is 'automatically shortened to the length of the column'."""
    full = salted_hex("sha256", "s", b"hello")
    _, convert = apply(one("column.mask.hash.v2.SHA-256.with.salt.s"), column(length=10))
    assert convert("hello") == full[:10]
    _, convert = apply(one("column.mask.hash.v2.SHA-256.with.salt.s"), column(length=100))
    assert convert("hello") == full


def test_hash_salt_may_contain_dots_and_text() -> None:
    key = "column.mask.hash.v2.SHA-256.with.salt.a.with.salt.b ü"
    _, convert = apply(one(key))
    assert convert("x") == salted_hex("sha256", "a.with.salt.b ü", b"x")


@pytest.mark.parametrize(
    ("name", "canonical"),
    [("sha-256", "SHA-256"), ("SHA256", "SHA-256"), ("SHA", "SHA-1"), ("sha1", "SHA-1"),
     ("md5", "MD5"), ("Sha3-512", "SHA3-512"), ("SHA-257", None), ("MD2", None), ("v2", None)],
)
def test_algorithm_names(name: str, canonical: str | None) -> None:
    assert canonical_algorithm(name) == canonical


def test_hash_of_non_character_column_keeps_values() -> None:
    number = column(type_name="int4", schema=ConnectSchema(INT32, True))
    mapped, convert = apply(one("column.mask.hash.SHA-256.with.salt.s"), number, int)
    assert convert is int
    assert mapped.schema.parameters == {"masked": "true"}


# ============================================================================================
# Source type propagation


@pytest.mark.parametrize(
    ("type_name", "length", "scale", "expected"),
    [
        ("varchar", 255, None, {TYPE_KEY: "VARCHAR", LENGTH_KEY: "255", NAME_KEY: "email"}),
        ("varchar", 255, 0,  # pgjdbc reports scale 0 (Debezium's AbstractRecordsProducerTest)
         {TYPE_KEY: "VARCHAR", LENGTH_KEY: "255", SCALE_KEY: "0", NAME_KEY: "email"}),
        ("numeric", 10, 2,
         {TYPE_KEY: "NUMERIC", LENGTH_KEY: "10", SCALE_KEY: "2", NAME_KEY: "email"}),
        ("text", None, None, {TYPE_KEY: "TEXT", NAME_KEY: "email"}),
        ("text", 2147483647, 0,  # pgjdbc's unknown length for text
         {TYPE_KEY: "TEXT", LENGTH_KEY: "2147483647", SCALE_KEY: "0", NAME_KEY: "email"}),
    ],
)
def test_propagation_parameters(
    type_name: str, length: int | None, scale: int | None, expected: dict[str, str]
) -> None:
    col = column(type_name=type_name)
    original = str
    mapped, convert = apply(
        one("column.propagate.source.type"), col, original, length=length, scale=scale
    )
    assert convert is original
    assert mapped.schema.parameters == expected
    assert list(mapped.schema.parameters) == list(expected)  # Debezium's insertion order
    assert mapped.schema.type == STRING and mapped.name == "email"


def test_propagation_keeps_the_type_parameters_first() -> None:
    schema = decimal_schema(10, 2, True)
    col = column(type_name="numeric", schema=schema)
    mapped, _ = apply(one("column.propagate.source.type"), col, length=10, scale=2)
    assert mapped.schema.parameters is not None
    assert list(mapped.schema.parameters) == [
        *(schema.parameters or {}), TYPE_KEY, LENGTH_KEY, SCALE_KEY, NAME_KEY
    ]
    assert schema.parameters == {"scale": "2", "connect.decimal.precision": "10"}  # unchanged


@pytest.mark.parametrize(
    ("regexes", "source_type", "matches"),
    [
        (r".+\.VARCHAR", "varchar", True),  # Debezium's own tests write the type upper-case
        (r"public\.customers\.varchar", "varchar", True),
        (r".+\.NUMERIC,.+\.VARCHAR", "varchar", True),
        (r".+\.NUMERIC", "varchar", False),
        ("varchar", "varchar", False),  # matched against <table id>.<type>, not the type alone
        (r".+\.email", "varchar", False),  # not against the column name
    ],
)
def test_datatype_propagation(regexes: str, source_type: str, matches: bool) -> None:
    mapped, _ = apply(one("datatype.propagate.source.type", regexes), column(type_name=source_type))
    params = mapped.schema.parameters or {}
    assert (params.get(TYPE_KEY) == source_type.upper()) is matches


# ============================================================================================
# Matching rules


@pytest.mark.parametrize(
    ("regexes", "qualified", "matches"),
    [
        (NAME, NAME, True),
        ("PUBLIC.CUSTOMERS.EMAIL", NAME, True),  # case-insensitive
        ("public.customers.e", NAME, False),  # whole name only
        ("customers.email", NAME, False),
        (r"public\.customers\.e.*", NAME, True),
        (".*email", NAME, True),
        ("public.orders.email, public.customers.email", NAME, True),  # list
        (r"public.customers.e\,mail", "public.customers.e,mail", True),  # escaped comma
        ("  ", NAME, False),  # empty list: nothing
    ],
)
def test_matching(regexes: str, qualified: str, matches: bool) -> None:
    col = column()
    mapped, _ = apply(one("column.mask.with.3.chars", regexes), col, qualified=qualified)
    assert (mapped is not col) is matches


def test_unmatched_columns_are_returned_unchanged() -> None:
    m = mappers(**{"column.truncate.to.3.chars": "public.other.x",
                   "column.propagate.source.type": "x.y.z"})
    col = column()
    convert = str.upper
    mapped, mapped_convert = apply(m, col, convert)
    assert mapped is col and mapped_convert is convert
    assert apply(ColumnMappers(), col, convert) == (col, convert)
    assert not ColumnMappers() and m


@pytest.mark.parametrize(
    ("keys", "winner"),
    [
        (["column.mask.with.3.chars", "column.truncate.to.2.chars"], RuleKind.TRUNCATE),
        (["column.propagate.source.type", "column.mask.with.3.chars"], RuleKind.MASK),
        (["datatype.propagate.source.type", "column.propagate.source.type"],
         RuleKind.PROPAGATE_COLUMN),
        (["column.mask.hash.MD5.with.salt.s", "datatype.propagate.source.type"],
         RuleKind.PROPAGATE_DATATYPE),
        (["column.mask.hash.v2.MD5.with.salt.s", "column.mask.hash.MD5.with.salt.s"],
         RuleKind.HASH_V1),
        (["column.mask.hash.v2.MD5.with.salt.s", "column.truncate.to.2.chars"],
         RuleKind.TRUNCATE),
    ],
)
def test_first_rule_in_debezium_order_wins(keys: list[str], winner: RuleKind) -> None:
    """ColumnMappers.mapperFor: findFirst over truncate, mask, propagate, datatype, hash, v2."""
    regex = {"datatype.propagate.source.type": r".+\.varchar"}
    m = ColumnMappers.from_config({key: regex.get(key, NAME) for key in keys})
    rule = m.rule_for(NAME, "public.customers.varchar")
    assert rule is not None and rule.kind is winner


def test_truncation_and_mask_on_one_column_only_truncates() -> None:
    m = mappers(**{"column.mask.with.3.chars": NAME, "column.truncate.to.2.chars": NAME,
                   "column.propagate.source.type": NAME})
    mapped, convert = apply(m)
    assert convert("secret") == "se"
    assert mapped.schema.parameters == {"truncateLength": "2"}  # no mask, no propagation


def test_noop_truncation_still_wins() -> None:
    m = mappers(**{"column.truncate.to.20.chars": NAME, "column.mask.with.3.chars": NAME})
    col = column(length=10)
    mapped, convert = apply(m, col)
    assert mapped is col and convert("secret") == "secret"


def test_same_family_follows_configuration_order() -> None:
    m = mappers(**{"column.truncate.to.5.chars": ".*", "column.truncate.to.2.chars": NAME})
    _, convert = apply(m)
    assert convert("abcdefgh") == "abcde"


def test_describe_hides_salts() -> None:
    m = mappers(**{"column.mask.hash.v2.SHA-256.with.salt.CzQMA0cB5K": "a.b.c,d.e.f",
                   "column.truncate.to.5.chars": "x.y.z"})
    assert m.describe() == [
        "column.truncate.to.5.chars=x.y.z",
        "column.mask.hash.v2.SHA-256.with.salt.********=a.b.c,d.e.f",
    ]
    assert "CzQMA0cB5K" not in repr(m)


# ============================================================================================
# Configuration


def test_config_exposes_column_mappers() -> None:
    config, warnings = validate_postgres_config({
        **BASE,
        "column.truncate.to.20.chars": "public.customers.first_name",
        "column.mask.with.8.chars": "public.customers.email",
        "column.mask.hash.v2.SHA-256.with.salt.CzQMA0cB5K": r"inventory\.orders\.customer",
        "column.propagate.source.type": ".*",
        "datatype.propagate.source.type": r".+\.NUMERIC",
    })
    assert warnings == []
    kinds = [rule.kind for rule in config.column_mappers.rules]
    assert kinds == [RuleKind.TRUNCATE, RuleKind.MASK, RuleKind.PROPAGATE_COLUMN,
                     RuleKind.PROPAGATE_DATATYPE, RuleKind.HASH_V2]
    _, convert = apply(config.column_mappers)
    assert convert("x") == "********"
    assert "CzQMA0cB5K" not in str(config.redacted())
    assert len(config.redacted()["column_mappers"]) == 5  # type: ignore[arg-type]


def test_config_without_mappers() -> None:
    config, _ = validate_postgres_config(BASE)
    assert not config.column_mappers
    direct = PostgresConnectorConfig("p", "h", "u", "d")
    assert not direct.column_mappers


def test_empty_mapper_values_define_nothing() -> None:
    config, warnings = validate_postgres_config({**BASE, "column.mask.with.3.chars": " ",
                                                 "column.propagate.source.type": ""})
    assert warnings == [] and not config.column_mappers


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("column.truncate.to.5.chars", "public.t.(a", "column.truncate.to.5.chars: invalid "
         "regular expression 'public.t.(a'"),
        ("column.mask.with.5.chars", "ok,[z-a]", "column.mask.with.5.chars: invalid regular"),
        ("column.mask.hash.SHA-256.with.salt.s", "*", "column.mask.hash.SHA-256.with.salt.s: "
         "invalid regular expression '*'"),
        ("column.propagate.source.type", "((", "column.propagate.source.type: invalid regular"),
        ("datatype.propagate.source.type", "((", "datatype.propagate.source.type: invalid"),
        ("column.truncate.to.abc.chars", "a", "column.truncate.to.abc.chars: 'abc' in the "
         "property name is not a length: expected an integer 0-2147483647"),
        ("column.truncate.to.-3.chars", "a", "column.truncate.to.-3.chars: '-3' in the property"),
        ("column.mask.with.1.5.chars", "a", "column.mask.with.1.5.chars: '1.5' in the property"),
        ("column.mask.with.2147483648.chars", "a", "not a length"),
        ("column.truncate.to..chars", "a", "'' in the property name is not a length"),
        ("column.mask.hash.SHA-257.with.salt.s", "a",
         "column.mask.hash.SHA-257.with.salt.s: unknown hash algorithm 'SHA-257'; supported "
         "(Java MessageDigest names, any case): MD5, SHA-1, SHA-224, SHA-256"),
        ("column.mask.hash.v2.whirlpool.with.salt.s", "a", "unknown hash algorithm 'whirlpool'"),
        ("column.mask.hash.v2.with.salt.s", "a", "unknown hash algorithm 'v2'"),
        ("column.mask.hash.MD2.with.salt.s", "a", "'MD2' is not available in Headwater"),
    ],
)
def test_config_errors(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate_postgres_config({**BASE, key: value})
    assert message in str(info.value)


def test_all_problems_are_reported_together() -> None:
    with pytest.raises(ConfigError) as info:
        validate_postgres_config({**BASE, "column.truncate.to.x.chars": "a",
                                  "column.mask.hash.nope.with.salt.s": "b",
                                  "column.mask.with.3.chars": "(("})
    assert len(info.value.problems) == 3


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("column.mask.hash.hashing.strategy", "not supported by Headwater (not a "
         "Debezium property; hashing strategy V2 is selected by the property name"),
        ("column.truncate.to.10.char", "did you mean 'column.truncate.to.<length>.chars'?"),
    ],
)
def test_near_misses_warn(key: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match="remove it") as info:
        validate_postgres_config({**BASE, key: "V2"})
    assert fragment in str(info.value)
    _, warnings = validate_postgres_config(
        {**BASE, key: "V2", "headwater.config.unsupported.properties": "warn"})
    assert len(warnings) == 1 and fragment in warnings[0]


def test_mapper_properties_are_no_longer_ignored() -> None:
    for key in ("column.propagate.source.type", "datatype.propagate.source.type"):
        assert key in POSTGRES_CONFIG_DEF and key not in POSTGRES_CONFIG_DEF.ignored
    for key in ("column.truncate.to.20.chars", "column.mask.with.10.chars",
                "column.mask.hash.SHA-256.with.salt.x", "column.mask.hash.v2.MD5.with.salt.x"):
        _, warnings = validate_postgres_config({**BASE, key: "a.b.c"})
        assert warnings == []


def test_from_config_errors_and_raw_lists() -> None:
    with pytest.raises(ValueError, match=r"column\.mask\.with\.x\.chars: 'x'"):
        ColumnMappers.from_config({"column.mask.with.x.chars": "a"})
    with pytest.raises(ValueError, match="unknown hash algorithm"):
        ColumnMappers.from_config({"column.mask.hash.X.with.salt.s": "a"})
    m = ColumnMappers.from_config({"column.mask.with.1.chars": ("a.b.c", " "), "other": "x"})
    assert [rule.regexes for rule in m.rules] == [("a.b.c",)]


def test_supported_algorithms_are_computable() -> None:
    assert {"MD5", "SHA-1", "SHA-256", "SHA-384", "SHA-512"} <= set(HASH_ALGORITHMS)
    for name in HASH_ALGORITHMS:
        _, convert = apply(one(f"column.mask.hash.{name}.with.salt.s"))
        assert isinstance(convert("x"), str)


# ============================================================================================
# PatternProperty (the configuration framework part)


def test_pattern_property_framework() -> None:
    family = PatternProperty(
        "x.<n>.y", r"x\.(?P<n>.*)\.y", PropertyType.LIST, validator=regex_list_validator,
        key_check=lambda m: None if m["n"].isdigit() else f"'{m['n']}' is not a number",
    )
    definition = ConfigDef([Property("a")], pattern_properties=[family])
    with pytest.raises(ConfigError, match=r"unknown property 'x\.3\.yy' \(did you mean "
                                          r"'x\.<n>\.y'\?\)"):
        definition.validate({"a": "1", "x.3.yy": "z"})
    config = definition.validate({"a": "1", "x.1.y": "p,q", "x.2.y": ""})
    assert dict(config.patterned) == {"x.1.y": ("p", "q")}
    assert config.redacted()["x.1.y"] == ["p", "q"]
    assert config.warnings == ()
    with pytest.raises(ConfigError, match=r"x\.k\.y: 'k' is not a number"):
        definition.validate({"x.k.y": "p"})
    with pytest.raises(ConfigError, match=r"x\.1\.y: invalid regular expression"):
        definition.validate({"x.1.y": "(("})
    extended = definition.extend([Property("b")])
    assert dict(extended.validate({"x.5.y": "r"}).patterned) == {"x.5.y": ("r",)}
