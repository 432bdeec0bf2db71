"""`mysql_sequence_key` for a whole batch, built with numpy (the column-wise Delta path)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from headwater.connectors import sequence_columns as columns


def mysql_sequences(source: pa.StructArray, _total_order: pa.Array,
                    offsets: np.ndarray) -> pa.Array:
    stream = columns.stream_flags(source)
    found = pc.extract_regex(pc.fill_null(source.field("file"), ""), r"(?P<d>[0-9]*)$")
    number = pc.struct_field(found, [0])
    number = pc.if_else(pc.equal(number, ""), "0", number)
    if pc.any(pc.greater(pc.utf8_length(number), 18)).as_py():
        raise columns.NotColumnar("binlog file number")
    files = columns.ints(number.cast(pa.int64()), 1 << 32)
    rows = columns.ints(source.field("row"), 1 << 32) * stream
    positions = columns.ints(source.field("pos"), 1 << 63)
    return columns.strings([
        columns.hex_columns(files, 8), columns.hex_columns(positions, 16), columns.digit(stream),
        columns.hex_columns(rows, 8), columns.hex_columns(offsets.astype(np.uint64), 16)])
