# The column-wise snapshot's kernels, compiled from _copykernels.c (see snapshot_columnar.py).
from typing import Any

GROWTH: int
SLACK: int
KINDS: dict[str, int]

def scan(buf: Any, nfields: int, starts: Any, ends: Any, /) -> int: ...
def check(kinds: Any, params: Any, fields: Any, buf: Any, starts: Any, ends: Any, rows: int,
          slow: Any, /) -> None: ...
def assemble(kinds: Any, params: Any, fields: Any, buf: Any, starts: Any, ends: Any, rows: int,
             slow: Any, over: Any, over_off: Any, pieces: Any, piece_off: Any, key_cols: Any,
             key_pieces: Any, key_piece_off: Any, values: Any, value_off: Any, keys: Any,
             key_off: Any, /) -> None: ...
