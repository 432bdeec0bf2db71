"""The column-wise snapshot's compiled kernels (`headwater.connectors.postgres._copykernels`, C).

Each kernel column's values, rendered by `ColumnarTable.render` (scan, check, the converters for
what the kernels leave, assemble), must be exactly what the row-wise path writes for them: the
column's converter, then orjson.  The values are the forms PostgreSQL's COPY text has for each
type, at the edges the kernels decide on (18 and 19 digits, BC and 5-digit years, 24:00:00,
fraction widths, bytea paddings, escapes); tests/integration/postgres/test_columnar_snapshot.py
compares whole snapshots against a server.  Also: the kernels refuse indices and sizes outside
their buffers instead of writing there, the module is built (CI), a checkout without it reads
row-wise saying why once, and a column-wise chunk does not load numba (issue 27's 150 MB).
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Sequence
from itertools import cycle, islice
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

import headwater.connectors.postgres
from headwater.connectors.postgres import _copykernels, columnar_kinds
from headwater.connectors.postgres.catalog import ColumnInfo, TableInfo
from headwater.connectors.postgres.copy_text import unescape
from headwater.connectors.postgres.snapshot_columnar import (
    ColumnarTable,
    TableTemplate,
    _cut,
)
from headwater.connectors.postgres.tables import TableCodec, build_codec, incoming_from_catalog
from headwater.connectors.postgres.types import PgType, TypeModes
from headwater.converters.connect_json import json_default


def numeric(p: int, s: int) -> int:
    return ((p << 16) | s) + 4


DATES = ["1970-01-01", "1969-12-31", "2024-02-29", "2000-02-29", "1900-03-01", "0001-01-01",
         "9999-12-31", "0044-03-15 BC", "infinity", "-infinity", "21016-11-04"]
TIMES = ["00:00:00", "23:59:59.999999", "24:00:00", "12:34:56.5", "00:00:00.001",
         "12:00:00.000001", "23:59:59.999"]
STAMPS = ["1970-01-01 00:00:00", "1969-12-31 23:59:59.999999", "1969-12-31 23:59:59.9995",
          "0001-01-01 00:00:00", "1900-01-01 00:00:00.001", "2024-02-29 12:34:56.123456",
          "0044-03-15 12:00:00 BC", "infinity", "-infinity", "21016-11-04 06:51:30"]
ZONED = ["2016-11-04 13:51:30.1+00", "2016-11-04 13:51:30+00", "2020-01-01 00:00:00.5+00",
         "0001-01-01 00:00:00+00", "1969-12-31 23:59:59.999999+00", "2016-11-04 13:51:30+05:30",
         "0044-03-15 12:00:00+00 BC", "infinity", "21016-11-04 06:51:30+00"]
# name, oid, type name, typmod, COPY texts (\\N: null)
COLUMNS: list[tuple[str, int, str, int, list[str]]] = [
    ("id", 20, "int8", -1, [str(i) for i in range(12)]),
    ("i2", 21, "int2", -1, ["-32768", "32767", "0", "\\N"]),
    ("i4", 23, "int4", -1, ["-2147483648", "7", "\\N"]),
    ("i8", 20, "int8", -1, ["-9223372036854775808", "9223372036854775807", "-1"]),
    ("b", 16, "bool", -1, ["t", "f", "\\N"]),
    ("s", 25, "text", -1, ["plain", "", "NULL", "\\\\N", "b\\tc", "\\\\", "\\b\\f\\n\\r\\t\\v",
                           '"quoted" /slash/', "\x01\x1f\x7f", "é😀", "\\\\x00", "a\\\\"]),
    ("v", 1043, "varchar", 14, ["x", "\\N", "é"]),
    ("u", 2950, "uuid", -1, ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"]),
    ("j", 3802, "jsonb", -1, ['{"a": "\\\\u0001"}', "[]", "null"]),
    ("n2", 1700, "numeric", numeric(10, 2), ["0.00", "-0.01", "12345678.90", "-99999999.99",
                                             "0.50"]),
    ("n10", 1700, "numeric", numeric(20, 10), ["1234567890.0123456789", "-0.0000000001",
                                               "99999999.9999999999", "0.0000000000"]),
    ("n0", 1700, "numeric", numeric(38, 0), ["999999999999999999", "1000000000000000000",
                                             "-999999999999999999", "0", "-7"]),
    ("nv", 1700, "numeric", -1, ["1.5e-7", "0.000", "-123.456000", "0.00000010", "1", "-0.001",
                                 "123456789012345678", "1234567890123456789", "0.0000001",
                                 "100"]),
    ("d", 1082, "date", -1, DATES),
    ("t", 1083, "time", -1, TIMES),
    ("t0", 1083, "time", 0, ["00:00:00", "23:59:59", "24:00:00"]),
    ("t3", 1083, "time", 3, TIMES),
    ("ts", 1114, "timestamp", -1, STAMPS),
    ("ts3", 1114, "timestamp", 3, STAMPS),
    ("tz", 1184, "timestamptz", -1, ZONED),
    ("tz0", 1184, "timestamptz", 0, ZONED),
    ("tz3", 1184, "timestamptz", 3, ZONED),
    ("by", 17, "bytea", -1, ["\\\\x", "\\\\x00", "\\\\x0001", "\\\\x000102", "\\\\xdeadBEEF01",
                             "\\\\xff"]),
]
MODES = [
    TypeModes(),
    TypeModes(decimal_handling_mode="string", binary_handling_mode="hex"),
    TypeModes(time_precision_mode="connect", binary_handling_mode="base64-url-safe"),
    TypeModes(time_precision_mode="adaptive_time_microseconds", binary_handling_mode="base64"),
]
ROWS = 12


def make_codec(modes: TypeModes) -> TableCodec:
    columns = tuple(
        ColumnInfo(name, i + 1, oid, tname, tname, typmod, name == "id", oid, tname,
                   PgType(oid, tname, typmod))
        for i, (name, oid, tname, typmod, _) in enumerate(COLUMNS))
    info = TableInfo(1, "public", "t", columns, ("id",), "d", ())
    return build_codec("db", info, incoming_from_catalog(info), modes, lambda *_: True)


def template(codec: TableCodec) -> TableTemplate:
    """Values spliced into `{"c0":...,"c1":...}`, the key into `[...]` (id and s)."""
    tokens = [f"<{i}>".encode() for i in range(len(codec.schema.columns))]
    value = b"{" + b",".join(b'"c%d":%s' % (i, t) for i, t in enumerate(tokens)) + b"}"
    key = b"[" + tokens[0] + b"," + tokens[5] + b"]"
    cut_value = _cut(value, tokens, range(len(tokens)))
    cut_key = _cut(key, tokens, [0, 5])
    assert cut_value is not None and cut_key is not None
    return TableTemplate("t", 1, (), cut_value, cut_key)


def copy_rows() -> list[list[str]]:
    return [list(row) for row in zip(*(islice(cycle(values), ROWS)
                                         for *_, values in COLUMNS), strict=True)]


def expected(codec: TableCodec, row: Sequence[str]) -> tuple[bytes, bytes]:
    """The row-wise path's JSON of each value: its converter, then orjson."""
    def json(j: int) -> bytes:
        if row[j] == "\\N":
            return b"null"
        value = codec.converters[j](unescape(row[j]))
        return orjson.dumps(value, default=json_default)
    value = b"{" + b",".join(b'"c%d":%s' % (j, json(j)) for j in range(len(row))) + b"}"
    return b"[" + json(0) + b"," + json(5) + b"]", value


