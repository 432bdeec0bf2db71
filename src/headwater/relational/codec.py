"""The table codec base: a table version's Connect schema plus one converter per kept column.

Every relational connector turns the row images its log or snapshot hands it (text for
PostgreSQL, natural Python values for MySQL) into the schema's Connect values the same way: keep
the columns the filters keep, convert each non-null value with its column's converter, and pass
a value the source did not send (`UNSENT`: an unchanged TOAST value, a column a key-only image
lacks) through untouched.  Connectors subclass it for what they know more (the incoming column
list of a pgoutput Relation, a MySQL table definition) and set `UNSENT`.

`convert` is on the capture hot path: one list comprehension over precomputed converters.
`convert_each` is the slow path the dispatcher takes after `convert` failed, to name the column
and apply ``event.converting.failure.handling.mode``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from headwater.model.record import ABSENT, Op
from headwater.model.schema import TableSchema

if TYPE_CHECKING:
    from headwater.engine.dispatcher import EventDispatcher

Converter = Callable[[Any], Any]

# Converters that give back a value of their own type unchanged: a column of that type (or
# null) needs no call (`convert_rows`).
_IDENTITY: dict[Any, frozenset[type]] = {
    conv: frozenset({conv, type(None)}) for conv in (int, str, float)
}


class RelationalTableCodec:
    """Schema plus converters for one version of one table."""

    __slots__ = ("all_kept", "column_converters", "converters", "keep", "schema")

    # The marker of a value the source did not send; passed through unconverted.
    UNSENT: ClassVar[Any] = ABSENT

    def __init__(
        self, schema: TableSchema, converters: tuple[Converter, ...], keep: tuple[int, ...],
        source_width: int,
    ) -> None:
        self.schema = schema
        self.converters = converters  # one per kept column, in schema order
        # A converter's `column(values, unsent)`, if it has one: a whole column at once, None
        # when a value is `unsent` (convert_rows).
        self.column_converters: tuple[Callable[[Sequence[Any], Any], list[Any] | None] | None,
                                      ...] = tuple(getattr(c, "column", None)
                                                   for c in converters)
        self.keep = keep  # positions of the kept columns in the source's column order
        # The source's values are the schema's as they are (a mapping by name may reorder).
        self.all_kept = keep == tuple(range(source_width))

    def convert(self, values: Sequence[Any]) -> tuple[Any, ...]:
        """One row in the source's column order to the schema's Connect values."""
        if not self.all_kept:
            values = [values[i] for i in self.keep]
        unsent = self.UNSENT
        if unsent in values:
            return tuple(
                v if v is None or v is unsent else c(v)
                for c, v in zip(self.converters, values, strict=True)
            )
        return tuple(
            [None if v is None else c(v) for c, v in zip(self.converters, values, strict=True)]
        )

    def convert_rows(self, rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
        """`[self.convert(r) for r in rows]`, column by column (a snapshot's chunk).

        Why: row by row, each value pays the tuple building, the zip and the `UNSENT` scan of
        its row; a column pays them once.  A column whose converter is `int`, `str` or `float`
        and whose values all have that type already is passed on as it is (the call would
        return an equal value of the same type).  A converter with a `column` method converts
        its column itself (a binlog codec's memoised converters: tables.py in the MySQL
        connector).  A chunk holding an `UNSENT` value goes row by row, so the result is
        always `convert`'s.
        """
        if not rows:
            return []
        columns: list[Sequence[Any]] = list(zip(*rows, strict=True))
        if not self.all_kept:
            columns = [columns[i] for i in self.keep]
        unsent = self.UNSENT
        out: list[Sequence[Any]] = []
        for convert, convert_column, column in zip(
                self.converters, self.column_converters, columns, strict=True):
            if convert_column is not None:
                converted = convert_column(column, unsent)
                if converted is None:
                    return [self.convert(r) for r in rows]
                out.append(converted)
                continue
            if unsent in column:
                return [self.convert(r) for r in rows]
            natural = _IDENTITY.get(convert)
            if natural is not None and set(map(type, column)) <= natural:
                out.append(column)
            elif None in column:
                out.append([None if v is None else convert(v) for v in column])
            else:
                out.append(list(map(convert, column)))
        return list(zip(*out, strict=True))

    def convert_each(
        self, values: Sequence[Any], failed: Callable[[int, Any, Exception], None]
    ) -> tuple[Any, ...]:
        """Like `convert`, column by column: a value that fails goes to `failed` (which may
        raise) and becomes null."""
        if not self.all_kept:
            values = [values[i] for i in self.keep]
        unsent = self.UNSENT
        out: list[Any] = []
        for index, (convert, value) in enumerate(zip(self.converters, values, strict=True)):
            if value is None or value is unsent:
                out.append(value)
                continue
            try:
                out.append(convert(value))
            except Exception as exc:
                failed(index, value, exc)
                out.append(None)
        return tuple(out)


def convert_images(dispatcher: EventDispatcher, codec: RelationalTableCodec,
                   images: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """A log event's row images (a binlog rows event's) converted column by column
    (`convert_rows`); if any value fails, row by row through the dispatcher, which names the
    column and applies the converting failure mode."""
    try:
        return codec.convert_rows(images)
    except Exception:
        return [dispatcher.convert(codec, image) for image in images]


def row_images(convert: Callable[[Sequence[Any]], list[tuple[Any, ...]]], op: Op,
               rows: Sequence[Any]) -> tuple[Sequence[Any], Sequence[Any]]:
    """A log event's rows of one operation as (befores, afters), each side converted at once
    by `convert` (an update's rows are (before, after) pairs; the absent side is None)."""
    if op is Op.UPDATE:
        return convert([r[0] for r in rows]), convert([r[1] for r in rows])
    images, nones = convert(rows), [None] * len(rows)
    return (nones, images) if op is Op.CREATE else (images, nones)
