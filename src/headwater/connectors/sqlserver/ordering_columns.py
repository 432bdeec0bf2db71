"""`sqlserver_sequence_key` for a whole batch, built with numpy (the column-wise Delta path).

The LSNs are copied as text with their colons removed, as the row-wise key does, so only
batches whose LSNs all have Debezium's 20 digits (null: 20 zeros) take this path; any other
width (which would not sort as a fixed-width key either) is `NotColumnar`."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from headwater.connectors import sequence_columns as columns
from headwater.connectors.sqlserver.ordering import LSN_DIGITS


def lsn_columns(col: pa.Array) -> np.ndarray:
    """(n, 20) matrix of `_lsn` (colons removed; null: zeros)."""
    digits = pc.fill_null(pc.replace_substring(col, ":", ""), "0" * LSN_DIGITS)
    return columns.text_columns(digits, LSN_DIGITS)


def sqlserver_sequences(source: pa.StructArray, _total_order: pa.Array,
                        offsets: np.ndarray) -> pa.Array:
    serial = columns.ints(source.field("event_serial_no"), 1 << 32)
    return columns.strings([
        lsn_columns(source.field("commit_lsn")), columns.digit(columns.stream_flags(source)),
        lsn_columns(source.field("change_lsn")), columns.hex_columns(serial, 8),
        columns.hex_columns(offsets.astype(np.uint64), 16)])
