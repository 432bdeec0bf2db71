"""Vectorized building blocks of sequence strings, for the connectors' column-wise orders.

A sequence (see `headwater.connectors.registry.EventOrder`) is a fixed-width hex string whose
lexical order is the change order; building it per event in Python costs more than the rest of
the column-wise decode, so the connectors that supply a column-wise builder assemble it from
these numpy pieces.  Anything outside a builder's shape raises `NotColumnar`, and the batch
takes the event-by-event path instead.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from headwater.connectors.registry import SNAPSHOT_MARKERS


class NotColumnar(Exception):
    """The batch is outside the fast path's shape: use the event-by-event path."""


# The two hex digits of every byte value, as the two bytes of a little-endian uint16.
_HEX2 = np.array([int.from_bytes(b"%02x" % i, "little") for i in range(256)], dtype="<u2")
_SNAPSHOT = pa.array(sorted(m for m in SNAPSHOT_MARKERS if isinstance(m, str)))


def hex_columns(values: np.ndarray, width: int) -> np.ndarray:
    """(n, width) ASCII matrix of zero-padded lowercase hex, as f"{v:0{width}x}" writes
    (width 8 or 16; the values fit in width / 2 bytes)."""
    octets = values.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - width // 2:]
    return np.ascontiguousarray(_HEX2[octets]).view(np.uint8).reshape(-1, width)


def ints(col: pa.Array | pa.ChunkedArray, limit: int) -> np.ndarray:
    """A non-negative integer column (null -> 0) as uint64, refusing values of more digits."""
    arr = pc.fill_null(col, 0).to_numpy()
    if len(arr) and (arr.min() < 0 or arr.max() >= limit):
        raise NotColumnar("position out of the sequence's range")
    return np.asarray(arr, dtype=np.uint64)


def text_columns(col: pa.Array, width: int) -> np.ndarray:
    """(n, width) ASCII matrix of a string column without nulls whose values are all `width`
    ASCII characters (copied as they are: the row-wise keys copy the text), refusing any
    other."""
    if col.null_count:
        raise NotColumnar("null in a text position")
    if not len(col):
        return np.empty((0, width), np.uint8)
    lengths = pc.binary_length(col)
    if (pc.min(lengths).as_py() != width or pc.max(lengths).as_py() != width
            or not pc.all(pc.string_is_ascii(col)).as_py()):
        raise NotColumnar(f"text position not {width} ASCII characters")
    wide = pa.types.is_large_string(col.type)
    ends = np.frombuffer(col.buffers()[1], np.int64 if wide else np.int32)
    first, last = int(ends[col.offset]), int(ends[col.offset + len(col)])
    data = np.frombuffer(col.buffers()[2], np.uint8)[first:last]
    return data.reshape(len(col), width)


def digit(values: np.ndarray) -> np.ndarray:
    """(n, 1) ASCII matrix of single decimal digits (values 0..9)."""
    return (48 + values).astype(np.uint8)[:, None]


def stream_flags(source: pa.StructArray) -> np.ndarray:
    """1 for stream events, 0 for snapshot reads (`source.snapshot` true/last/incremental)."""
    is_stream = pc.invert(pc.fill_null(pc.is_in(source.field("snapshot"), _SNAPSHOT), False))
    return np.asarray(is_stream.to_numpy(zero_copy_only=False), dtype=np.uint64)


def strings(parts: list[np.ndarray]) -> pa.Array:
    """The rows of the horizontally stacked ASCII matrices, as one string array."""
    matrix = np.ascontiguousarray(np.hstack(parts))
    n, width = matrix.shape
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets),
                                                 pa.py_buffer(matrix)])
