"""`mysql_sequence_key` for a whole batch, built with numpy (the column-wise Delta path)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from headwater.pipeline.sequence_columns import (
    NotColumnar,
    digit,
    hex_columns,
    ints,
    stream_flags,
    strings,
)


def mysql_sequences(source: pa.StructArray, _total_order: pa.Array,
                    offsets: np.ndarray) -> pa.Array:
    stream = stream_flags(source)
    found = pc.extract_regex(pc.fill_null(source.field("file"), ""), r"(?P<d>[0-9]*)$")
    number = pc.struct_field(found, [0])
    number = pc.if_else(pc.equal(number, ""), "0", number)
    if pc.any(pc.greater(pc.utf8_length(number), 18)).as_py():
        raise NotColumnar("binlog file number")
    files = ints(number.cast(pa.int64()), 1 << 32)
    rows = ints(source.field("row"), 1 << 32) * stream
    return strings([hex_columns(files, 8), hex_columns(ints(source.field("pos"), 1 << 63), 16),
                    digit(stream), hex_columns(rows, 8),
                    hex_columns(offsets.astype(np.uint64), 16)])
