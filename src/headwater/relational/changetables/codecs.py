"""Table codecs of the change-table connectors, built from table definitions.

Why from definitions: a change row must be decoded with the columns in force at its position
(the schema history's definition), not with today's catalog; and a change table's columns are
the ones its capture instance (CD table) was created with, which need not be the definition's
order or set.  So a codec maps the definition's columns, by name, onto the columns the change
query returns, and a definition column the change table lacks is an error naming both.

The connector supplies the type mapping (`column_mapping` of its types.py, given one column's
definition); filters and `message.key.columns` are the configuration's, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from headwater.model.schema import Column, TableSchema
from headwater.relational.changetables.types import Mapping
from headwater.relational.codec import RelationalTableCodec
from headwater.relational.config import RelationalConnectorConfig
from headwater.relational.table_definition import ColumnDefinition, TableDefinition

log = logging.getLogger("headwater.relational.changetables")

ColumnMapping = Callable[[ColumnDefinition], Mapping | None]


class TypeMapping(Protocol):
    """A connector's `column_mapping` (its types.py): one column's type under the modes."""

    def __call__(self, type_name: str, precision: int | None, scale: int | None,
                 optional: bool, /, *, time_mode: str, decimal_mode: str, binary_mode: str,
                 column: str) -> Mapping | None: ...


def _type_and_length(column: ColumnDefinition) -> tuple[str, int | None]:
    return column.type_name, column.length


def configured_mapping(
    cfg: Any, column_mapping: TypeMapping,
    type_and_precision: Callable[[ColumnDefinition], tuple[str, int | None]] = _type_and_length,
) -> ColumnMapping:
    """The `ColumnMapping` of `column_mapping` under the configured `time.precision.mode`,
    `decimal.handling.mode` and `binary.handling.mode`; `type_and_precision` reads a
    definition's type name and precision (by default its type name and column size), the scale
    is its decimal digits."""

    def mapping(column: ColumnDefinition) -> Mapping | None:
        type_name, precision = type_and_precision(column)
        return column_mapping(
            type_name, precision, column.scale, column.optional,
            time_mode=cfg.time_precision_mode, decimal_mode=cfg.decimal_handling_mode,
            binary_mode=cfg.binary_handling_mode, column=column.name)

    return mapping


class ChangeTableColumnsError(RuntimeError):
    """A definition column the change table (capture instance, CD table) does not have."""


def definition_codec(cfg: RelationalConnectorConfig, definition: TableDefinition,
                     source_columns: Sequence[str], mapping: ColumnMapping,
                     source: str = "") -> RelationalTableCodec:
    """The codec of `definition` for rows whose values come in `source_columns` order;
    `source` names where they come from (a capture instance) for the error."""
    table = definition.id
    index = {name: i for i, name in enumerate(source_columns)}
    columns: list[Column] = []
    converters = []
    keep: list[int] = []
    for column in definition.columns:
        if not cfg.column_filter(table.schema or "", table.table, column.name):
            continue
        mapped = mapping(column)
        if mapped is None:
            log.warning("table %s, column %s: type %s is not mapped; column left out", table,
                        column.name, column.type_name)
            continue
        if column.name not in index:
            raise ChangeTableColumnsError(
                f"table {table}: column {column.name!r} of its definition is not in "
                f"{source or 'the change table'} (columns {', '.join(source_columns)})")
        schema, convert, fallback = mapped
        columns.append(Column(column.name, len(columns), column.type_name, schema,
                              length=column.length, scale=column.scale, fallback=fallback))
        converters.append(convert)
        keep.append(index[column.name])
    kept = {c.name for c in columns}
    override = cfg.key_columns(table.schema or "", table.table)
    key = tuple(k for k in (override or definition.primary_key) if k in kept)
    return RelationalTableCodec(TableSchema(table, tuple(columns), key), tuple(converters),
                                tuple(keep), len(source_columns))


class CodecCache:
    """Codecs by (definition, change-table columns): built once per table version."""

    def __init__(self, cfg: RelationalConnectorConfig, mapping: ColumnMapping) -> None:
        self.cfg = cfg
        self.mapping = mapping
        self._codecs: dict[tuple[Any, ...], RelationalTableCodec] = {}

    def get(self, definition: TableDefinition, source_columns: tuple[str, ...],
            source: str = "") -> RelationalTableCodec:
        key = (definition, source_columns)
        codec = self._codecs.get(key)
        if codec is None:
            if len(self._codecs) > 1024:
                self._codecs.clear()
            codec = definition_codec(self.cfg, definition, source_columns, self.mapping, source)
            self._codecs[key] = codec
        return codec
