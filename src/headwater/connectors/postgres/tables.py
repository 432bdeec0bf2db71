"""Turns a PostgreSQL table description into a TableSchema and a row converter (a codec).

One codec per table version: the snapshot builds it from the catalogs, streaming from each
Relation message (enriched with the catalogs for nullability and keys).  The codec's
`convert` is on the hot path: a list comprehension over precomputed converters, with a slower
path only for rows that carry unchanged-TOAST markers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from headwater.connectors.postgres.catalog import ColumnInfo, TableInfo
from headwater.connectors.postgres.columnar_kinds import PER_VALUE, ColumnKind, column_kind
from headwater.connectors.postgres.defaults import default_text, jdbc_type_name
from headwater.connectors.postgres.types import (
    BUILTIN_ARRAY_ELEMENTS,
    PgType,
    TypeModes,
    pg_column_mapping,
)
from headwater.model.record import ABSENT, UNCHANGED_TOAST
from headwater.model.schema import Column, TableId, TableSchema
from headwater.relational.codec import Converter, RelationalTableCodec
from headwater.relational.column_mappers import ColumnMappers, is_character_type

log = logging.getLogger("headwater.connectors.postgres")


class IncomingColumn(NamedTuple):
    """A column as the source sends it (pgoutput Relation or COPY column list)."""

    name: str
    type_oid: int
    type_modifier: int
    is_identity_key: bool = False


def _passthrough(value: str) -> Any:
    return value


class TableCodec(RelationalTableCodec):
    """Schema plus converters for one version of one table (pgoutput / COPY text in)."""

    __slots__ = ("columnar", "identity", "incoming")

    UNSENT = UNCHANGED_TOAST

    def __init__(
        self,
        schema: TableSchema,
        incoming: tuple[IncomingColumn, ...],
        converters: tuple[Converter, ...],
        keep: tuple[int, ...],
        columnar: tuple[ColumnKind, ...] | None = None,
    ) -> None:
        super().__init__(schema, converters, keep, len(incoming))
        self.incoming = incoming
        # Per kept column, the kernel a column-wise snapshot renders its values with
        # (columnar_kinds.py); PER_VALUE: the converter above, value by value.
        self.columnar = columnar if columnar is not None else (PER_VALUE,) * len(converters)
        # Schema positions of replica identity columns: the only ones a key-only old tuple has.
        self.identity = frozenset(
            pos for pos, i in enumerate(keep) if incoming[i].is_identity_key
        )

    def same_shape(self, incoming: tuple[IncomingColumn, ...]) -> bool:
        return incoming == self.incoming

    def before_image(self, values: tuple[Any, ...], kind: str | None) -> tuple[Any, ...]:
        """An old tuple's converted `values` as the before image: a key-only one (kind 'K')
        has only the replica identity columns, the rest are unknown (ABSENT), not NULL."""
        if kind != "K":
            return values
        ident = self.identity
        return tuple(v if i in ident else ABSENT for i, v in enumerate(values))

    @staticmethod
    def with_old_toast(after: tuple[Any, ...], before: tuple[Any, ...]) -> tuple[Any, ...]:
        """REPLICA IDENTITY FULL: the old tuple holds the TOAST values the new one leaves out."""
        return tuple(b if a is UNCHANGED_TOAST and b is not UNCHANGED_TOAST else a
                     for a, b in zip(after, before, strict=True))


CodecFactory = Callable[[int, str, str, tuple[IncomingColumn, ...]], TableCodec | None]


class RelationCodecs(dict[int, TableCodec | None]):
    """Relation oid -> codec (None: a table not captured), from pgoutput's Relation messages;
    a table's codec is kept across replication sessions while its columns stay the same."""

    def __init__(self, factory: CodecFactory) -> None:
        super().__init__()
        self.factory = factory

    def relation(self, oid: int, namespace: str, name: str, columns: Sequence[Any]) -> None:
        """A Relation message's table and columns (pgoutput.RelationColumn)."""
        incoming = tuple(
            IncomingColumn(c.name, c.type_oid, c.type_modifier, c.is_key) for c in columns)
        old = self.get(oid)
        if old is None or not old.same_shape(incoming):
            self[oid] = self.factory(oid, namespace, name, incoming)


