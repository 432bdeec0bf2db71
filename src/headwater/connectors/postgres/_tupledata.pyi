# pgoutput's TupleData reader, compiled from _tupledata.c (see pgoutput.py).
from typing import Any

def read_tuple(
    data: bytes, pos: int, ncols: int, toast: Any, /
) -> tuple[tuple[Any, ...], int] | None: ...
