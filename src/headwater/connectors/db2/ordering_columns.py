"""`db2_sequence_key` for a whole batch, built with numpy (the column-wise Delta path).

The LSNs are copied as text with their colons removed and left-padded with zeros to 32
digits, as the row-wise key does (10- and 16-byte values alike); a longer one (which would
not sort as a fixed-width key either) is `NotColumnar`."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from headwater.connectors import sequence_columns as columns
from headwater.connectors.db2.ordering import LSN_DIGITS


def lsn_columns(col: pa.Array) -> np.ndarray:
    """(n, 32) matrix of `_lsn` (colons removed, zero-padded on the left; null: zeros)."""
    digits = pc.utf8_lpad(pc.replace_substring(col, ":", ""), width=LSN_DIGITS, padding="0")
    return columns.text_columns(pc.fill_null(digits, "0" * LSN_DIGITS), LSN_DIGITS)


def db2_sequences(source: pa.StructArray, _total_order: pa.Array,
                  offsets: np.ndarray) -> pa.Array:
    return columns.strings([
        lsn_columns(source.field("commit_lsn")), columns.digit(columns.stream_flags(source)),
        lsn_columns(source.field("change_lsn")),
        columns.hex_columns(offsets.astype(np.uint64), 16)])