def build_codec(
    database: str,
    info: TableInfo,
    incoming: tuple[IncomingColumn, ...],
    modes: TypeModes,
    column_filter: Callable[[str, str, str], bool],
    key_override: tuple[str, ...] | None = None,
    column_mappers: ColumnMappers | None = None,
) -> TableCodec:
    """A codec for `incoming` columns of the table described (as far as known) by `info`."""
    by_name: dict[str, ColumnInfo] = {c.name: c for c in info.columns}
    columns: list[Column] = []
    converters: list[Converter] = []
    kinds: list[ColumnKind] = []
    keep: list[int] = []
    key_candidates = _key_columns(info, incoming, key_override)
    for idx, inc in enumerate(incoming):
        cat = by_name.get(inc.name)
        in_key = inc.name in key_candidates
        if not in_key and not column_filter(info.schema, info.name, inc.name):
            continue
        if cat is not None:
            pg_type = cat.pg_type or PgType(
                cat.base_type_oid, cat.base_type_name, cat.type_modifier
            )
            optional = not cat.not_null and not in_key
        else:
            pg_type, optional = PgType(inc.type_oid, "", inc.type_modifier), not in_key
        oid, tname, typmod = pg_type.oid, pg_type.name, pg_type.typmod
        mapping = pg_column_mapping(pg_type, optional, modes)
        convert = mapping.convert
        if not mapping.supported:
            log.warning(
                "column %s.%s.%s has type %s, which Headwater does not map yet; its values are "
                "passed through as text (see docs/decisions.md)",
                info.schema, info.name, inc.name, cat.formatted_type if cat else oid,
            )
            convert = _passthrough
        length, scale = _length_scale(oid, typmod)
        field_schema, fallback = mapping.schema, mapping.fallback
        default = _column_default(cat, pg_type, scale, convert) if mapping.supported else None
        if default is not None:
            # Debezium: the field's schema default, and the value of a missing NOT NULL one
            field_schema, fallback = replace(field_schema, default=default), default
        column = Column(
            name=inc.name,
            position=len(columns),
            type_name=tname or str(oid),
            schema=field_schema,
            length=length,
            scale=scale,
            type_oid=oid,
            fallback=fallback,
        )
        if column_mappers:  # Debezium builds message keys without mappers (key=in_key)
            # the source type is the column's own type name as pgjdbc reports it (a domain's
            # name, serial / bigserial), as Debezium's Column.typeName()
            source_type = (jdbc_type_name(cat.type_name, cat.default_expression)
                           if cat is not None else column.type_name)
            column, convert = column_mappers.apply(
                column, convert, f"{info.schema}.{info.name}.{inc.name}", source_type,
                length, scale,
                character=is_character_type(column.type_name) or pg_type.kind == "e",
                key=in_key,
            )
        columns.append(column)
        converters.append(convert)
        # A column mapper that wraps the converter (mask, hash, truncate) changes the values:
        # the column keeps the converter.  Mappers that only add schema parameters do not.
        kinds.append(column_kind(pg_type, modes)
                     if mapping.supported and convert is mapping.convert else PER_VALUE)
        keep.append(idx)
    names = {c.name for c in columns}
    key = tuple(k for k in key_candidates if k in names)
    _warn_identity(database, info)
    origin = "message.key.columns" if key_override else (
        "primary_key" if info.primary_key else "replica_identity_index"
    )
    schema = TableSchema(
        id=TableId(database, info.schema, info.name),
        columns=tuple(columns),
        key_columns=key,
        key_origin=origin,
        attributes={"replica_identity": info.replica_identity, "oid": info.oid},
    )
    return TableCodec(schema, incoming, tuple(converters), tuple(keep), tuple(kinds))


def _column_default(
    cat: ColumnInfo | None, pg_type: PgType, scale: int | None, convert: Converter
) -> Any:
    """The column's default as Debezium resolves it (`defaults.default_text`), converted as
    its values are; None without one.  STRUCT values are dropped (Kafka's KAFKA-12694)."""
    if cat is None or cat.default_expression is None:
        return None
    type_name = jdbc_type_name(cat.type_name, cat.default_expression)
    enum_type = pg_type.kind == "e" and cat.type_oid == pg_type.oid
    text = default_text(type_name, cat.default_expression, enum_type,
                        scale if pg_type.oid == 1700 else None)
    if text is None:
        return None
    try:
        value = convert(text)
    except (ValueError, ArithmeticError):
        log.debug("column %s: default %r not resolved", cat.name, cat.default_expression)
        return None
    return None if isinstance(value, dict) else value


_WARNED: set[tuple[str, str, str, str]] = set()


