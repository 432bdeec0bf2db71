"""What every type family shares: `PgType`, the factory signature and the typmod readers.

A family module maps its types with factories, ``(PgType, optional, TypeModes) →
ColumnMapping``, called once per column; the `ColumnMapping`'s ``convert`` is the per-value hot
path, so factories resolve every mode and typmod up front.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from headwater.convert import ColumnMapping, TypeModes
from headwater.model.schema import STRING, ConnectSchema

DEFAULT_TEMPORAL_PRECISION = 6  # pgjdbc's (and so Debezium's) scale of time/timestamp(tz)


class PgType(NamedTuple):
    """What the type mapping needs to know about a column's type (built by the catalog).

    Domains are resolved: `oid`, `name` and `kind` are those of the domain's base type, and
    `typmod` is the column's modifier, else that of the nearest domain that has one.  For an
    array type, `element` describes the element type (domains resolved too; its `typmod` is the
    array column's) and the array is parsed with the element's `delimiter`.

    oid: pg_type.oid of the (base) type.
    name: pg_type.typname (``int4``, ``_int4``, ``hstore``, ``mood``); extension and user types
        are mapped by this name, since their OIDs differ between databases.
    typmod: atttypmod, -1 for none.
    kind: pg_type.typtype: ``b`` base, ``e`` enum, ``r`` range, ``m`` multirange, ``c``
        composite, ``p`` pseudo.
    enum_labels: an enum's labels in their sort order (pg_enum.enumsortorder).
    element: the element type of an array type, None otherwise.
    delimiter: pg_type.typdelim, the separator of this type's values inside an array.
    """

    oid: int
    name: str = ""
    typmod: int = -1
    kind: str = "b"
    enum_labels: tuple[str, ...] = ()
    element: PgType | None = None
    delimiter: str = ","


Factory = Callable[[PgType, bool, TypeModes], ColumnMapping]


def numeric_precision_scale(type_modifier: int) -> tuple[int, int] | None:
    """(precision, scale) of a numeric typmod, None for an unconstrained numeric.

    typmod = ((precision << 16) | (scale & 0x7ff)) + 4; the scale is an 11-bit signed field
    since PostgreSQL 15 (NUMERIC(p, -s)), which is backward compatible with scales 0-1000.
    """
    if type_modifier < 4:
        return None
    tm = type_modifier - 4
    return (tm >> 16) & 0xFFFF, ((tm & 0x7FF) ^ 1024) - 1024


def temporal_precision(type_modifier: int) -> int:
    """Fractional-second precision of time/timetz/timestamp/timestamptz: the typmod, 6 if none."""
    if type_modifier < 0:
        return DEFAULT_TEMPORAL_PRECISION
    return min(type_modifier, 6)


def simple(literal: str, convert: Callable[[str], Any], fallback: Any) -> Factory:
    """The factory of a type whose schema is a bare Connect type, whatever the typmod/modes."""

    def factory(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
        return ColumnMapping(ConnectSchema(literal, optional), convert, fallback)

    return factory


def named_string(name: str) -> Factory:
    """The factory of a STRING with a Debezium semantic name, the text as PostgreSQL prints it."""

    def factory(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
        return ColumnMapping(ConnectSchema(STRING, optional, name, 1), str, "")

    return factory