@pytest.mark.parametrize("modes", MODES, ids=lambda m: f"{m.decimal_handling_mode}-"
                         f"{m.time_precision_mode}-{m.binary_handling_mode}")
def test_the_kernels_write_what_the_converters_write(modes: TypeModes) -> None:
    codec = make_codec(modes)
    rows = copy_rows()
    data = "".join("\t".join(row) + "\n" for row in rows).encode()
    table = ColumnarTable(codec, "public.t")
    records = table.render(data, template(codec))
    assert [(r.key, r.value) for r in records] == [expected(codec, row) for row in rows]
    # the kernels rendered most of it: the comparison is of their output, not the converters'
    kinds = [c.kind for c in codec.columnar]
    assert columnar_kinds.FALLBACK not in kinds
    assert 0 < table.slow_values < ROWS * len(COLUMNS) // 4


def kernel_args(data: bytes, kinds: list[int], rows: int, width: int) -> dict[str, Any]:
    """A scanned chunk of `width` fields, its first len(kinds) columns rendered by `kinds`."""
    buf = np.frombuffer(data, dtype=np.uint8)
    starts = np.empty((rows, width), dtype=np.int64)
    ends = np.empty((rows, width), dtype=np.int64)
    assert _copykernels.scan(buf, width, starts, ends) == rows
    n = len(kinds)
    return {"kinds": np.array(kinds, dtype=np.int64), "params": np.zeros(n, dtype=np.int64),
            "fields": np.arange(n, dtype=np.int64), "buf": buf, "starts": starts, "ends": ends,
            "rows": rows, "slow": np.zeros((rows, n), dtype=np.bool_)}


