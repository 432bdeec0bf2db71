"""Arrays: which types are arrays, and an array's mapping from its element's.

The element's mapping comes from the package's dispatch, which this module does not import (it
is the caller's, `pg_column_mapping`, so the recursion stays in one place and the modules form
no cycle): `element_type` is given the OIDs the dispatch maps, `array_mapping` the element's
mapping.
"""

from __future__ import annotations

from collections.abc import Container

from headwater.connectors.postgres.types.base import PgType
from headwater.connectors.postgres.types.oids import BUILTIN_ARRAY_ELEMENTS, BUILTIN_DELIMITERS
from headwater.connectors.postgres.types.text import unknown_mapping
from headwater.convert import ColumnMapping, TypeModes
from headwater.convert.pg_arrays import array_converter
from headwater.model.schema import ARRAY, ConnectSchema


def element_type(t: PgType, mapped_oids: Container[int]) -> PgType | None:
    """The element type of an array type: from the catalog, a built-in OID or a ``_name``.

    A ``_name`` is an array only for a base type whose OID is not one of `mapped_oids`.
    """
    if t.element is not None:
        return t.element
    element_oid = BUILTIN_ARRAY_ELEMENTS.get(t.oid)
    if element_oid is not None:
        delimiter = BUILTIN_DELIMITERS.get(element_oid, ",")
        return PgType(element_oid, "", t.typmod, delimiter=delimiter)
    if t.kind == "b" and t.oid not in mapped_oids and t.name[:1] == "_" and len(t.name) > 1:
        return PgType(0, t.name[1:], t.typmod)
    return None


def array_mapping(
    inner: ColumnMapping, delimiter: str, optional: bool, modes: TypeModes
) -> ColumnMapping:
    """ARRAY of the element mapping `inner` (made optional by the caller), or unknown with it."""
    if not inner.supported:
        return unknown_mapping(optional, modes)
    schema = ConnectSchema(ARRAY, optional, items=inner.schema)
    return ColumnMapping(schema, array_converter(inner.convert, delimiter), [])