def _warn_identity(database: str, info: TableInfo) -> None:
    """Says, once per table and identity, when updates and deletes cannot identify a row."""
    ident = info.replica_identity
    if ident == "n":
        problem = "has REPLICA IDENTITY NOTHING"
    elif ident == "d" and not info.primary_key:
        problem = "has no primary key and REPLICA IDENTITY DEFAULT"
    else:
        return
    if (database, info.schema, info.name, ident) in _WARNED:
        return
    _WARNED.add((database, info.schema, info.name, ident))
    log.warning(
        "table %s.%s %s: its UPDATE and DELETE events cannot carry the old row or key, and "
        "PostgreSQL refuses UPDATE and DELETE on it while a publication publishes them; set "
        "REPLICA IDENTITY FULL (or USING INDEX, or add a primary key)",
        info.schema, info.name, problem,
    )


def _key_columns(
    info: TableInfo, incoming: tuple[IncomingColumn, ...], override: tuple[str, ...] | None
) -> tuple[str, ...]:
    if override:
        return override
    if info.primary_key:
        return info.primary_key
    if info.replica_identity == "i" and info.identity_index_columns:
        return info.identity_index_columns
    return ()


# pgjdbc's TypeInfoCache: what DatabaseMetaData.getColumns reports as COLUMN_SIZE and
# DECIMAL_DIGITS, which Debezium takes as the column's length and scale (PostgresConnection
# .doReadTableColumn) and `column.propagate.source.type` puts in the schema parameters.
_UNKNOWN_LENGTH = 2_147_483_647  # pgjdbc's default unknownLength (Integer.MAX_VALUE)
_PRECISION = {21: 5, 26: 10, 23: 10, 20: 19, 700: 8, 701: 17, 18: 1, 16: 1}  # int2 ... bool
_FLOAT_SCALE = {700: 8, 701: 17}
_TEMPORAL = (1083, 1266, 1114, 1184)  # time, timetz, timestamp, timestamptz
_TEMPORAL_BASE = {1083: 8, 1266: 8 + 6, 1114: 13 + 1 + 8, 1184: 13 + 1 + 8 + 6}


def _display_size(oid: int, typmod: int) -> int:
    """``TypeInfoCache.getDisplaySize`` for the types whose precision is their display size."""
    if oid == 1082:  # date
        return 13
    if oid in _TEMPORAL:
        second = {-1: 7, 0: 0, 1: 3}.get(typmod, typmod + 1)
        return _TEMPORAL_BASE[oid] + second
    return 49  # interval


def _length_scale(oid: int, typmod: int) -> tuple[int | None, int | None]:
    """(length, scale) as pgjdbc reports them for a column of base type `oid` (an array: its
    element type, as ``convertArrayToBaseOid``) and modifier `typmod`: ``getPrecision`` (0
    replaced by ``getDisplaySize``, as ``getColumns`` does) and ``getScale``."""
    oid = BUILTIN_ARRAY_ELEMENTS.get(oid, oid)
    if oid in _PRECISION:
        length = _PRECISION[oid]
    elif oid == 1700:  # numeric: ((precision << 16) | scale) + 4
        # unconstrained: precision 0, so getDisplaySize's 131089 (Debezium's streamed events;
        # its snapshot events say 0 and no scale: docs/compatibility.md)
        length = 131089 if typmod == -1 else ((typmod - 4) >> 16) & 0xFFFF
    elif oid in (1042, 1043):  # bpchar, varchar: length + 4
        length = _UNKNOWN_LENGTH if typmod == -1 else typmod - 4
    elif oid in (1082, *_TEMPORAL, 1186):
        length = _display_size(oid, typmod)
    elif oid == 1560:  # bit
        length = typmod
    elif oid == 1562:  # varbit
        length = _UNKNOWN_LENGTH if typmod == -1 else typmod
    else:
        length = _UNKNOWN_LENGTH
    if oid in _FLOAT_SCALE:
        scale = _FLOAT_SCALE[oid]
    elif oid == 1700:
        scale = 0 if typmod == -1 else (typmod - 4) & 0xFFFF
    elif oid in _TEMPORAL:
        scale = 6 if typmod == -1 else typmod
    elif oid == 1186:  # interval: the precision is the modifier's low 16 bits
        scale = 6 if typmod == -1 else typmod & 0xFFFF
    else:
        scale = 0
    return length, scale


def incoming_from_catalog(info: TableInfo) -> tuple[IncomingColumn, ...]:
    return tuple(IncomingColumn(c.name, c.type_oid, c.type_modifier) for c in info.columns)
