"""Tests of the configuration system and the PostgreSQL connector's property set.

Why: the configuration contract is what makes Headwater a drop-in for Debezium - names, defaults,
aliases and the Kafka Connect/Debezium Server file shapes must keep working, every mistake must
be reported clearly, and secrets must never leak into output.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from headwater.config import (
    REDACTED,
    ConfigDef,
    ConfigError,
    ConfigFileError,
    Property,
    PropertyType,
    Secret,
    ValidatedConfig,
    load_properties,
    parse_properties,
    regex_list_validator,
    resolve_references,
    split_list,
)
from headwater.config.connector_common import Guardrail
from headwater.config.output import OutputConfig
from headwater.config.secrets import SecretReferenceError, is_sensitive_key
from headwater.connectors.postgres.config import (
    CONNECTOR_CLASS,
    POSTGRES_CONFIG_DEF,
    PostgresConnectorConfig,
    is_system_schema,
    load_postgres_config,
    parse_message_key_columns,
    validate_postgres_config,
)

PASSWORD = "s3cr3t-Pa55word!"

BASE: dict[str, str] = {
    "name": "inventory-connector",
    "connector.class": CONNECTOR_CLASS,
    "topic.prefix": "fulfillment",
    "database.hostname": "localhost",
    "database.user": "debezium",
    "database.dbname": "postgres",
}


def pg(**extra: str) -> tuple[PostgresConnectorConfig, list[str]]:
    """Validate BASE plus ``extra`` (keys with '_' for '.')."""
    raw = dict(BASE)
    raw.update({k.replace("__", "-").replace("_", "."): v for k, v in extra.items()})
    return validate_postgres_config(raw, env={})


# Properties Headwater does not honour are refused unless this is set (then warned about).
LENIENT = {"headwater.config.unsupported.properties": "warn"}


def pg_raw(raw: dict[str, str], **kwargs: object) -> tuple[PostgresConnectorConfig, list[str]]:
    merged = {**BASE, **raw}
    return validate_postgres_config(merged, **kwargs)  # type: ignore[arg-type]


def config_error(raw: dict[str, str], env: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        validate_postgres_config({**BASE, **raw}, env=env or {})
    return info.value


# ============================================================================================
# java.util.Properties syntax


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=b", {"a": "b"}),
        ("a: b", {"a": "b"}),
        ("a b", {"a": "b"}),
        ("a\tb", {"a": "b"}),
        ("a\fb", {"a": "b"}),
        ("a = b", {"a": "b"}),
        ("   a=b", {"a": "b"}),
        ("a=b   ", {"a": "b   "}),  # trailing whitespace is kept, like Java
        ("a==b", {"a": "=b"}),
        ("a:=b", {"a": "=b"}),
        ("a = = b", {"a": "= b"}),
        ("a b c", {"a": "b c"}),
        ("a", {"a": ""}),
        ("a=", {"a": ""}),
        ("# comment\n! other\na=1", {"a": "1"}),
        ("  # indented comment\na=1", {"a": "1"}),
        ("a=1 # not a comment", {"a": "1 # not a comment"}),
        ("a=one \\\n    two", {"a": "one two"}),
        ("a=x\\\\", {"a": "x\\"}),
        ("a=x\\\\\\\n  y", {"a": "x\\y"}),
        ("# comment \\\na=1", {"a": "1"}),  # comments do not continue
        ("a=1,\\\n#2", {"a": "1,#2"}),  # a continuation line is never a comment
        ("a=1\\\n\nb=2", {"a": "1", "b": "2"}),  # an empty continuation line ends the value
        ("a=b\\", {"a": "b"}),  # continuation at end of file
        ("a=\\u0041\\u00e9", {"a": "A\u00e9"}),
        ("a=\\t\\n\\r\\f", {"a": "\t\n\r\f"}),
        ("a=\\q\\=\\:", {"a": "q=:"}),
        ("key\\ with\\ spaces=v", {"key with spaces": "v"}),
        ("a\\=b=c", {"a=b": "c"}),
        ("a\\:b:c", {"a:b": "c"}),
        ("a=1\r\nb=2\rc=3\n", {"a": "1", "b": "2", "c": "3"}),
        ("\n\n   \n", {}),
        ("database.password=p\\u0040ss w0rd", {"database.password": "p@ss w0rd"}),
        ("x=\u00fcnicode", {"x": "\u00fcnicode"}),
    ],
)
def test_properties_syntax(text: str, expected: dict[str, str]) -> None:
    assert parse_properties(text) == expected


def test_properties_key_given_twice_names_both_lines() -> None:
    # Java keeps the last value silently; a forgotten earlier setting is a mistake to report.
    with pytest.raises(ConfigFileError, match=r"^c\.properties:4: property 'a' is given twice "
                       r"\(first at line 1\)$"):
        parse_properties("a=1\n# a comment\nb=2\na = 3\n", source="c.properties")


@pytest.mark.parametrize("text", ["a=1\nb=\\u12", "a=1\nb=\\uZZZZ", "a=1\nb=x\\u00"])
def test_properties_bad_unicode_escape_names_line(text: str) -> None:
    with pytest.raises(ConfigFileError, match=r"conn\.properties:2: malformed \\uXXXX"):
        parse_properties(text, source="conn.properties")


# ============================================================================================
# Files: properties, YAML, JSON and the wrappers

PROPERTIES_TEXT = """\
# Debezium PostgreSQL connector
name=inventory-connector
connector.class=io.debezium.connector.postgresql.PostgresConnector
topic.prefix=fulfillment
database.hostname=localhost
database.port=5433
database.user=debezium
database.dbname=postgres
table.include.list=inventory.customers,\\
    inventory.orders
"""

YAML_TEXT = """\
name: inventory-connector
connector.class: io.debezium.connector.postgresql.PostgresConnector
topic:
  prefix: fulfillment
database:
  hostname: localhost
  port: 5433
  user: debezium
  dbname: postgres
table.include.list:
  - inventory.customers
  - inventory.orders
"""

JSON_TEXT = json.dumps(
    {
        "name": "inventory-connector",
        "config": {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "topic.prefix": "fulfillment",
            "database.hostname": "localhost",
            "database.port": 5433,
            "database.user": "debezium",
            "database.dbname": "postgres",
            "table.include.list": "inventory.customers,inventory.orders",
        },
    }
)

EXPECTED_FLAT = {
    "name": "inventory-connector",
    "connector.class": CONNECTOR_CLASS,
    "topic.prefix": "fulfillment",
    "database.hostname": "localhost",
    "database.port": "5433",
    "database.user": "debezium",
    "database.dbname": "postgres",
    "table.include.list": "inventory.customers,inventory.orders",
}


@pytest.mark.parametrize(
    ("filename", "text"),
    [
        ("c.properties", PROPERTIES_TEXT),
        ("c.yaml", YAML_TEXT),
        ("c.yml", YAML_TEXT),
        ("c.json", JSON_TEXT),
        ("C.JSON", JSON_TEXT),
    ],
)
def test_all_formats_load_to_the_same_properties(
    tmp_path: Path, filename: str, text: str
) -> None:
    path = tmp_path / filename
    path.write_text(text, encoding="utf-8")
    assert load_properties(path) == EXPECTED_FLAT
    config, warnings = load_postgres_config(path)
    assert warnings == []
    assert config.name == "inventory-connector"
    assert config.database_port == 5433
    assert config.table_include_list == ("inventory.customers", "inventory.orders")
    assert config.offset_storage_file_filename == tmp_path.resolve() / (
        "data/offsets/fulfillment.json"
    )


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        ("a: 5432", {"a": "5432"}),
        ("a: yes", {"a": "yes"}),  # literal text, no YAML 1.1 boolean surprise
        ("a: 0755", {"a": "0755"}),
        ("a: true", {"a": "true"}),
        ("a: 'quoted # text'", {"a": "quoted # text"}),
        ("a: ~", {}),
        ("a: null", {}),
        ("a:", {}),
        ("a: 'null'", {"a": "null"}),
        ("a: [x, y, z]", {"a": "x,y,z"}),
        ("a: ['x{1,2}', y]", {"a": "x{1\\,2},y"}),
        ("a: []", {"a": ""}),
        ("a: {b: {c: 1}}", {"a.b.c": "1"}),
        ("a.b: 1\nc: {d.e: 2}", {"a.b": "1", "c.d.e": "2"}),
        ("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3", {"base.x": "1", "base.y": "2",
                                                           "other.x": "1", "other.y": "3"}),
        ("", {}),
    ],
)
def test_yaml_flattening(tmp_path: Path, yaml_text: str, expected: dict[str, str]) -> None:
    assert load_properties(write(tmp_path, "c.yaml", yaml_text)) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"a": 1}, {"a": "1"}),
        ({"a": True, "b": False}, {"a": "true", "b": "false"}),
        ({"a": 1.5}, {"a": "1.5"}),
        ({"a": None}, {}),
        ({"a": ["x", "y"]}, {"a": "x,y"}),
        ({"a": {"b": {"c": "d"}}}, {"a.b.c": "d"}),
        ({}, {}),
    ],
)
def test_json_flattening(tmp_path: Path, data: object, expected: dict[str, str]) -> None:
    assert load_properties(write(tmp_path, "c.json", json.dumps(data))) == expected


def test_kafka_connect_rest_response_form(tmp_path: Path) -> None:
    body = {
        "name": "inventory-connector",
        "config": {**{k: v for k, v in BASE.items() if k != "name"}},
        "tasks": [{"connector": "inventory-connector", "task": 0}],
        "type": "source",
    }
    flat = load_properties(write(tmp_path, "rest.json", json.dumps(body)))
    assert flat == BASE


def test_kafka_connect_name_mismatch_is_an_error(tmp_path: Path) -> None:
    body = {"name": "one", "config": {"name": "two", "topic.prefix": "x"}}
    with pytest.raises(ConfigFileError, match=r"rest\.json: 'name' is 'one'.*'two'"):
        load_properties(write(tmp_path, "rest.json", json.dumps(body)))


def test_kafka_connect_rest_yaml(tmp_path: Path) -> None:
    text = "name: c1\nconfig:\n  topic.prefix: p\n  database:\n    hostname: h\n"
    assert load_properties(write(tmp_path, "c.yaml", text)) == {
        "name": "c1",
        "topic.prefix": "p",
        "database.hostname": "h",
    }


STRIMZI = """\
apiVersion: kafka.strimzi.io/v1beta1
kind: KafkaConnector
metadata:
  name: inventory-connector
  labels:
    strimzi.io/cluster: my-connect-cluster
