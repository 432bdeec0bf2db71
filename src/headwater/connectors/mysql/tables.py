"""Turns a `MySqlTable` (from the schema history) into a `TableSchema` plus one converter per
column: a codec.  One codec per table version; the snapshot and the binlog path share it, since
both hand it natural values (see columns.py).

The key is the primary key, else `message.key.columns`, else the first unique key whose columns
are all NOT NULL (what Debezium's MySQL connector does); tables without any have a null key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from headwater.connectors.mysql.binlog.rows import MEMO_SIZE
from headwater.connectors.mysql.columns import MySqlTable
from headwater.connectors.mysql.ddl_types import NATIONAL_TYPES
from headwater.connectors.mysql.defaults import column_default
from headwater.connectors.mysql.types import MySqlTypeModes, mysql_column_mapping
from headwater.model.record import ABSENT
from headwater.model.schema import NO_DEFAULT, Column, TableId, TableSchema
from headwater.relational.codec import Converter, RelationalTableCodec
from headwater.relational.column_mappers import ColumnMappers, is_character_type
from headwater.relational.config import DEFAULT_UNAVAILABLE_VALUE, placeholder_bytes

if TYPE_CHECKING:
    from headwater.connectors.mysql.config import MySqlConnectorConfig

# Types whose conversion costs a microsecond or so (Decimal arithmetic and base64, datetime
# arithmetic) while the binlog decoder hands out one shared object per distinct stored value
# (its per-column memo, binlog/rows.py): for binlog values their converters remember results
# by object (MySqlTableCodec.binlog).
_MEMOISED_TYPES = frozenset({"DECIMAL", "DATE", "DATETIME", "TIMESTAMP", "TIME"})


class _ByObject:
    """A converter remembering its last results by the identity of the value converted.

    Keyed by `id(value)`, with the values held (`held`), so an id is never reused while its
    entry lives and a hit is exactly the same input: no equality (Decimal("-0") == 0,
    JdbcTimestamp == datetime) decides anything.  Values that are fresh objects every time
    (a snapshot's) only miss, at ~0.3 µs each.  `column` converts a rows event's column at
    once: when every value is remembered (or None, remembered as None), two C-level maps and
    no Python call per value."""

    __slots__ = ("convert", "held", "results")

    def __init__(self, convert: Converter) -> None:
        self.convert = convert
        self.results: dict[int, Any] = {id(None): None}
        self.held: list[Any] = []

    def __call__(self, value: Any) -> Any:
        results = self.results
        key = id(value)
        if key in results:
            return results[key]
        result = self.convert(value)
        if len(results) >= MEMO_SIZE:  # the decoder's memo size: the objects it shares
            results.clear()
            self.held.clear()
            results[id(None)] = None
        results[key] = result
        self.held.append(value)
        return result

    def column(self, values: Sequence[Any], unsent: Any) -> list[Any] | None:
        """`[None if v is None else self(v) for v in values]`; None if a value is `unsent`
        (the caller then converts row by row)."""
        try:
            return list(map(self.results.__getitem__, map(id, values)))
        except KeyError:
            pass
        out: list[Any] = []
        for value in values:
            if value is unsent:
                return None
            out.append(self(value))
        return out


class UnsupportedColumnError(ValueError):
    """A column whose type cannot be mapped; the message names table, column and type."""


class MySqlTableCodec(RelationalTableCodec):
    """Schema plus converters for one version of one table (natural values in).

    A BLOB or TEXT column an image leaves out (``binlog_row_image=NOBLOB``: unchanged in an
    update's after image, any in a before image) gets Debezium's unavailable-value placeholder,
    bytes for a BLOB and text for a TEXT column, before conversion, as Debezium 3.x's
    BinlogStreamingChangeEventSource.alignRowToTable does (the converters then render it as
    any value of the column); other left-out columns stay ABSENT (null).
    """

    __slots__ = ("_binlog", "placeholder", "table", "unavailable")

    def __init__(
        self,
        table: MySqlTable,
        schema: TableSchema,
        converters: tuple[Converter, ...],
        keep: tuple[int, ...],
        placeholder: str = DEFAULT_UNAVAILABLE_VALUE,
    ) -> None:
        super().__init__(schema, converters, keep, len(table.columns))
        self.table = table
        self.placeholder = placeholder
        self._binlog: MySqlTableCodec | None = None
        # (source position, placeholder) of the BLOB/TEXT columns (Debezium's
        # RowImageUtils.isBlobOrTextColumn: the type name contains BLOB or TEXT); the text form
        # is the bytes decoded, as Debezium's `new String(bytes)`
        data = placeholder_bytes(placeholder)
        text = data.decode("utf-8", "replace")
        self.unavailable = tuple(
            (i, data if "BLOB" in c.type_name.upper() else text)
            for i, c in enumerate(table.columns)
            if "BLOB" in c.type_name.upper() or "TEXT" in c.type_name.upper())

    def binlog(self) -> MySqlTableCodec:
        """This codec for binlog values (the same schema object): the converters of the
        columns of `_MEMOISED_TYPES` remember their results by object (`_ByObject`), since the
        binlog decoder hands out one shared object per distinct stored value of such a column.
        Not for a snapshot's values, fresh objects every time (they would only fill memos)."""
        if self._binlog is None:
            converters = tuple(
                _ByObject(c) if self.table.columns[i].type_name in _MEMOISED_TYPES else c
                for c, i in zip(self.converters, self.keep, strict=True))
            self._binlog = MySqlTableCodec(self.table, self.schema, converters, self.keep,
                                           self.placeholder)
        return self._binlog

    def _placeholders(self, values: Sequence[Any]) -> Sequence[Any]:
        if not self.unavailable or ABSENT not in values:
            return values
        filled = list(values)
        for i, placeholder in self.unavailable:
            if filled[i] is ABSENT:
                filled[i] = placeholder
        return filled

    def convert(self, values: Sequence[Any]) -> tuple[Any, ...]:
        return super().convert(self._placeholders(values))

    def convert_each(
        self, values: Sequence[Any], failed: Callable[[int, Any, Exception], None]
    ) -> tuple[Any, ...]:
        return super().convert_each(self._placeholders(values), failed)


def key_candidates(table: MySqlTable, override: tuple[str, ...] | None) -> tuple[str, ...]:
    if override:
        return tuple(table.column(name).name for name in override)
    if table.primary_key:
        return table.primary_key
    for unique in table.unique_keys:
        if all(not table.column(name).nullable for name in unique):
            return unique
    return ()


def configured_codec(table: MySqlTable, modes: MySqlTypeModes,
                     cfg: MySqlConnectorConfig) -> MySqlTableCodec:
    """`table`'s codec under the connector's column filter, key columns and column mappers:
    the schema state's, and a snapshot worker's (which cannot be handed a codec's closures),
    built alike from the same inputs."""
    return build_codec(table, modes, cfg.column_filter,
                       cfg.key_columns(table.database, table.name), cfg.column_mappers)


def build_codec(
    table: MySqlTable,
    modes: MySqlTypeModes,
    column_filter: Callable[[str, str, str], bool],
    key_override: tuple[str, ...] | None = None,
    column_mappers: ColumnMappers | None = None,
) -> MySqlTableCodec:
    key = key_candidates(table, key_override)
    columns: list[Column] = []
    converters: list[Converter] = []
    keep: list[int] = []
    for idx, col in enumerate(table.columns):
        in_key = col.name in key
        if not in_key and not column_filter(table.database, table.name, col.name):
            continue
        try:
            mapping = mysql_column_mapping(col, modes)
        except ValueError as exc:
            raise UnsupportedColumnError(
                f"table {table.qualified_name}, column {col.name} ({col.qualified_type}): {exc}"
            ) from exc
        schema = mapping.schema
        if in_key and schema.optional:
            schema = schema.with_optional(False)
        convert: Converter = mapping.convert
        fallback = mapping.fallback
        # the SQL DEFAULT as Debezium's BinlogDefaultValueConverter resolves it (also what a
        # NOT NULL column's missing value becomes, as in Debezium's convertValue)
        default = column_default(col, convert)
        if default is not NO_DEFAULT:
            schema, fallback = replace(schema, default=default), default
        column = Column(
            name=col.name,
            position=len(columns),
            type_name=col.type_name,
            schema=schema,
            length=col.length,
            scale=col.scale,
            fallback=fallback,
            unsigned=col.unsigned,
        )
        if column_mappers:  # Debezium builds message keys without mappers (key=in_key)
            column, convert = column_mappers.apply(
                column, convert, f"{table.database}.{table.name}.{col.name}", col.type_name,
                col.length, col.scale,
                character=is_character_type(col.type_name) or col.type_name in _CHARACTER,
                key=in_key,
            )
        columns.append(column)
        converters.append(convert)
        keep.append(idx)
    origin = "message.key.columns" if key_override else (
        "primary_key" if table.primary_key else "unique_index"
    )
    table_schema = TableSchema(
        id=TableId(table.database, None, table.name),
        columns=tuple(columns),
        key_columns=key,
        key_origin=origin,
    )
    return MySqlTableCodec(table, table_schema, tuple(converters), tuple(keep),
                           modes.unavailable_value_placeholder)


_CHARACTER = frozenset({
    "CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT", "ENUM", "SET", "JSON",
    *NATIONAL_TYPES,
})
