"""Column defaults in MySQL / MariaDB field schemas, as Debezium's BinlogDefaultValueConverter
resolves them (the MariaDB differential test checks `DEFAULT 'x'`, `DEFAULT 0` and a zero
TIMESTAMP against Debezium 3.5's MariaDB connector)."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.connectors.mysql.columns import MySqlColumn, MySqlTable
from headwater.connectors.mysql.defaults import column_default
from headwater.connectors.mysql.tables import build_codec
from headwater.connectors.mysql.types import MySqlTypeModes, mysql_column_mapping
from headwater.model.schema import NO_DEFAULT

MODES = MySqlTypeModes()


def default(type_name: str, text: str | None, length: int | None = None,
            scale: int | None = None, nullable: bool = True,
            modes: MySqlTypeModes = MODES) -> Any:
    col = MySqlColumn("c", type_name, length, scale, nullable=nullable, default=text)
    return column_default(col, mysql_column_mapping(col, modes).convert)


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        (("VARCHAR", "x", 10), {}, "x"),
        (("VARCHAR", " padded ", 10), {}, " padded "),  # strings are not trimmed
        (("INT", "0"), {}, 0),
        (("INT", "-5"), {}, -5),
        (("TINYINT", "true", 1), {}, 1),
        (("BIGINT", "9223372036854775807"), {}, 9223372036854775807),
        (("DOUBLE", "1.5"), {}, 1.5),
        (("DECIMAL", "1.005", 10, 2), {"modes": MySqlTypeModes(decimal_handling_mode="string")},
         "1.01"),  # HALF_UP to the scale
        (("DECIMAL", "2", 10, 2), {"modes": MySqlTypeModes(decimal_handling_mode="double")},
         2.0),
        (("DATE", "2020-02-29"), {}, 18321),
        (("DATE", "0000-00-00"), {}, NO_DEFAULT),  # zero, nullable: no default
        (("DATE", "0000-00-00"), {"nullable": False}, 0),  # zero, NOT NULL: the epoch
        (("DATETIME", "2020-01-01 00:00:01"), {}, 1577836801000),
        (("TIMESTAMP", "0000-00-00 00:00:00", 3), {"nullable": False}, "1970-01-01T00:00:00Z"),
        (("TIMESTAMP", "0000-00-00 00:00:00", 3), {}, NO_DEFAULT),
        (("TIMESTAMP", "current_timestamp()"), {"nullable": False}, "1970-01-01T00:00:00Z"),
        (("TIMESTAMP", "CURRENT_TIMESTAMP(6)", 6), {}, NO_DEFAULT),
        (("TIMESTAMP", "2020-01-01 10:00:00", 3), {}, "2020-01-01T10:00:00.000Z"),
        (("TIME", "12:30:00"), {}, 45000000000),
        (("YEAR", "2024"), {}, 2024),
        (("ENUM", "b"), {}, "b"),
        (("INT", "(1 + 1)"), {}, NO_DEFAULT),  # computed: Debezium's parser drops it
        (("VARCHAR", "uuid()", 36), {}, "uuid()"),  # text of a string column stays text
        (("CHAR", "uuid()", 36), {}, "uuid()"),
        (("INT", "uuid()"), {}, NO_DEFAULT),
        (("INT", "abc"), {}, NO_DEFAULT),  # unparsable: no default
        (("BLOB", "x"), {}, NO_DEFAULT),  # types without a resolver: none
        (("INT", None), {}, NO_DEFAULT),
    ],
)
def test_default(args: tuple[Any, ...], kwargs: dict[str, Any], expected: Any) -> None:
    got = default(*args, **kwargs)
    assert got == expected and type(got) is type(expected), (got, expected)


def test_default_in_the_field_schema_and_as_fallback() -> None:
    table = MySqlTable("db", "t", (
        MySqlColumn("id", "INT", nullable=False),
        MySqlColumn("note", "VARCHAR", 10, default="x"),
        MySqlColumn("qty", "INT", default="0"),
        MySqlColumn("price", "DECIMAL", 8, 2, default="0"),
        MySqlColumn("plain", "INT"),
    ), primary_key=("id",))
    columns = {c.name: c for c in build_codec(table, MODES, lambda *_: True).schema.columns}
    assert columns["note"].schema.default == "x" and columns["note"].fallback == "x"
    assert columns["qty"].schema.default == 0
    assert columns["price"].schema.default == "AA=="  # Connect Decimal 0.00, as its values
    assert columns["plain"].schema.default is NO_DEFAULT
    assert columns["id"].schema.default is NO_DEFAULT