def assemble(a: dict[str, Any], values_cap: int, key_cols: Sequence[int] = (),
             over: bytes = b"", over_off: Sequence[int] = (0,)) -> bytes:
    """The values of the chunk `a`, each row `{v0,v1,...}` (keys `[k0,k1,...]`)."""
    n, rows = len(a["kinds"]), a["rows"]
    pieces = b"{" + b"," * (n - 1) + b"}"
    values = np.empty(values_cap, dtype=np.uint8)
    keys = np.empty(1024, dtype=np.uint8)
    value_off = np.empty(rows + 1, dtype=np.int64)
    key_pieces = np.frombuffer(b"[" + b"," * max(len(key_cols) - 1, 0) + b"]", dtype=np.uint8)
    key_piece_off = (np.array([0, *range(1, len(key_cols) + 1), len(key_pieces)],
                              dtype=np.int64) if key_cols else np.zeros(2, dtype=np.int64))
    _copykernels.assemble(
        a["kinds"], a["params"], a["fields"], a["buf"], a["starts"], a["ends"], rows, a["slow"],
        np.frombuffer(over, dtype=np.uint8), np.array(over_off, dtype=np.int64),
        np.frombuffer(pieces, dtype=np.uint8),
        np.array([0, *range(1, n), len(pieces) - 1, len(pieces)], dtype=np.int64),
        np.array(key_cols, dtype=np.int64), key_pieces, key_piece_off,
        values, value_off, keys, np.empty(rows + 1, dtype=np.int64))
    return bytes(values[:value_off[-1]])


def test_assemble_splices_values_keys_and_converted_values() -> None:
    a = kernel_args(b"7\tx\\ty\n-3\t\\N\n", [columnar_kinds.INT, columnar_kinds.STRING], 2, 2)
    _copykernels.check(a["kinds"], a["params"], a["fields"], a["buf"], a["starts"], a["ends"],
                       2, a["slow"])
    assert a["slow"].tolist() == [[False, False], [False, False]]
    assert assemble(a, 256, key_cols=[1, 0]) == b'{7,"x\\ty"}{-3,null}'
    a["slow"][0, 0] = True  # a value the converter rendered: copied from `over`
    assert assemble(a, 256, over=b'"seven"', over_off=[0, 7]) == b'{"seven","x\\ty"}{-3,null}'


def test_scan_reports_a_line_of_another_field_count() -> None:
    buf = np.frombuffer(b"1\t2\n3\n", dtype=np.uint8)
    starts = np.empty((2, 2), dtype=np.int64)
    ends = np.empty((2, 2), dtype=np.int64)
    assert _copykernels.scan(buf, 2, starts, ends) == -2
    assert _copykernels.scan(np.frombuffer(b"1\t2\t3\n", dtype=np.uint8), 2, starts, ends) == -1
    # more lines than the arrays have rows: refused, not written past them
    assert _copykernels.scan(np.frombuffer(b"1\t2\n" * 3, dtype=np.uint8), 2, starts,
                             ends) == -3


