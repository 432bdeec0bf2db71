# One Kafka partition's range read into Arrow column buffers, compiled from _rangeread.c
# (see headwater.kafka.columns).

from typing_extensions import Buffer

# (validity bitmap, int64 ends from 0, bytes, null count)
Column = tuple[Buffer, Buffer, Buffer, int]

def load(path: str, /) -> str: ...

class Reader:
    position: int
    pending: int
    def __init__(self, config: list[tuple[str, str]], topic: str, partition: int,
                 start: int, stop: int) -> None: ...
    def read(self, timeout_ms: int, /) -> tuple[int, list[tuple[int, int, str]], int]: ...
    def take(self) -> tuple[int, Buffer, Column, Column]: ...
    def close(self) -> None: ...
