"""`RelationalTableCodec.convert_rows` (a snapshot chunk, column by column) against `convert`
(row by row), on the cases a real table may not show: a value of another type in a column whose
converter would pass it on, kept columns out of source order, `UNSENT` values, nulls."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from headwater.model.record import ABSENT
from headwater.model.schema import INT32, STRING, Column, ConnectSchema, TableId, TableSchema
from headwater.relational.codec import RelationalTableCodec


def codec(converters: tuple[Any, ...], keep: tuple[int, ...], width: int) -> RelationalTableCodec:
    columns = tuple(Column(f"c{i}", i, "x", ConnectSchema(STRING if i % 2 else INT32, True))
                    for i in range(len(converters)))
    schema = TableSchema(id=TableId("db", None, "t"), columns=columns, key_columns=())
    return RelationalTableCodec(schema, converters, keep, width)


def same(c: RelationalTableCodec, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    got = c.convert_rows(rows)
    want = [c.convert(r) for r in rows]
    assert [[(type(v), v) for v in r] for r in got] == [[(type(v), v) for v in r] for r in want]
    assert all(type(r) is tuple for r in got)
    return got


def test_pass_on_only_when_every_value_has_the_converters_type() -> None:
    c = codec((int, str, float), (0, 1, 2), 3)
    got = same(c, [(1, "a", 1.5), (True, None, 2.0), (None, "b", None)])
    assert type(got[1][0]) is int  # the bool went through int()
    got = same(c, [(Decimal("2"), 7, 3)])  # other types are converted, as convert does
    assert got == [(2, "7", 3.0)]
    assert same(c, [(1, "x", 0.5)]) == [(1, "x", 0.5)]


def test_kept_columns_reordered_and_left_out() -> None:
    c = codec((str, lambda v: v * 2), (2, 0), 3)
    assert same(c, [(1, "skip", "z"), (None, "skip", "y"), (3, None, None)]) == [
        ("z", 2), ("y", None), (None, 6)]


def test_a_chunk_with_an_unsent_value_goes_row_by_row() -> None:
    c = codec((lambda v: v + 1, str), (0, 1), 2)
    got = same(c, [(1, "a"), (2, ABSENT), (None, "c")])
    assert got[1] == (3, ABSENT)  # the UNSENT value passes through, the others convert


def test_an_empty_chunk() -> None:
    assert codec((int,), (0,), 1).convert_rows([]) == []