def test_the_kernels_refuse_what_is_outside_their_buffers() -> None:
    """A sizing or indexing mistake of the caller is a ValueError, not a write out of bounds."""
    a = kernel_args(b"\x01\x02\x03\n", [columnar_kinds.STRING], 1, 1)
    # room for the pieces and a value's bound (GROWTH per byte plus SLACK), the sizing rule
    bound = 2 + _copykernels.GROWTH * 3 + _copykernels.SLACK
    assert assemble(a, bound) == b'{"\\u0001\\u0002\\u0003"}'
    with pytest.raises(ValueError, match="values' buffer is too small"):
        assemble(a, bound - 2)
    with pytest.raises(ValueError, match="more converted values than slow ones"):
        assemble(a, 256, over=b"1", over_off=[0, 1])
    a["slow"][0, 0] = True
    with pytest.raises(ValueError, match="fewer converted values than slow ones"):
        assemble(a, 256)
    with pytest.raises(ValueError, match="over_off are not offsets"):
        assemble(a, 256, over=b"1", over_off=[0, 2])
    a["slow"][0, 0] = False
    a["ends"][0, 0] = len(a["buf"]) + 1
    with pytest.raises(ValueError, match="field boundaries outside the COPY text"):
        assemble(a, 256)
    a["ends"][0, 0] = 3
    a["fields"][0] = 1
    with pytest.raises(ValueError, match="field index beyond"):
        assemble(a, 256)
    with pytest.raises(ValueError, match="slow"):
        _copykernels.check(a["kinds"], a["params"], a["fields"], a["buf"], a["starts"],
                           a["ends"], 1, np.zeros((2, 1), dtype=np.bool_))
    with pytest.raises(TypeError, match="int64 items"):
        _copykernels.scan(a["buf"], 1, a["starts"].astype(np.int32), a["ends"])
    with pytest.raises(TypeError, match="takes 19 arguments"):
        _copykernels.assemble(a["kinds"])  # type: ignore[call-arg]


def test_the_kinds_are_numbered_as_columnar_kinds_numbers_them() -> None:
    numbered = {name: getattr(columnar_kinds, name) for name in _copykernels.KINDS}
    assert numbered == _copykernels.KINDS
    assert len(_copykernels.KINDS) == 17


def test_the_compiled_kernels_are_built() -> None:
    """CI's clean clone builds them (`pip install -e .` in scripts/setup.sh): a snapshot that
    read row-wise there would only be slower, so this says it did not."""
    columnar_kinds.kernels_installed.cache_clear()
    assert columnar_kinds.kernels_installed()


def test_without_the_compiled_kernels_one_warning_says_why_and_how_to_build_them(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    columnar_kinds.kernels_installed.cache_clear()
    try:
        monkeypatch.delattr(headwater.connectors.postgres, "_copykernels")
        monkeypatch.setitem(sys.modules, "headwater.connectors.postgres._copykernels", None)
        with caplog.at_level(logging.INFO, "headwater.connectors.postgres.snapshot"):
            assert not columnar_kinds.kernels_installed()
            assert not columnar_kinds.kernels_installed()
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1
        assert "headwater.connectors.postgres._copykernels are not built" in warnings[0]
        assert "pip install -e ." in warnings[0]
        assert "python setup.py build_ext --inplace" in warnings[0]
    finally:
        columnar_kinds.kernels_installed.cache_clear()


_NO_NUMBA = """
import sys
from tests.unit.postgres.test_copy_kernels import MODES, copy_rows, make_codec, template
from headwater.connectors.postgres import snapshot, snapshot_workers  # noqa: F401
from headwater.connectors.postgres.snapshot_columnar import ColumnarTable
codec = make_codec(MODES[0])
data = "".join("\\t".join(row) + "\\n" for row in copy_rows()).encode()
assert len(ColumnarTable(codec, "public.t").render(data, template(codec))) == len(copy_rows())
print(sorted(m for m in sys.modules if m.split(".")[0] in ("numba", "llvmlite")))
"""


def test_a_column_wise_chunk_does_not_load_numba() -> None:
    """numba and llvmlite cost a capture process ~130 MB (issue 27: 150 MB in all)."""
    out = subprocess.run([sys.executable, "-c", _NO_NUMBA], check=True, capture_output=True,
                         text=True, timeout=120, cwd=Path(__file__).parents[3])
    assert out.stdout.strip() == "[]"