spec:
  class: io.debezium.connector.postgresql.PostgresConnector
  tasksMax: 1
  config:
    database.hostname: postgresqldb
    database.port: 5432
    database.user: debezium
    database.password: dbz
    database.dbname: postgres
    database.server.name: fullfillment
"""


def test_strimzi_kafka_connector_resource(tmp_path: Path) -> None:
    path = write(tmp_path, "connector.yaml", STRIMZI)
    assert load_properties(path) == {
        "name": "inventory-connector",
        "connector.class": CONNECTOR_CLASS,
        "tasks.max": "1",
        "database.hostname": "postgresqldb",
        "database.port": "5432",
        "database.user": "debezium",
        "database.password": "dbz",
        "database.dbname": "postgres",
        "database.server.name": "fullfillment",
    }
    config, warnings = load_postgres_config(path)
    assert config.topic_prefix == "fullfillment"
    assert warnings == [
        "property 'database.server.name' is deprecated; use 'topic.prefix' instead"
    ]


DEBEZIUM_SERVER = """\
debezium.sink.type=http
debezium.format.value=json
debezium.source.connector.class=io.debezium.connector.postgresql.PostgresConnector
debezium.source.offset.storage.file.filename=data/offsets.dat
debezium.source.offset.flush.interval.ms=0
debezium.source.database.hostname=localhost
debezium.source.database.port=5432
debezium.source.database.user=postgres
debezium.source.database.password=postgres
debezium.source.database.dbname=postgres
debezium.source.topic.prefix=tutorial
debezium.source.schema.include.list=inventory
debezium.transforms=unwrap
debezium.transforms.unwrap.type=io.debezium.transforms.ExtractNewRecordState
quarkus.log.level=INFO
"""


def test_debezium_server_application_properties(tmp_path: Path) -> None:
    path = write(tmp_path, "application.properties", DEBEZIUM_SERVER)
    flat = load_properties(path)
    assert flat["topic.prefix"] == "tutorial"
    assert flat["transforms.unwrap.type"] == "io.debezium.transforms.ExtractNewRecordState"
    assert flat["debezium.sink.type"] == "http"
    assert "debezium.source.topic.prefix" not in flat
    with pytest.raises(ConfigError, match=r"unknown property 'quarkus\.log\.level': remove it"):
        load_postgres_config(path)
    path.write_text(path.read_text() + "headwater.config.unsupported.properties=warn\n")
    config, warnings = load_postgres_config(path)
    assert config.offset_storage_file_filename == tmp_path.resolve() / "data/offsets.dat"
    assert config.passthrough["transforms"] == "unwrap"
    assert config.passthrough["debezium.sink.type"] == "http"
    assert warnings == ["unknown property 'quarkus.log.level' and is ignored "
                        "(headwater.config.unsupported.properties=warn)"]


def test_debezium_server_yaml(tmp_path: Path) -> None:
    text = "debezium:\n  source:\n    topic.prefix: t\n    database:\n      hostname: h\n"
    assert load_properties(write(tmp_path, "application.yaml", text)) == {
        "topic.prefix": "t",
        "database.hostname": "h",
    }


def test_debezium_server_conflicting_keys(tmp_path: Path) -> None:
    text = "debezium.source.topic.prefix=a\ntopic.prefix=b\n"
    with pytest.raises(ConfigFileError, match=r"both set property 'topic\.prefix'"):
        load_properties(write(tmp_path, "app.properties", text))


@pytest.mark.parametrize(
    ("filename", "content", "pattern"),
    [
        ("c.yaml", "a: 1\nb: [1, 2\nc: 3\n", r"c\.yaml:\d+: invalid YAML"),
        ("c.yaml", "a: 1\nb: 2\na: 3\n", r"c\.yaml:3: duplicate key 'a' \(first at line 1\)"),
        ("c.yaml", "a.b: 1\na:\n  b: 2\n",
         r"c\.yaml:3: property 'a\.b' is given twice \(first at line 1\)"),
        ("c.yaml", "- a\n- b\n", r"c\.yaml:1: the top level must be a mapping"),
        ("c.yaml", "a:\n  - {b: 1}\n", r"c\.yaml:2: list 'a' may only contain plain values"),
        ("c.yaml", "? [a, b]\n: 1\n", r"c\.yaml:1: mapping keys must be plain strings"),
        ("c.yaml", "a: 1\n---\nb: 2\n", r"c\.yaml:\d+: invalid YAML"),
        ("c.json", '{"a": 1,\n "b": }', r"c\.json:2: invalid JSON"),
        ("c.json", '{"a": 1, "a": 2}', r"c\.json: duplicate key 'a'"),
        ("c.json", "[1, 2]", r"c\.json: the top level must be a mapping"),
        ("c.json", '{"a": [{"b": 1}]}', r"c\.json: list 'a' may only contain plain values"),
        ("c.toml", "a = 1", r"c\.toml: unsupported configuration file type '\.toml'"),
        ("c", "a=1", r"unsupported configuration file type '\(none\)'"),
    ],
)
def test_file_errors_name_file_and_line(
    tmp_path: Path, filename: str, content: str, pattern: str
) -> None:
    with pytest.raises(ConfigFileError, match=pattern) as info:
        load_properties(write(tmp_path, filename, content))
    assert isinstance(info.value, ValueError)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"missing\.properties: cannot read"):
        load_properties(tmp_path / "missing.properties")


def test_non_utf8_file_names_line(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_bytes(b"a=1\nb=\xff\xfe\n")
    with pytest.raises(ConfigFileError, match=r"c\.properties:2: file is not valid UTF-8"):
        load_properties(path)


def test_utf8_bom_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_bytes(b"\xef\xbb\xbfa=1\n")
    assert load_properties(path) == {"a": "1"}


# ============================================================================================
# Generic property types


def one(prop: Property, value: str | None) -> ValidatedConfig:
    raw = {} if value is None else {prop.name: value}
    return ConfigDef([prop]).validate(raw, env={})


@pytest.mark.parametrize(
    ("prop", "text", "expected"),
    [
        (Property("p", PropertyType.STRING), "  text  ", "text"),
        (Property("p", PropertyType.STRING, "dflt"), None, "dflt"),
        (Property("p", PropertyType.STRING, "dflt"), "   ", "dflt"),  # empty = unset
        (Property("p", PropertyType.INT), "42", 42),
        (Property("p", PropertyType.INT), "-7", -7),
        (Property("p", PropertyType.INT), "+7", 7),
        (Property("p", PropertyType.INT), " 2147483647 ", 2**31 - 1),
        (Property("p", PropertyType.INT, min_value=1, max_value=65535), "65535", 65535),
        (Property("p", PropertyType.LONG), "9223372036854775807", 2**63 - 1),
        (Property("p", PropertyType.LONG, 5), None, 5),
        (Property("p", PropertyType.BOOLEAN), "true", True),
        (Property("p", PropertyType.BOOLEAN), "FALSE", False),
        (Property("p", PropertyType.BOOLEAN), "True", True),
        (Property("p", PropertyType.DOUBLE), "1.5", 1.5),
        (Property("p", PropertyType.DOUBLE), "-2e3", -2000.0),
        (Property("p", PropertyType.DOUBLE), ".5", 0.5),
        (Property("p", PropertyType.DOUBLE), "3", 3.0),
        (Property("p", PropertyType.ENUM, allowed=("alpha", "beta")), "BeTa", "beta"),
        (Property("p", PropertyType.LIST), "a, b ,,c", ("a", "b", "c")),
        (Property("p", PropertyType.LIST), "x{1\\,3},y", ("x{1,3}", "y")),
        (Property("p", PropertyType.LIST), " , ", None),
        (Property("p", PropertyType.LIST, ("d",)), None, ("d",)),
        (Property("p", PropertyType.PATH), "/abs/file", Path("/abs/file")),
        (Property("p", PropertyType.PATH), "rel/file", Path("rel/file")),
        (Property("p", PropertyType.PATH, Path("d")), None, Path("d")),
        (Property("p", PropertyType.PASSWORD), "pw", Secret("pw")),
        (Property("p", PropertyType.PASSWORD), "  pw  ", Secret("pw")),
        (Property("p", PropertyType.STRING, parser=str.upper), "abc", "ABC"),
    ],
)
def test_good_values(prop: Property, text: str | None, expected: object) -> None:
    assert one(prop, text)["p"] == expected


@pytest.mark.parametrize(
    ("prop", "text", "message"),
    [
        (Property("p", PropertyType.INT), "abc", "p: expected an integer, got 'abc'"),
        (Property("p", PropertyType.INT), "1.0", "p: expected an integer, got '1.0'"),
        (Property("p", PropertyType.INT), "1_000", "p: expected an integer, got '1_000'"),
        (Property("p", PropertyType.INT), "2147483648", "expected an integer"),
        (Property("p", PropertyType.LONG), "9223372036854775808", "expected an integer"),
        (Property("p", PropertyType.INT, min_value=1, max_value=65535), "0",
         "p: expected an integer 1-65535, got '0'"),
        (Property("p", PropertyType.INT, min_value=0), "-1",
         "p: expected an integer >= 0, got '-1'"),
        (Property("p", PropertyType.INT, max_value=9), "10",
         "p: expected an integer <= 9, got '10'"),
        (Property("p", PropertyType.BOOLEAN), "yes", "p: expected true or false, got 'yes'"),
        (Property("p", PropertyType.BOOLEAN), "1", "p: expected true or false, got '1'"),
        (Property("p", PropertyType.DOUBLE), "nan", "p: expected a number, got 'nan'"),
        (Property("p", PropertyType.DOUBLE), "inf", "p: expected a number, got 'inf'"),
        (Property("p", PropertyType.DOUBLE), "1e999", "p: expected a number, got '1e999'"),
        (Property("p", PropertyType.DOUBLE, min_value=0.5), "0.1",
         "p: expected a number >= 0.5, got '0.1'"),
        (Property("p", PropertyType.ENUM, allowed=("alpha", "beta")), "alpah",
         "p: 'alpah' is not one of alpha, beta; did you mean 'alpha'?"),
        (Property("p", PropertyType.ENUM, allowed=("alpha", "beta")), "zzz",
         "p: 'zzz' is not one of alpha, beta"),
        (Property("p", PropertyType.ENUM, allowed=("a1",), hint="only a1"), "qqqq",
         "p: 'qqqq' is not one of a1; only a1"),
        (Property("p", PropertyType.ENUM, allowed=("a1",), rejected_values={"b2": "no b"}),
         "B2", "p: 'B2' is not supported by Headwater: no b; expected one of a1"),
        (Property("p", PropertyType.LIST, validator=regex_list_validator), "ok,(bad",
         "p: invalid regular expression '(bad'"),
        (Property("p", PropertyType.STRING, required=True, doc="the p"), None,
         "p: missing required property (the p)"),
        (Property("p", PropertyType.STRING, required=True), "  ",
         "p: missing required property"),
        (Property("p", PropertyType.STRING, validator=lambda v: f"'{v}' is bad"), "x",
         "p: 'x' is bad"),
    ],
)
def test_bad_values(prop: Property, text: str | None, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        one(prop, text)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


def test_all_errors_are_collected_and_raised_once() -> None:
    definition = ConfigDef(
        [
            Property("a", PropertyType.INT),
            Property("b", PropertyType.BOOLEAN),
            Property("c", PropertyType.STRING, required=True),
        ]
    )
    with pytest.raises(ConfigError) as info:
        definition.validate({"a": "x", "b": "y"}, source="my.properties")
    assert len(info.value.problems) == 3
    text = str(info.value)
    assert text.startswith("3 configuration problems in my.properties:")
    assert "a: expected an integer, got 'x'" in text
    assert "b: expected true or false, got 'y'" in text
    assert "c: missing required property" in text


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"type": PropertyType.ENUM}, "needs allowed values"),
        ({"type": PropertyType.ENUM, "allowed": ("A",)}, "must be lowercase"),
        ({"type": PropertyType.ENUM, "allowed": ("a",), "value_aliases": {"x": "y"}},
         "unknown"),
        ({"required": True, "default": "x"}, "cannot have a default"),
    ],
)
def test_bad_definitions(kwargs: dict[str, object], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        Property("p", **kwargs)  # type: ignore[arg-type]


def test_duplicate_definitions_rejected() -> None:
    with pytest.raises(ValueError, match="defined twice"):
        ConfigDef([Property("a"), Property("a")])
    with pytest.raises(ValueError, match="clashes"):
        ConfigDef([Property("a"), Property("b", aliases=("a",))])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a,b", ("a", "b")),
        (" a , b ", ("a", "b")),
        ("a,,b,", ("a", "b")),
        ("a\\,b,c", ("a,b", "c")),
        ("x\\.y,z", ("x\\.y", "z")),
        ("public\\.(foo|bar){1\\,2}", ("public\\.(foo|bar){1,2}",)),
        ("", ()),
    ],
)
def test_split_list(text: str, expected: tuple[str, ...]) -> None:
    assert split_list(text) == expected


def test_typed_getters() -> None:
    definition = ConfigDef(
        [
            Property("s", PropertyType.STRING, "x"),
            Property("i", PropertyType.INT, 1),
            Property("f", PropertyType.DOUBLE, 1.5),
            Property("b", PropertyType.BOOLEAN, True),
            Property("l", PropertyType.LIST),
            Property("p", PropertyType.PATH, Path("a")),
            Property("pw", PropertyType.PASSWORD),
            Property("o", PropertyType.STRING),
        ]
    )
    config = definition.validate({"s": "y"})
    assert config.get_str("s") == "y"
    assert config.is_set("s") and not config.is_set("i")
    assert config.get_int("i") == 1
    assert config.get_float("f") == 1.5
    assert config.get_float("i") == 1.0
    assert config.get_bool("b") is True
    assert config.get_list("l") == ()
    assert config.get_path("p") == Path("a")
    assert config.get_optional_path("p") == Path("a")
    assert config.get_secret("pw") is None
    assert config.get_optional_str("o") is None
    assert "s" in config and "zz" not in config
    with pytest.raises(TypeError):
        config.get_int("s")
    with pytest.raises(TypeError):
        config.get_bool("i")
    with pytest.raises(TypeError):
        config.get_str("i")


def test_paths_resolve_against_base_dir(tmp_path: Path) -> None:
    definition = ConfigDef([Property("p", PropertyType.PATH), Property("q", PropertyType.PATH)])
    config = definition.validate({"p": "rel/x", "q": "/abs/y"}, base_dir=tmp_path)
    assert config.get_path("p") == tmp_path / "rel/x"
    assert config.get_path("q") == Path("/abs/y")


def test_extend_and_merge() -> None:
    base = ConfigDef([Property("a.b", aliases=("old.ab",))], passthrough_prefixes=("x.",))
    extended = base.extend([Property("c")], passthrough_prefixes=("y.",))
    config = extended.validate({"a.b": "1", "c": "2", "x.k": "3", "y.k": "4"})
    assert config.warnings == ()
    assert dict(config.passthrough) == {"x.k": "3", "y.k": "4"}
    assert len(extended) == 2 and extended.names == ("a.b", "c")
    merged = base.merge({"old.ab": "1", "z": "2"}, {"a.b": "9"})
    assert merged == {"z": "2", "a.b": "9"}


def test_programmatic_values_are_coerced() -> None:
    definition = ConfigDef(
        [Property("b", PropertyType.BOOLEAN), Property("i", PropertyType.INT),
         Property("l", PropertyType.LIST)]
    )
    config = definition.validate({"b": True, "i": 3, "l": ["a", "b,c"]})
    assert config["b"] is True and config["i"] == 3 and config["l"] == ("a", "b,c")


# ============================================================================================
# PostgreSQL properties: defaults and values


@pytest.mark.parametrize(
    ("attribute", "expected"),
    [
        ("name", "inventory-connector"),
        ("connector_class", CONNECTOR_CLASS),
        ("tasks_max", 1),
        ("database_port", 5432),
        ("database_password", None),
        ("database_sslmode", "prefer"),
        ("database_sslcert", None),
        ("database_sslkey", None),
        ("database_sslrootcert", None),
        ("database_sslpassword", None),
        ("database_tcp_keepalive", True),
        ("database_initial_statements", ()),
        ("plugin_name", "pgoutput"),
        ("slot_name", "debezium"),
        ("slot_drop_on_stop", False),
        ("slot_max_retries", 6),
        ("slot_retry_delay_ms", 10_000),
        ("status_update_interval_ms", 10_000),
        ("publication_name", "dbz_publication"),
        ("publication_autocreate_mode", "all_tables"),
        ("snapshot_mode", "initial"),
        ("snapshot_lock_timeout_ms", 10_000),
        ("snapshot_fetch_size", 10_240),
        ("snapshot_delay_ms", 0),
        ("snapshot_max_threads", 1),
        ("schema_include_list", ()),
        ("schema_exclude_list", ()),
        ("table_include_list", ()),
        ("table_exclude_list", ()),
        ("column_include_list", ()),
        ("column_exclude_list", ()),
        ("message_key_columns", ()),
        ("skipped_operations", frozenset({"t"})),
        ("tombstones_on_delete", True),
        ("time_precision_mode", "adaptive"),
        ("decimal_handling_mode", "precise"),
        ("hstore_handling_mode", "json"),
        ("interval_handling_mode", "numeric"),
        ("binary_handling_mode", "bytes"),
        ("include_unknown_datatypes", False),
        ("unavailable_value_placeholder", "__debezium_unavailable_value"),
        ("toasted_value_placeholder", "__debezium_unavailable_value"),
        ("provide_transaction_metadata", False),
        ("topic_transaction", "transaction"),
        ("event_processing_failure_handling_mode", "fail"),
        ("event_converting_failure_handling_mode", "fail"),
        ("extended_headers_enabled", True),
        ("header_converter", "org.apache.kafka.connect.storage.SimpleHeaderConverter"),
        ("heartbeat_interval_ms", 0),
        ("heartbeat_action_query", None),
        ("errors_max_retries", -1),
        ("money_fraction_digits", 2),
        ("headwater_pgoutput_streaming", True),
        ("message_prefix_include_list", ()),
        ("message_prefix_exclude_list", ()),
        ("offset_mismatch_strategy", "no_validation"),
        ("slot_failover", False),
        ("lsn_flush_mode", "connector"),
        ("publish_via_partition_root", False),
        ("retriable_restart_connector_wait_ms", 10_000),
        ("topic_heartbeat_prefix", "__debezium-heartbeat"),
        ("topic_naming_strategy", None),
        ("topic_delimiter", "."),
        ("heartbeat_topic", "__debezium-heartbeat.fulfillment"),
        ("transaction_topic", "fulfillment.transaction"),
        ("max_batch_size", 2048),
        ("max_queue_size", 8192),
        ("poll_interval_ms", 500),
        ("statistics_metrics_enabled", True),
        ("key_converter", "org.apache.kafka.connect.json.JsonConverter"),
        ("value_converter", "org.apache.kafka.connect.json.JsonConverter"),
        ("key_converter_schemas_enable", True),
        ("value_converter_schemas_enable", True),
        ("offset_storage_file_filename", Path("data/offsets/fulfillment.json")),
        ("offset_flush_interval_ms", 60_000),
        ("headwater_topics_dir", Path("data/topics")),
        ("headwater_topics_segment_bytes", 67_108_864),
        ("headwater_topics_segment_ms", 1000),
        ("output", OutputConfig()),
        ("guardrail", Guardrail(0, "warn")),
    ],
)
def test_postgres_defaults(attribute: str, expected: object) -> None:
    config, warnings = pg()
    assert warnings == []
    assert getattr(config, attribute) == expected
    # Direct construction applies the same defaults.
    direct = PostgresConnectorConfig(
        topic_prefix="fulfillment",
        database_hostname="localhost",
        database_user="debezium",
        database_dbname="postgres",
        name="inventory-connector",
    )
    assert getattr(direct, attribute) == expected


def test_every_config_attribute_has_a_default_test() -> None:
    fields = {f for f in PostgresConnectorConfig.__dataclass_fields__ if not f.startswith("_")}
    tested = {"topic_prefix", "database_hostname", "database_user", "database_dbname",
              "passthrough"}
    for mark in test_postgres_defaults.pytestmark:  # type: ignore[attr-defined]
        if mark.name == "parametrize":
            tested |= {attribute for attribute, _ in mark.args[1]}
    assert fields <= tested


@pytest.mark.parametrize(
    ("prop", "values"),
    [
        ("database.sslmode",
         ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")),
        ("plugin.name", ("pgoutput",)),
        ("publication.autocreate.mode", ("all_tables", "disabled", "filtered")),
        ("snapshot.mode", ("initial", "always", "no_data", "initial_only", "when_needed")),
        ("time.precision.mode", ("adaptive", "adaptive_time_microseconds", "connect")),
        ("decimal.handling.mode", ("precise", "double", "string")),
        ("hstore.handling.mode", ("json", "map")),
        ("interval.handling.mode", ("numeric", "string")),
        ("binary.handling.mode", ("bytes", "base64", "base64-url-safe", "hex")),
        ("event.processing.failure.handling.mode", ("fail", "warn", "skip")),
    ],
)
def test_postgres_enum_values(prop: str, values: tuple[str, ...]) -> None:
    assert POSTGRES_CONFIG_DEF[prop].allowed == values
    attribute = prop.replace(".", "_")
    for value in values:
        for spelling in (value, value.upper()):
            config, warnings = pg_raw({prop: spelling}, env={})
            assert getattr(config, attribute) == value
            assert warnings == []


@pytest.mark.parametrize(
    ("prop", "value", "canonical"),
    [
        ("snapshot.mode", "never", "no_data"),
        ("snapshot.mode", "NEVER", "no_data"),
        ("snapshot.mode", "exported", "initial"),
        ("event.processing.failure.handling.mode", "ignore", "skip"),
    ],
)
def test_deprecated_enum_values(prop: str, value: str, canonical: str) -> None:
    config, warnings = pg_raw({prop: value}, env={})
    assert getattr(config, prop.replace(".", "_")) == canonical
    assert warnings == [
        f"{prop}: value '{value.lower()}' is deprecated; using '{canonical}' instead"
    ]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"snapshot.mode": "initil"},
         "snapshot.mode: 'initil' is not one of initial, always, no_data, initial_only, "
         "when_needed; did you mean 'initial'?"),
        ({"snapshot.mode": "nevr"}, "did you mean 'no_data'?"),
        ({"snapshot.mode": "custom"}, "'custom' is not supported by Headwater: custom snapshot"),
        ({"plugin.name": "wal2json"},
         "plugin.name: 'wal2json' is not supported by Headwater: only the pgoutput plugin"),
        ({"plugin.name": "decoderbufs"}, "only the pgoutput plugin"),
        ({"plugin.name": "pgouput"}, "did you mean 'pgoutput'?"),
        ({"plugin.name": "foo"}, "plugin.name: 'foo' is not one of pgoutput; only the pgoutput"),
        ({"publication.autocreate.mode": "no_tables"}, "not supported by Headwater"),
        ({"database.sslmode": "verify_full"}, "did you mean 'verify-full'?"),
        ({"database.port": "abc"}, "database.port: expected an integer 1-65535, got 'abc'"),
        ({"database.port": "70000"}, "database.port: expected an integer 1-65535, got '70000'"),
        ({"database.port": "0"}, "expected an integer 1-65535"),
        ({"tasks.max": "0"}, "tasks.max: expected an integer >= 1, got '0'"),
        ({"max.batch.size": "0"}, "max.batch.size: expected an integer >= 1"),
        ({"poll.interval.ms": "-5"}, "poll.interval.ms: expected an integer >= 1"),
        ({"heartbeat.interval.ms": "soon"}, "heartbeat.interval.ms: expected an integer >= 0"),
        ({"snapshot.fetch.size": "0"}, "snapshot.fetch.size: expected an integer >= 1"),
        ({"slot.retry.delay.ms": "1s"}, "slot.retry.delay.ms: expected an integer >= 0"),
        ({"tombstones.on.delete": "yes"}, "tombstones.on.delete: expected true or false"),
        ({"slot.drop.on.stop": "0"}, "slot.drop.on.stop: expected true or false, got '0'"),
        ({"topic.prefix": "my topic"}, "topic.prefix: 'my topic' is not a valid topic prefix"),
        ({"topic.prefix": "a/b"}, "use only letters, digits, '_', '.' and '-'"),
        ({"topic.heartbeat.prefix": "hb!"}, "topic.heartbeat.prefix: 'hb!' is not a valid"),
        ({"slot.name": "Debezium"}, "slot.name: 'Debezium' is not a valid replication slot"),
        ({"slot.name": "my-slot"}, "slot.name: 'my-slot' is not a valid replication slot"),
        ({"slot.name": "s" * 64}, "at most 63 characters"),
        ({"publication.name": "p" * 64}, "63-byte identifier limit"),
        ({"database.hostname": "my host"}, "database.hostname: 'my host' is not a host name"),
        ({"connector.class": "io.debezium.connector.mysql.MySqlConnector"},
         "connector.class: expected the PostgreSQL connector"),
        ({"key.converter": "io.confluent.connect.avro.AvroConverterX"},
         "key.converter: expected one of org.apache.kafka.connect.json.JsonConverter"),
        ({"value.converter": "x"}, "value.converter: expected one of org.apache.kafka"),
        ({"offset.storage": "org.apache.kafka.connect.storage.KafkaOffsetBackingStore"},
         "offset.storage: expected org.apache.kafka.connect.storage.FileOffsetBackingStore"),
        ({"skipped.operations": "c,x"}, "skipped.operations: 'x' not allowed"),
        ({"unavailable.value.placeholder": "hex:abc"}, "even number of hexadecimal digits"),
        ({"message.key.columns": "inventory.t"}, "message.key.columns: entry 'inventory.t'"),
        ({"message.key.columns": "inventory.t:"}, "is not of the form"),
        ({"message.key.columns": "(bad:id"}, "invalid table regular expression '(bad'"),
        ({"schema.include.list": "inv(entory"},
         "schema.include.list: invalid regular expression 'inv(entory'"),
        ({"table.exclude.list": "a.b,[x"}, "table.exclude.list: invalid regular expression '[x'"),
        ({"column.include.list": "a.b.*c)"}, "column.include.list: invalid regular expression"),
        ({"schema.whitelist": "("}, "schema.include.list (given as 'schema.whitelist'): invalid"),
        ({"max.queue.size": "2048"},
         "max.queue.size (2048) must be larger than max.batch.size (2048)"),
        ({"max.batch.size": "9000"},
         "max.queue.size (8192) must be larger than max.batch.size (9000)"),
    ],
)
def test_postgres_bad_values(raw: dict[str, str], message: str) -> None:
    assert message in str(config_error(raw))


@pytest.mark.parametrize("missing", ["topic.prefix", "database.hostname", "database.user",
                                     "database.dbname"])
def test_postgres_required(missing: str) -> None:
    raw = {k: v for k, v in BASE.items() if k != missing}
    with pytest.raises(ConfigError, match=f"{re.escape(missing)}: missing required property"):
        validate_postgres_config(raw)


def test_postgres_all_required_missing_reported_together() -> None:
    with pytest.raises(ConfigError) as info:
        validate_postgres_config({})
    assert len(info.value.problems) == 4


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("io.debezium.connector.postgresql.PostgresConnector", CONNECTOR_CLASS),
        ("postgres", CONNECTOR_CLASS),
        ("postgresql", CONNECTOR_CLASS),
        ("PostgreSQL", CONNECTOR_CLASS),
    ],
)
def test_connector_class_spellings(value: str, expected: str) -> None:
    config, _ = pg_raw({"connector.class": value})
    assert config.connector_class == expected


@pytest.mark.parametrize("prefix", ["fulfillment", "dbserver1", "my-app.prod_1", "A.B-C_d"])
def test_good_topic_prefixes(prefix: str) -> None:
    assert pg_raw({"topic.prefix": prefix})[0].topic_prefix == prefix


@pytest.mark.parametrize("slot", ["debezium", "slot_1", "a" * 63, "0"])
def test_good_slot_names(slot: str) -> None:
    assert pg_raw({"slot.name": slot})[0].slot_name == slot


def test_name_defaults_to_topic_prefix() -> None:
    raw = {k: v for k, v in BASE.items() if k != "name"}
    config, _ = validate_postgres_config(raw)
    assert config.name == "fulfillment"


def test_tasks_max_above_one_warns() -> None:
    config, warnings = pg_raw({"tasks.max": "3"})
    assert config.tasks_max == 3
    assert warnings == ["tasks.max: 3 ignored; the PostgreSQL connector uses one task"]


def test_heartbeat_query_without_interval_warns() -> None:
    _, warnings = pg_raw({"heartbeat.action.query": "UPDATE hb SET ts = now()"})
    assert warnings == ["heartbeat.action.query has no effect while heartbeat.interval.ms is 0"]
    _, warnings = pg_raw({"heartbeat.action.query": "SELECT 1", "heartbeat.interval.ms": "10"})
    assert warnings == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("SET search_path TO inventory", ("SET search_path TO inventory",)),
        ("SET a = 1; SET b = 2;", ("SET a = 1", "SET b = 2")),
        ("SELECT ';;'", ("SELECT ';'",)),
        ("A;;B;C", ("A;B", "C")),
    ],
)
def test_initial_statements(text: str, expected: tuple[str, ...]) -> None:
    config, _ = pg_raw({"database.initial.statements": text})
    assert config.database_initial_statements == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("c,u", frozenset({"c", "u"})),
        ("none", frozenset()),
        ("T", frozenset({"t"})),
        ("d", frozenset({"d"})),
    ],
)
def test_skipped_operations(text: str, expected: frozenset[str]) -> None:
    assert pg_raw({"skipped.operations": text})[0].skipped_operations == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("__debezium_unavailable_value", b"__debezium_unavailable_value"),
        ("hex:DEADbeef", b"\xde\xad\xbe\xef"),
        ("hex:", b""),
    ],
)
def test_placeholder_bytes(text: str, expected: bytes) -> None:
    config, _ = pg_raw({"unavailable.value.placeholder": text})
    assert config.unavailable_value_placeholder_bytes == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("inventory.customers:pk1,pk2", (("inventory.customers", ("pk1", "pk2")),)),
        (
            "inventory.customers:pk1 , pk2;(.*).purchaseorders:pk3,pk4;",
            (("inventory.customers", ("pk1", "pk2")), ("(.*).purchaseorders", ("pk3", "pk4"))),
        ),
        ("(?:a|b).t:id", (("(?:a|b).t", ("id",)),)),
        ("", ()),
    ],
)
def test_parse_message_key_columns(text: str, expected: object) -> None:
    assert parse_message_key_columns(text) == expected


def test_key_columns_lookup() -> None:
    config, _ = pg_raw(
        {"message.key.columns": "inventory.customers:pk1,pk2;(.*).purchaseorders:pk3"}
    )
    assert config.key_columns("inventory", "customers") == ("pk1", "pk2")
    assert config.key_columns("INVENTORY", "Customers") == ("pk1", "pk2")
    assert config.key_columns("sales", "purchaseorders") == ("pk3",)
    assert config.key_columns("inventory", "customers2") is None


# ============================================================================================
# Aliases, unknown properties, pass-through

ALIASES = [
    ("database.server.name", "topic.prefix", "fulfillment2"),
    ("schema.whitelist", "schema.include.list", "inventory"),
    ("schema.blacklist", "schema.exclude.list", "inventory"),
    ("table.whitelist", "table.include.list", "inventory.orders"),
    ("table.blacklist", "table.exclude.list", "inventory.orders"),
    ("column.whitelist", "column.include.list", "inventory.orders.id"),
    ("column.blacklist", "column.exclude.list", "inventory.orders.id"),
    ("toasted.value.placeholder", "unavailable.value.placeholder", "__toast"),
    ("heartbeat.topics.prefix", "topic.heartbeat.prefix", "hb"),
]


@pytest.mark.parametrize(("old", "new", "value"), ALIASES)
def test_aliases_map_to_current_names(old: str, new: str, value: str) -> None:
    raw = {k: v for k, v in BASE.items() if k != new}
    raw[old] = value
    config, warnings = validate_postgres_config(raw)
    attribute = new.replace(".", "_")
    expected: object = value
    if new.endswith(".list"):
        expected = (value,)
    assert getattr(config, attribute) == expected
    assert warnings == [f"property '{old}' is deprecated; use '{new}' instead"]


@pytest.mark.parametrize(("old", "new", "value"), ALIASES)
def test_alias_and_name_with_different_values_is_an_error(old: str, new: str, value: str) -> None:
    error = config_error({old: value, new: value + "x"})
    assert f"{new}: set twice with different values" in str(error)
    assert f"'{old}'" in str(error)


@pytest.mark.parametrize(("old", "new", "value"), ALIASES)
def test_alias_and_name_with_same_value_warns(old: str, new: str, value: str) -> None:
    _, warnings = pg_raw({old: value, new: value})
    assert f"both set '{new}' to the same value" in " ".join(warnings)


def test_alias_table_covers_every_alias() -> None:
    declared = {(alias, p.name) for p in POSTGRES_CONFIG_DEF for alias in p.aliases}
    assert declared == {(old, new) for old, new, _ in ALIASES}


@pytest.mark.parametrize(
    ("key", "suggestion"),
    [
        ("slot.nme", "slot.name"),
        ("database.hostnme", "database.hostname"),
        ("database.pasword", "database.password"),
        ("database.sslmod", "database.sslmode"),
        ("snapshot.mod", "snapshot.mode"),
        ("table.include.lists", "table.include.list"),
        ("tombstone.on.delete", "tombstones.on.delete"),
        ("publication.nam", "publication.name"),
        ("database.server.nam", "topic.prefix"),  # suggestion of an alias -> current name
        ("schema.refresh.mod", "schema.refresh.mode"),
    ],
)
def test_unknown_property_did_you_mean(key: str, suggestion: str) -> None:
    error = config_error({key: "x"})
    assert f"unknown property '{key}' (did you mean '{suggestion}'?): remove it" in str(error)
    _, warnings = pg_raw({key: "x", **LENIENT})
    assert warnings == [f"unknown property '{key}' (did you mean '{suggestion}'?) and is "
                        "ignored (headwater.config.unsupported.properties=warn)"]


def test_unknown_property_without_suggestion() -> None:
    assert "unknown property 'completely.different.thing': remove it" in str(
        config_error({"completely.different.thing": "x"}))
    _, warnings = pg_raw({"completely.different.thing": "x", **LENIENT})
    assert warnings == ["unknown property 'completely.different.thing' and is ignored "
                        "(headwater.config.unsupported.properties=warn)"]


def test_unsupported_properties_mode_is_checked() -> None:
    assert "headwater.config.unsupported.properties: 'ignore' is not one of error, warn" in str(
        config_error({"headwater.config.unsupported.properties": "ignore"}))


@pytest.mark.parametrize(
    "key",
    [
        "transforms",
        "transforms.unwrap.type",
        "predicates.p.type",
        "offset.storage.topic",
        "offset.storage.partitions",
        "key.converter.schema.registry.url",
        "value.converter.replace.null.with.default",
        "header.converter.x",
        "debezium.sink.type",
        "headwater.pipeline.target",
        "headwater.ops.metrics.port",
    ],
)
def test_passthrough_prefixes_never_warn(key: str) -> None:
    config, warnings = pg_raw({key: "v"})
    assert warnings == []
    assert config.passthrough[key] == "v"


def test_database_prefix_is_not_passthrough() -> None:
    _, warnings = pg_raw({"database.foo": "x", **LENIENT})
    assert len(warnings) == 1 and "unknown property 'database.foo'" in warnings[0]


def test_passthrough_near_miss_warns() -> None:
    _, warnings = pg_raw({"offset.storage.file.filenme": "x"})
    assert warnings == [
        "property 'offset.storage.file.filenme' is passed through; "
        "did you mean 'offset.storage.file.filename'?"
    ]


@pytest.mark.parametrize(
    "key",
    [
        "schema.refresh.mode",
        "slot.stream.params",
        "snapshot.isolation.mode",
        "sanitize.field.names",
        "snapshot.select.statement.overrides.inventory.orders",
        "database.whitelist",
    ],
)
def test_recognised_but_unsupported_properties_warn(key: str) -> None:
    assert f"property '{key}' is not supported by Headwater" in str(config_error({key: "x"}))
    _, warnings = pg_raw({key: "x", **LENIENT})
    assert len(warnings) == 1
    assert warnings[0].startswith(f"property '{key}' is not supported by Headwater")
    assert warnings[0].endswith("and is ignored (headwater.config.unsupported.properties=warn)")


def test_warnings_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="headwater.config"):
        pg_raw({"slot.nme": "x", **LENIENT})
    assert [r.name for r in caplog.records] == ["headwater.config"]
    assert "did you mean 'slot.name'?" in caplog.records[0].getMessage()


# ============================================================================================
# Mutual exclusion

EXCLUSIVE = [
    ("schema.include.list", "schema.exclude.list"),
    ("table.include.list", "table.exclude.list"),
    ("column.include.list", "column.exclude.list"),
]


@pytest.mark.parametrize(("include", "exclude"), EXCLUSIVE)
def test_include_and_exclude_are_exclusive(include: str, exclude: str) -> None:
    error = config_error({include: "a", exclude: "b"})
    assert f"'{include}' and '{exclude}' are mutually exclusive" in str(error)


@pytest.mark.parametrize(("given", "strategy"), [
    ({}, "no_validation"),
    ({"slot.seek.to.known.offset.on.start": "true"}, "trust_offset"),
    ({"slot.seek.to.known.offset.on.start": "false"}, "no_validation"),
    ({"offset.mismatch.strategy": "trust_slot"}, "trust_slot"),
    # The new property wins over the deprecated one (resolveOffsetSlotMismatchStrategy).
    ({"offset.mismatch.strategy": "trust_greater_lsn",
      "slot.seek.to.known.offset.on.start": "true"}, "trust_greater_lsn"),
])
def test_offset_mismatch_strategy(given: dict[str, str], strategy: str) -> None:
    cfg, warnings = pg_raw(given, env={})
    assert cfg.offset_mismatch_strategy == strategy
    deprecated = "slot.seek.to.known.offset.on.start" in given
    assert any("deprecated" in w and "offset.mismatch.strategy" in w for w in warnings) == (
        deprecated)


def test_offset_mismatch_strategy_values_are_checked() -> None:
    assert "offset.mismatch.strategy" in str(config_error({"offset.mismatch.strategy": "x"}))


@pytest.mark.parametrize(("given", "mode"), [
    ({}, "connector"),
    ({"flush.lsn.source": "true"}, "connector"),
    ({"flush.lsn.source": "false"}, "manual"),
    ({"lsn.flush.mode": "connector_and_driver", "heartbeat.interval.ms": "5000"},
     "connector_and_driver"),
    # The new property wins over the deprecated one (resolveLsnFlushMode).
    ({"lsn.flush.mode": "connector", "flush.lsn.source": "false"}, "connector"),
])
def test_lsn_flush_mode(given: dict[str, str], mode: str) -> None:
    cfg, warnings = pg_raw(given, env={})
    assert cfg.lsn_flush_mode == mode
    assert any("deprecated" in w and "lsn.flush.mode" in w for w in warnings) == (
        "flush.lsn.source" in given)
    assert cfg.heartbeat_interval_ms == int(given.get("heartbeat.interval.ms", 0))


@pytest.mark.parametrize(("given", "interval"), [
    ({}, 600_000),  # Debezium's applyLsnFlushModeHeartbeatFallback
    ({"heartbeat.interval.ms": "1000"}, 1000),
    ({"provide.transaction.metadata": "true"}, 0),
])
def test_connector_and_driver_needs_heartbeats(
    given: dict[str, str], interval: int, caplog: pytest.LogCaptureFixture
) -> None:
    cfg, _ = pg_raw({"lsn.flush.mode": "connector_and_driver", **given}, env={})
    assert cfg.heartbeat_interval_ms == interval
    assert ("heartbeat.interval.ms was internally set to 600000 ms" in caplog.text) == (
        interval == 600_000)


def test_debezium3_replication_options_are_parsed_and_checked() -> None:
    cfg, _ = pg_raw({"slot.failover": "true", "publish.via.partition.root": "true"}, env={})
    assert (cfg.slot_failover, cfg.publish_via_partition_root) == (True, True)
    assert "lsn.flush.mode" in str(config_error({"lsn.flush.mode": "driver"}))
    assert "slot.failover" in str(config_error({"slot.failover": "maybe"}))


def test_message_prefix_lists_are_exclusive() -> None:
    error = config_error({"message.prefix.include.list": "a", "message.prefix.exclude.list": "b"})
    assert ("'message.prefix.include.list' and 'message.prefix.exclude.list' are mutually "
            "exclusive") in str(error)


def test_message_prefix_filter() -> None:
    cfg = PostgresConnectorConfig(topic_prefix="p", database_hostname="h", database_user="u",
                                  database_dbname="d", message_prefix_include_list=("keep\\..*",))
    admits = cfg.message_filter().admits
    assert (admits("keep.a"), admits("KEEP.b"), admits("keep"), admits("x.keep.a")) == (
        True, True, False, False)


@pytest.mark.parametrize(("include", "exclude"), EXCLUSIVE)
def test_exclusion_names_aliases(include: str, exclude: str) -> None:
    old_include = include.replace("include.list", "whitelist")
    error = config_error({old_include: "a", exclude: "b"})
    assert f"'{include}' (given as '{old_include}') and '{exclude}'" in str(error)


def test_exclusion_reported_even_when_a_regex_is_bad() -> None:
    error = config_error({"table.include.list": "(", "table.exclude.list": "b"})
    assert len(error.problems) == 2


# ============================================================================================
# Filters


@pytest.mark.parametrize(
    ("raw", "schema", "table", "expected"),
    [
        ({}, "public", "orders", True),
        ({}, "pg_catalog", "pg_class", False),
        ({}, "information_schema", "tables", False),
        ({}, "pg_toast", "pg_toast_1234", False),
        ({}, "pg_temp_3", "t", False),
        ({}, "pg_toast_temp_3", "t", False),
        ({}, "PG_CATALOG", "x", False),
        ({}, "public", "spatial_ref_sys", False),
        ({"schema.include.list": "pg_catalog"}, "pg_catalog", "pg_class", False),
        ({"table.include.list": "pg_catalog.*"}, "pg_catalog", "pg_class", False),
        ({"schema.include.list": "inventory"}, "inventory", "orders", True),
        ({"schema.include.list": "inventory"}, "public", "orders", False),
        ({"schema.include.list": "inventory"}, "inventory2", "orders", False),  # whole match
        ({"schema.include.list": "inv"}, "inventory", "orders", False),
        ({"schema.include.list": "inv.*"}, "inventory", "orders", True),
        ({"schema.include.list": "INVENTORY"}, "inventory", "orders", True),  # case-insensitive
        ({"schema.include.list": "inventory"}, "Inventory", "orders", True),
        ({"schema.include.list": "a,inventory"}, "inventory", "orders", True),
        ({"schema.exclude.list": "inventory"}, "inventory", "orders", False),
        ({"schema.exclude.list": "inventory"}, "public", "orders", True),
        ({"table.include.list": "inventory.orders"}, "inventory", "orders", True),
        ({"table.include.list": "inventory.orders"}, "inventory", "orders_2020", False),
        ({"table.include.list": "inventory.orders"}, "inventoryxorders", "", False),
        ({"table.include.list": "orders"}, "inventory", "orders", False),  # needs schema.table
        ({"table.include.list": ".*\\.orders"}, "inventory", "orders", True),
        ({"table.include.list": "inventory\\.orders"}, "INVENTORY", "ORDERS", True),
        ({"table.include.list": "inventory.orders,inventory.customers"},
         "inventory", "customers", True),
        ({"table.exclude.list": "inventory.orders"}, "inventory", "orders", False),
        ({"table.exclude.list": "inventory.orders"}, "inventory", "customers", True),
        ({"table.exclude.list": "inventory\\.orders.*"}, "inventory", "orders_old", False),
        ({"schema.include.list": "inventory", "table.include.list": "public.orders"},
         "public", "orders", False),  # schema lists apply as well
        ({"schema.include.list": "inventory", "table.exclude.list": "inventory.orders"},
         "inventory", "customers", True),
        ({"schema.include.list": "inventory", "table.exclude.list": "inventory.orders"},
         "inventory", "orders", False),
        ({"schema.exclude.list": "audit", "table.include.list": "audit.log"},
         "audit", "log", False),
        ({"schema.whitelist": "inventory"}, "public", "orders", False),
        ({"table.blacklist": "inventory.orders"}, "inventory", "orders", False),
    ],
)
def test_table_filter(raw: dict[str, str], schema: str, table: str, expected: bool) -> None:
    config, _ = pg_raw(raw)
    assert config.table_filter(schema, table) is expected


@pytest.mark.parametrize(
    ("raw", "column", "expected"),
    [
        ({}, "id", True),
        ({"column.exclude.list": "inventory.customers.email"}, "email", False),
        ({"column.exclude.list": "inventory.customers.email"}, "id", True),
        ({"column.exclude.list": "inventory.customers.email"}, "email2", True),
        ({"column.exclude.list": "email"}, "email", True),  # needs schema.table.column
        ({"column.exclude.list": ".*\\.email"}, "email", False),
        ({"column.exclude.list": "INVENTORY.CUSTOMERS.EMAIL"}, "email", False),
        ({"column.include.list": "inventory.customers.(id|name)"}, "id", True),
        ({"column.include.list": "inventory.customers.(id|name)"}, "email", False),
        ({"column.include.list": "inventory.customers.(id|name)"}, "NAME", True),
        ({"column.blacklist": "inventory.customers.email"}, "email", False),
        ({"column.whitelist": "inventory.customers.id"}, "email", False),
    ],
)
def test_column_filter(raw: dict[str, str], column: str, expected: bool) -> None:
    config, _ = pg_raw(raw)
    assert config.column_filter("inventory", "customers", column) is expected


@pytest.mark.parametrize(
    ("schema", "expected"),
    [("pg_catalog", True), ("information_schema", True), ("pg_toast", True),
     ("pg_temp_1", True), ("pg_toast_temp_1", True), ("public", False), ("inventory", False)],
)
def test_is_system_schema(schema: str, expected: bool) -> None:
    assert is_system_schema(schema) is expected


def test_schema_filter() -> None:
    config, _ = pg_raw({"schema.exclude.list": "audit.*"})
    assert config.schema_filter("public")
    assert not config.schema_filter("audit_2024")
    assert not config.schema_filter("pg_catalog")


def test_direct_construction_compiles_filters() -> None:
    config = PostgresConnectorConfig(
        topic_prefix="p", database_hostname="h", database_user="u", database_dbname="d",
        table_include_list=("inventory\\..*",),
    )
    assert config.table_filter("inventory", "x") and not config.table_filter("public", "x")
    with pytest.raises(re.error):
        PostgresConnectorConfig(
            topic_prefix="p", database_hostname="h", database_user="u", database_dbname="d",
            column_exclude_list=("(",),
        )


def test_config_is_frozen_and_slotted() -> None:
    config, _ = pg()
    with pytest.raises(AttributeError):
        config.database_port = 1  # type: ignore[misc]
    assert not hasattr(config, "__dict__")


# ============================================================================================
# Paths and load_postgres_config


def test_relative_paths_resolve_against_config_dir(tmp_path: Path) -> None:
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    path = write(
        conf_dir,
        "c.properties",
        "\n".join(f"{k}={v}" for k, v in BASE.items())
        + "\noffset.storage.file.filename=state/offsets.json"
        + "\nheadwater.topics.dir=../topics"
        + "\ndatabase.sslrootcert=certs/root.crt"
        + "\ndatabase.sslcert=/etc/ssl/client.crt\n",
    )
    config, _ = load_postgres_config(path)
    base = conf_dir.resolve()
    assert config.offset_storage_file_filename == base / "state/offsets.json"
    assert config.headwater_topics_dir == base / "../topics"
    assert config.database_sslrootcert == base / "certs/root.crt"
    assert config.database_sslcert == Path("/etc/ssl/client.crt")


def test_default_paths_are_next_to_the_config(tmp_path: Path) -> None:
    path = write(tmp_path, "c.json", json.dumps(BASE))
    config, _ = load_postgres_config(path)
    assert config.offset_storage_file_filename == tmp_path.resolve() / (
        "data/offsets/fulfillment.json"
    )
    assert config.headwater_topics_dir == tmp_path.resolve() / "data/topics"


def test_overrides(tmp_path: Path) -> None:
    text = "\n".join(f"{k}={v}" for k, v in BASE.items() if k != "topic.prefix")
    text += "\ndatabase.server.name=old\ndatabase.port=5432\n"
    path = write(tmp_path, "c.properties", text)
    config, warnings = load_postgres_config(
        path, {"topic.prefix": "new", "database.port": "6543"}
    )
    assert config.topic_prefix == "new"
    assert config.database_port == 6543
    assert warnings == []  # the alias spelling was replaced by the override


def test_error_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "c.properties", "topic.prefix=x\n")
    with pytest.raises(ConfigError, match=re.escape(str(path))):
        load_postgres_config(path)


def test_dsn_kwargs(tmp_path: Path) -> None:
    config, _ = pg_raw(
        {
            "database.port": "6543",
            "database.password": PASSWORD,
            "database.sslmode": "VERIFY-FULL",
            "database.sslrootcert": "/certs/root.crt",
            "database.sslkey": "/certs/client.key",
            "database.sslcert": "/certs/client.crt",
            "database.sslpassword": "keypass",
            "database.tcpKeepAlive": "false",
        }
    )
    assert config.dsn_kwargs() == {
        "host": "localhost",
        "port": 6543,
        "user": "debezium",
        "dbname": "postgres",
        "password": PASSWORD,
        "sslmode": "verify-full",
        "sslrootcert": "/certs/root.crt",
        "sslkey": "/certs/client.key",
        "sslcert": "/certs/client.crt",
        "sslpassword": "keypass",
        "keepalives": 0,
        "application_name": "headwater-inventory-connector",
    }


def test_dsn_kwargs_without_password() -> None:
    config, _ = pg()
    kwargs = config.dsn_kwargs()
    assert "password" not in kwargs and "sslpassword" not in kwargs
    assert kwargs["keepalives"] == 1


# ============================================================================================
# Secrets


def test_secret_type() -> None:
    secret = Secret(PASSWORD)
    assert secret.reveal() == PASSWORD
    assert repr(secret) == str(secret) == f"{secret}" == "********" == REDACTED
    assert f"{secret:>10}" == "  ********"
    assert secret == Secret(PASSWORD) and secret != Secret("other")
    assert secret != PASSWORD
    assert hash(secret) == hash(Secret(PASSWORD))
    assert bool(secret) and not bool(Secret(""))
    assert PASSWORD not in repr([secret, {"k": secret}])


def test_password_from_env() -> None:
    config, _ = pg_raw({"database.password": "${env:PGPASS}"}, env={"PGPASS": PASSWORD})
    assert config.database_password is not None
    assert config.database_password.reveal() == PASSWORD


def test_password_from_real_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HEADWATER_TEST_PASSWORD", PASSWORD)
    text = "\n".join(f"{k}={v}" for k, v in BASE.items())
    text += "\ndatabase.password=${env:HEADWATER_TEST_PASSWORD}"
    path = write(tmp_path, "c.properties", text)
    config, _ = load_postgres_config(path)
    assert config.dsn_kwargs()["password"] == PASSWORD


def test_env_value_is_used_verbatim() -> None:
    config, _ = pg_raw({"database.password": "${env:P}"}, env={"P": "  spaced  "})
    assert config.database_password is not None
    assert config.database_password.reveal() == "  spaced  "


@pytest.mark.parametrize("content", [PASSWORD, PASSWORD + "\n", PASSWORD + "\r\n"])
def test_password_from_file(tmp_path: Path, content: str) -> None:
    secret_file = tmp_path / "pw.txt"
    secret_file.write_text(content, encoding="utf-8")
    config, _ = pg_raw({"database.password": f"${{file:{secret_file}}}"})
    assert config.database_password is not None
    assert config.database_password.reveal() == PASSWORD


def test_password_from_relative_file(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "pw").write_text(PASSWORD + "\n", encoding="utf-8")
    text = "\n".join(f"{k}={v}" for k, v in BASE.items())
    path = write(tmp_path, "c.properties", text + "\ndatabase.password=${file:secrets/pw}\n")
    config, _ = load_postgres_config(path)
    assert config.dsn_kwargs()["password"] == PASSWORD


def test_password_from_properties_file_key(tmp_path: Path) -> None:
    props = tmp_path / "creds.properties"
    props.write_text(f"user=debezium\npassword={PASSWORD}\n", encoding="utf-8")
    config, _ = pg_raw(
        {
            "database.password": f"${{file:{props}:password}}",
            "database.user": f"${{file:{props}:user}}",
        }
    )
    assert config.database_password is not None
    assert config.database_password.reveal() == PASSWORD
    assert config.database_user == "debezium"


def test_references_in_other_properties(tmp_path: Path) -> None:
    config, _ = pg_raw(
        {"database.hostname": "${env:H}", "database.port": "${env:PORT}",
         "transforms.x.url": "http://${env:H}:1"},
        env={"H": "db.internal", "PORT": "6000"},
    )
    assert config.database_hostname == "db.internal"
    assert config.database_port == 6000
    assert config.passthrough["transforms.x.url"] == "http://db.internal:1"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("${env:MISSING_VAR}", "database.password: environment variable 'MISSING_VAR' is not set"),
        ("${env:}", "database.password: empty environment variable name"),
        ("${file:/nonexistent/pw}", "database.password: cannot read file '/nonexistent/pw'"),
        ("${file:}", "database.password: empty path"),
    ],
)
def test_secret_reference_errors(value: str, message: str) -> None:
    assert message in str(config_error({"database.password": value}))


def test_missing_properties_key(tmp_path: Path) -> None:
    props = tmp_path / "creds.properties"
    props.write_text(f"password={PASSWORD}\n", encoding="utf-8")
    error = config_error({"database.password": f"${{file:{props}:pwd}}"})
    assert f"database.password: key 'pwd' not found in properties file '{props}'" in str(error)
    assert PASSWORD not in str(error)


def test_bad_port_from_env_shows_reference() -> None:
    error = config_error({"database.port": "${env:PORT}"}, env={"PORT": "x"})
    assert "database.port: expected an integer 1-65535, got 'x' (from ${env:PORT})" in str(error)


def test_resolve_references_directly(tmp_path: Path) -> None:
    assert resolve_references("a-${env:X}-b", env={"X": "1"}) == "a-1-b"
    assert resolve_references("no refs ${other:x}", env={}) == "no refs ${other:x}"
    (tmp_path / "f").write_text("v\n", encoding="utf-8")
    assert resolve_references("${file:f}", base_dir=tmp_path) == "v"
    with pytest.raises(SecretReferenceError):
        resolve_references("${file:missing}", base_dir=tmp_path)
    with pytest.raises(SecretReferenceError, match="not a valid properties file"):
        (tmp_path / "bad.properties").write_text("a=\\uZZ\n", encoding="utf-8")
        resolve_references(f"${{file:{tmp_path / 'bad.properties'}:a}}")


@pytest.mark.parametrize(
    ("key", "sensitive"),
    [("database.password", True), ("offset.storage.sasl.jaas.config", True),
     ("transforms.x.api.key", True), ("value.converter.basic.auth.user.info", True),
     ("transforms.x.token", True), ("transforms.unwrap.type", False), ("database.user", False)],
)
def test_sensitive_keys(key: str, sensitive: bool) -> None:
    assert is_sensitive_key(key) is sensitive


def test_password_never_leaks(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    raw = {
        **BASE,
        "database.password": PASSWORD,
        "database.sslpassword": PASSWORD,
        "database.pasword": PASSWORD,  # typo: an unknown key's value is a secret too
        "offset.storage.sasl.password": PASSWORD,
        "slot.nme": "x",
        **LENIENT,
    }
    with caplog.at_level(logging.DEBUG):
        validated = POSTGRES_CONFIG_DEF.validate(raw)
        config, warnings = validate_postgres_config(raw)
    assert config.database_password is not None
    assert config.database_password.reveal() == PASSWORD
    outputs = [
        repr(config),
        str(config),
        repr(validated),
        str(config.redacted()),
        json.dumps(validated.redacted()),
        *warnings,
        *validated.warnings,
        caplog.text,
    ]
    for text in outputs:
        assert PASSWORD not in text
    assert validated.redacted()["database.password"] == REDACTED
    assert validated.redacted()["offset.storage.sasl.password"] == REDACTED
    assert config.redacted()["database_password"] == REDACTED
    assert config.redacted()["passthrough"] == {"offset.storage.sasl.password": REDACTED}


@pytest.mark.parametrize(
    "extra",
    [
        {"database.port": "abc"},
        {"snapshot.mode": "bogus", "slot.name": "BAD"},
        {"topic.prefix": ""},
    ],
)
def test_password_not_in_error_messages(extra: dict[str, str]) -> None:
    error = config_error({"database.password": PASSWORD, **extra})
    assert PASSWORD not in str(error)
    assert PASSWORD not in repr(error)


def test_password_from_file_not_in_errors_or_repr(tmp_path: Path) -> None:
    secret_file = tmp_path / "pw"
    secret_file.write_text(PASSWORD, encoding="utf-8")
    config, _ = pg_raw({"database.password": f"${{file:{secret_file}}}"})
    assert PASSWORD not in repr(config)
    error = config_error({"database.password": f"${{file:{secret_file}}}", "database.port": "x"})
    assert PASSWORD not in str(error)


def test_redacted_validated_config_is_plain_data() -> None:
    validated = POSTGRES_CONFIG_DEF.validate({**BASE, "database.password": PASSWORD,
                                              "table.include.list": "a.b,c.d"})
    data = validated.redacted()
    json.dumps(data)  # JSON-friendly
    assert data["table.include.list"] == ["a.b", "c.d"]
    assert data["headwater.topics.dir"] == "data/topics"
    assert data["database.sslpassword"] is None


def test_include_list_entries_matching_nothing_are_warned(
        caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from headwater.config.connector_common import warn_unmatched

    logger = logging.getLogger("test.include")
    with caplog.at_level(logging.WARNING, "test.include"):
        missing = warn_unmatched("table.include.list", ["public.orders", "public.cust.*",
                                                        "public.nope"],
                                 ["public.orders", "public.customers"], logger)
    assert missing == ["public.nope"]
    assert [r.getMessage() for r in caplog.records] == [
        "table.include.list: 'public.nope' matches no existing table; nothing is captured for "
        "it until such a table exists"]
    assert warn_unmatched("collection.include.list", ["db.a.b"], ["db.a.b"], logger,
                          literal=True) == []
    assert warn_unmatched("collection.include.list", ["db.a.b"], ["dbxa.b"], logger,
                          literal=True) == ["db.a.b"]


def test_attributes_are_typed_values_by_snake_case_name() -> None:
    definition = ConfigDef([
        Property("database.trustServerCertificate", PropertyType.BOOLEAN, False),
        Property("a.list", PropertyType.LIST),
        Property("a.count", PropertyType.INT, 3),
        Property("a.text", PropertyType.STRING),
    ])
    validated = definition.validate({"database.trustServerCertificate": "true"})
    assert validated.attributes("database.trustServerCertificate", "a.list", "a.text",
                                count="a.count") == {
        "database_trust_server_certificate": True, "a_list": (), "a_text": None, "count": 3}
    with pytest.raises(KeyError, match=r"not\.defined is not a property"):
        validated.typed("not.defined")
