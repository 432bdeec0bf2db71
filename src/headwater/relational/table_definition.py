"""A table's definition as Debezium's relational model holds it (`io.debezium.relational.Table`
and `Column`): what the schema history records and the `tableChanges` of a schema change
event carry.

Why a model of its own (not `model.schema.TableSchema`): a `TableSchema` is what the events are
converted to (Connect schemas); a definition is what the database said about its columns (JDBC
type code, type name, column size, decimal digits, nullability, identity, computed, default).
The history keeps definitions so that a restarted connector decodes old change rows with the
columns in force at their position and builds its `TableSchema`s from them again.

`jdbc_column` applies Debezium's `JdbcConnection.readTableColumn` rules, which decide fields
consumers see: the type expression is the type name (`ColumnEditor.type`), the length is the
column size (0 when the driver has none), the scale only when the driver gives decimal digits,
and a nullable column "has a default" (NULL) even without a default expression
(`ColumnEditorImpl.optional`).  Definitions compare equal field by field, so one read back from
the history equals the catalog's when nothing changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from headwater.model.schema import TableId


@dataclass(frozen=True, slots=True)
class ColumnDefinition:
    """One column (Debezium's `Column`); `length` None is Debezium's UNSET, `scale` None an
    absent scale, `native_type` None an unset native type."""

    name: str
    jdbc_type: int
    type_name: str
    position: int  # 1-based
    optional: bool
    length: int | None = None
    scale: int | None = None
    native_type: int | None = None
    type_expression: str | None = None  # None: the type name
    charset_name: str | None = None
    auto_incremented: bool = False
    generated: bool = False
    comment: str | None = None
    has_default_value: bool = False
    default_value_expression: str | None = None
    enum_values: tuple[str, ...] = ()

    @property
    def expression(self) -> str:
        return self.type_expression if self.type_expression is not None else self.type_name


@dataclass(frozen=True, slots=True)
class TableDefinition:
    """One table (Debezium's `Table`): its columns in position order and its key columns."""

    id: TableId
    columns: tuple[ColumnDefinition, ...]
    primary_key: tuple[str, ...] = ()
    default_charset_name: str | None = None
    comment: str | None = None
    attributes: tuple[tuple[str, str | None], ...] = ()

    def column(self, name: str) -> ColumnDefinition:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(f"table {self.id} has no column {name!r}")

    def with_columns(self, names: frozenset[str] | set[str]) -> TableDefinition:
        """Only the named columns (and key columns), as Debezium keeps a SQL Server table to
        the columns of its capture instance."""
        return TableDefinition(
            self.id, tuple(c for c in self.columns if c.name in names),
            tuple(k for k in self.primary_key if k in names), self.default_charset_name,
            self.comment, self.attributes)


def jdbc_column(name: str, jdbc_type: int, type_name: str, position: int, *,
                nullable: bool, column_size: int | None, decimal_digits: int | None,
                auto_incremented: bool = False, generated: bool = False,
                default: str | None = None) -> ColumnDefinition:
    """A column as `JdbcConnection.readTableColumn` builds it from one row of
    `DatabaseMetaData.getColumns` (see the module docstring for the rules)."""
    return ColumnDefinition(
        name=name, jdbc_type=jdbc_type, type_name=type_name, type_expression=type_name,
        position=position, optional=nullable, length=column_size or 0, scale=decimal_digits,
        auto_incremented=auto_incremented, generated=generated,
        has_default_value=nullable or default is not None, default_value_expression=default)
