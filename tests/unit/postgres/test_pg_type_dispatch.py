"""The PostgreSQL type dispatch merged from its family modules holds what the single types.py
held, and no two families claim the same OID or name (a second claim would silently replace the
first in the merge, depending on the families' order)."""

from __future__ import annotations

import importlib
import pkgutil
from collections import Counter
from types import ModuleType

from headwater.connectors.postgres import types as pgt

# The keys of _BY_OID and _BY_NAME in types.py before the split (main at c11ee1d).
OIDS_BEFORE = [
    16, 17, 18, 19, 20, 21, 23, 25, 26, 114, 142, 600, 601, 602, 603, 604, 628, 650, 700, 701,
    718, 774, 790, 829, 869, 1042, 1043, 1082, 1083, 1114, 1184, 1186, 1266, 1560, 1562, 1700,
    2950, 3614, 3802, 3904, 3906, 3908, 3910, 3912, 3926,
]
NAMES_BEFORE = [
    "bigint", "bigserial", "bit", "bit varying", "bool", "boolean", "box", "bpchar", "bytea",
    "char", "character", "character varying", "cidr", "circle", "citext", "date", "daterange",
    "decimal", "double precision", "float4", "float8", "geography", "geometry", "hstore", "inet",
    "int", "int2", "int4", "int4range", "int8", "int8range", "integer", "interval", "isbn",
    "json", "jsonb", "line", "lseg", "ltree", "macaddr", "macaddr8", "money", "name", "numeric",
    "numrange", "oid", "path", "point", "polygon", "real", "serial", "smallint", "smallserial",
    "text", "time", "time with time zone", "time without time zone", "timestamp",
    "timestamp with time zone", "timestamp without time zone", "timestamptz", "timetz",
    "tsrange", "tstzrange", "tsvector", "uuid", "varbit", "varchar", "xml",
]


def _families() -> list[ModuleType]:
    """Every module of the package that declares a BY_OID or BY_NAME table."""
    modules = [
        importlib.import_module(f"{pgt.__name__}.{info.name}")
        for info in pkgutil.iter_modules(pgt.__path__)
    ]
    return [m for m in modules if hasattr(m, "BY_OID") or hasattr(m, "BY_NAME")]


def test_every_family_module_is_merged() -> None:
    assert {m.__name__ for m in _families()} == {m.__name__ for m in pgt._FAMILIES}


def test_merged_tables_hold_the_keys_of_before() -> None:
    assert sorted(pgt._BY_OID) == OIDS_BEFORE
    assert sorted(pgt._BY_NAME) == NAMES_BEFORE


def test_no_two_families_claim_an_oid_or_a_name() -> None:
    oids = Counter(oid for m in _families() for oid in getattr(m, "BY_OID", {}))
    names = Counter(name for m in _families() for name in getattr(m, "BY_NAME", {}))
    assert [oid for oid, n in oids.items() if n > 1] == []
    assert [name for name, n in names.items() if n > 1] == []


def test_the_merged_tables_dispatch_to_the_claiming_family() -> None:
    for m in _families():
        for oid, factory in getattr(m, "BY_OID", {}).items():
            assert pgt._BY_OID[oid] is factory, (m.__name__, oid)
        for name, factory in getattr(m, "BY_NAME", {}).items():
            assert pgt._BY_NAME[name] is factory, (m.__name__, name)
