"""`postgres_sequence_key` for a whole batch, built with numpy (the column-wise Delta path)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from headwater.connectors.sequence_columns import (
    NotColumnar,
    digit,
    hex_columns,
    ints,
    stream_flags,
    strings,
)

# The first element of `source.sequence` (a JSON array of strings, or null).
_SEQ0 = r'^\[(?:"(?P<q>[0-9]+)"|(?P<n>[0-9]+)|null)\s*[,\]]'


def postgres_sequences(source: pa.StructArray, total_order: pa.Array,
                       offsets: np.ndarray) -> pa.Array:
    seq = source.field("sequence")
    seq = pc.if_else(pc.equal(seq, ""), pa.scalar(None, pa.string()), seq)
    matched = pc.extract_regex(pc.fill_null(seq, "[null]"), _SEQ0)
    if matched.null_count:  # extract_regex yields null where the pattern does not match
        raise NotColumnar("source.sequence layout")
    first = pc.coalesce(pc.struct_field(matched, [0]), pc.struct_field(matched, [1]))
    first = pc.if_else(pc.equal(first, ""), pa.scalar(None, pa.string()), first)
    if pc.any(pc.greater(pc.utf8_length(first), 18)).as_py():
        raise NotColumnar("commit position")
    lsn = source.field("lsn")
    primary = pc.coalesce(first.cast(pa.int64()), pc.fill_null(lsn, 0))
    return strings([hex_columns(ints(primary, 1 << 63), 16), digit(stream_flags(source)),
                    hex_columns(ints(lsn, 1 << 63), 16),
                    hex_columns(ints(total_order, 1 << 32), 8),
                    hex_columns(offsets.astype(np.uint64), 16)])
