"""Column defaults as Debezium 3.7.0's PostgresDefaultValueConverter resolves them.

The expressions are what ``pg_get_expr(adbin, adrelid)`` prints for the SQL defaults named in
the comments (PostgreSQL 15).
"""

from __future__ import annotations

from typing import Any

import pytest

from headwater.connectors.postgres.catalog import ColumnInfo, TableInfo
from headwater.connectors.postgres.defaults import default_text, jdbc_type_name
from headwater.connectors.postgres.tables import build_codec, incoming_from_catalog
from headwater.connectors.postgres.types import PgType, TypeModes
from headwater.model.schema import NO_DEFAULT


@pytest.mark.parametrize(
    ("type_name", "expression", "expected"),
    [
        ("serial", "nextval('t_id_seq'::regclass)", "0"),  # serial: the placeholder 0
        ("bigserial", "nextval('t_id_seq'::regclass)", "0"),
        ("int4", "42", "42"),
        ("int4", "'-7'::integer", "-7"),  # DEFAULT -7
        ("int8", "'9223372036854775807'::bigint", "9223372036854775807"),
        ("int2", "NULL::smallint", None),
        ("int4", "(1 + 2)", None),  # an expression: Integer.parseInt fails
        ("bool", "true", "t"),
        ("bool", "false", "f"),
        ("numeric", "1.5", "1.50"),  # numeric(8,2): setScale to the column's scale
        ("numeric", "0", "0.00"),
        ("float8", "1.25", "1.25"),
        ("text", "'abc'::text", "abc"),
        ("varchar", "'x y'::character varying", "x y"),
        ("varchar", "'it''s'::character varying", "it"),  # 3.7.0.Alpha2's non-greedy literal
        ("varchar", "NULL::character varying", None),
        ("bpchar", "'ab'::bpchar", "ab"),
        ("jsonb", "'{\"a\": 1}'::jsonb", '{"a": 1}'),
        ("jsonb", "jsonb_build_object()", "{}"),
        ("uuid", "gen_random_uuid()", "00000000-0000-0000-0000-000000000000"),
        ("uuid", "'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid",
         "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        ("date", "'2020-01-01'::date", "2020-01-01"),
        ("date", "CURRENT_DATE", "1970-01-01"),
        ("timestamp", "now()", "1970-01-01 00:00:00"),
        ("timestamptz", "CURRENT_TIMESTAMP", "1970-01-01 00:00:00+00"),
        ("timestamp", "'2020-01-02 03:04:05'::timestamp without time zone",
         "2020-01-02 03:04:05"),
        ("time", "LOCALTIME", "00:00:00"),
        ("interval", "'1 day'::interval", "1 day"),
        ("interval", "now() - now()", None),
        ("bytea", "'\\x01'::bytea", None),  # Debezium has no bytea mapper
        ("point", "'(1,2)'::point", None),
        ("money", "1.5", None),
        ("price", "1.5", None),  # a domain: pgjdbc reports its own name, no mapper
    ],
)
def test_default_text(type_name: str, expression: str, expected: str | None) -> None:
    scale = 2 if type_name == "numeric" else None
    assert default_text(type_name, expression, scale=scale) == expected


def test_enum_default_needs_the_cast_to_name_the_enum() -> None:
    assert default_text("mood", "'happy'::mood", enum_type=True) == "happy"
    assert default_text("mood", "'happy'::public.mood", enum_type=True) == "happy"
    assert default_text("mood", "'happy'::other", enum_type=True) is None


def test_serial_type_names() -> None:
    assert jdbc_type_name("int4", "nextval('s'::regclass)") == "serial"
    assert jdbc_type_name("int8", "nextval('s'::regclass)") == "bigserial"
    assert jdbc_type_name("int2", "nextval('s'::regclass)") == "int2"  # pgjdbc: no smallserial
    assert jdbc_type_name("int4", "7") == "int4"


def _codec(rows: list[tuple[str, int, str, int, bool, str | None]]
           ) -> dict[str, tuple[Any, Any]]:
    columns = tuple(
        ColumnInfo(name, i + 1, oid, tname, tname, typmod, not_null, oid, tname,
                   PgType(oid, tname, typmod), default)
        for i, (name, oid, tname, typmod, not_null, default) in enumerate(rows))
    info = TableInfo(1, "public", "t", columns, ("id",), "d", ())
    codec = build_codec("db", info, incoming_from_catalog(info), TypeModes(), lambda *_: True)
    return {c.name: (c.schema.default, c.fallback) for c in codec.schema.columns}


def test_schema_defaults_and_not_null_fallbacks() -> None:
    got = _codec([
        ("id", 23, "int4", -1, True, "nextval('t_id_seq'::regclass)"),
        ("price", 1700, "numeric", ((8 << 16) | 2) + 4, True, "0"),
        ("vsd", 1700, "numeric", -1, False, "1.5"),  # VariableScaleDecimal: a STRUCT, dropped
        ("created", 1082, "date", -1, True, "'2020-01-01'::date"),
        ("ts", 1114, "timestamp", -1, False, "now()"),
        ("note", 25, "text", -1, False, None),
    ])
    assert got["id"] == (0, 0)
    price_default, price_fallback = got["price"]
    assert str(price_default) == "AA==" and price_fallback is price_default  # 0.00: unscaled 0
    assert got["vsd"][0] is NO_DEFAULT
    assert got["created"] == (18262, 18262)  # 2020-01-01 in epoch days
    assert got["ts"][0] == 0  # MicroTimestamp of the placeholder epoch
    assert got["note"] == (NO_DEFAULT, "")
