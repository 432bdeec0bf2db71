"""The read path's parts: FastRawDocument (rawdoc.py) and ChangeStreamReader (prefetch.py)."""

from __future__ import annotations

import threading
import time
from typing import Any

import bson
import pytest
from bson.datetime_ms import DatetimeMS
from bson.raw_bson import RawBSONDocument

from headwater.connectors.mongodb.extended_json import document_json, document_json_raw
from headwater.connectors.mongodb.prefetch import ChangeStreamReader, Idle
from headwater.connectors.mongodb.rawdoc import FAST_RAW_OPTIONS, FastRawDocument, fields_of
from headwater.testing.timeouts import scaled


def test_fast_raw_document_behaves_as_raw_bson_document() -> None:
    raw = bson.encode({"_id": 1, "a": {"b": [1, {"c": 2}]}, "w": DatetimeMS(5)})
    fast = bson.decode(raw, FAST_RAW_OPTIONS)
    slow = RawBSONDocument(raw)
    assert type(fast) is FastRawDocument and isinstance(fast, RawBSONDocument)
    assert fast.raw == raw and fast.get("missing") is None and fast.get("_id") == 1
    assert type(fast["a"]) is FastRawDocument and fast["a"].raw == slow["a"].raw
    assert fast["w"] == DatetimeMS(5) and len(fast) == 3 and list(fast) == ["_id", "a", "w"]
    assert dict(fields_of(fast)) == dict(fast) and fields_of(slow) is slow
    assert document_json(fast) == document_json_raw(raw) == document_json(slow)
    with pytest.raises(KeyError):
        fast["missing"]


class _Stream:
    """A change stream stand-in: events, then None (an empty poll), then an error."""

    def __init__(self, items: list[Any]) -> None:
        self.items = list(items)
        self.resume_token: Any = None
        self.calls = 0

    def try_next(self) -> Any:
        self.calls += 1
        if not self.items:
            time.sleep(0.01)
            return None
        item = self.items.pop(0)
        if isinstance(item, BaseException):
            raise item
        if item is None:
            self.resume_token = {"_data": f"after-{self.calls}"}
            return None
        self.resume_token = {"_data": f"event-{item}"}
        return item


def _drain(reader: ChangeStreamReader, n: int) -> list[Any]:
    out: list[Any] = []
    deadline = time.monotonic() + scaled(5)
    while len(out) < n and time.monotonic() < deadline:
        item = reader.next(0.05)
        if item is not None:
            out.append(item)
    return out


def test_reader_keeps_order_and_gives_the_token_of_each_empty_poll() -> None:
    stream = _Stream([1, 2, None, 3])
    with ChangeStreamReader(stream) as reader:
        items = _drain(reader, 4)
    assert items[:2] == [1, 2] and items[2] == Idle({"_data": "after-3"}) and items[3] == 3


def test_reader_raises_the_stream_error_after_the_events_before_it() -> None:
    stream = _Stream([1, RuntimeError("lost")])
    with ChangeStreamReader(stream) as reader:
        assert _drain(reader, 1) == [1]
        with pytest.raises(RuntimeError, match="lost"):
            for _ in range(100):
                reader.next(0.05)


def test_reader_buffer_is_bounded() -> None:
    stream = _Stream(list(range(1000)))
    with ChangeStreamReader(stream, limit=10) as reader:
        time.sleep(0.2)
        assert stream.calls <= 11  # it waits for the consumer
        assert _drain(reader, 1000) == list(range(1000))


def test_reader_stops_on_close() -> None:
    stream = _Stream([])
    reader = ChangeStreamReader(stream).__enter__()
    reader.close()
    assert not any(t.name == "headwater-mongo-stream" and t.is_alive()
                   for t in threading.enumerate() if t is reader._thread)


def test_reader_with_a_buffer_of_one() -> None:
    stream = _Stream(list(range(50)))
    with ChangeStreamReader(stream, limit=1) as reader:
        assert _drain(reader, 50) == list(range(50))
