"""PackedRecords (the column-wise snapshot's batches) are the records they stand for: read as
a sequence, through a pickle (a worker's hand-over), merged with other batches, and appended
to the topic log, where one compiled call lays them out: the segment bytes are those of the
same records as a plain list, with and without headers, CR/LF bytes (the slow path), and
chained with ordinary records.  And the worker processes that hand such batches over start
without importing the parent's main module again."""

from __future__ import annotations

import pickle
import sys
from array import array
from multiprocessing.spawn import get_preparation_data
from pathlib import Path

import pytest

import headwater.topics.log as log_module
from headwater.engine.parallel import (
    merge_rendered,
    pack_rendered,
    unpack_rendered,
    without_main_module,
)
from headwater.model.topic import PackedRecords, RecordChain, TopicRecord
from headwater.topics.log import TopicLog


def packed(keys: list[bytes], values: list[bytes], ts: int = 1700000000123,
           headers: tuple[tuple[str, bytes | None], ...] = (),
           key_prefix: bytes = b'{"id":', value_prefix: bytes = b'{"schema":{},"payload":'
           ) -> PackedRecords:
    def offsets(docs: list[bytes]) -> bytes:
        out = array("q", [0])
        for d in docs:
            out.append(out[-1] + len(d))
        return out.tobytes()

    return PackedRecords(key_prefix, b"".join(keys), offsets(keys), value_prefix,
                         b"".join(values), offsets(values), ts, headers)


def sample(n: int, headers: tuple[tuple[str, bytes | None], ...] = ()) -> PackedRecords:
    return packed([b"%d}" % i for i in range(n)], [b'{"n":%d}}' % (i * 7) for i in range(n)],
                  headers=headers)


def segment_bytes(root: Path, batches: list[dict[str, object]]) -> bytes:
    with TopicLog(root) as log:
        for batch in batches:
            log.append(batch)  # type: ignore[arg-type]
    return b"".join(p.read_bytes() for p in sorted((root / "t").glob("*.jsonl")))


def test_packed_records_read_as_their_records() -> None:
    p = sample(3, headers=(("h", b"v"),))
    assert len(p) == 3
    assert p[1] == TopicRecord(b'{"id":1}', b'{"schema":{},"payload":{"n":7}}', 1700000000123,
                               (("h", b"v"),))
    assert p[-1] == p[2] and next(iter(p)) == p[0] and p[1:] == [p[1], p[2]]
    assert list(pickle.loads(pickle.dumps(p))) == list(p)


def test_merge_keeps_packed_records_packed_and_in_order() -> None:
    a, b = sample(2), sample(3)
    head = TopicRecord(b"k", b"v", 1)
    dst: dict[str, object] = {}
    merge_rendered(dst, {"t": [head]})  # type: ignore[arg-type]
    merge_rendered(dst, {"t": a})  # type: ignore[arg-type]
    merge_rendered(dst, {"t": [head]})  # type: ignore[arg-type]
    merge_rendered(dst, {"t": b})  # type: ignore[arg-type]
    chain = dst["t"]
    assert isinstance(chain, RecordChain) and len(chain) == 7
    assert [type(p) for p in chain.parts] == [list, PackedRecords, list, PackedRecords]
    assert list(chain) == [head, *a, head, *b] and chain[3] == head and chain[-1] == b[2]
    # A worker's hand-over: the packed records cross as they are.
    moved = unpack_rendered(pickle.loads(pickle.dumps(pack_rendered({"t": a}))))
    assert isinstance(moved["t"], PackedRecords) and list(moved["t"]) == list(a)


def test_the_log_writes_packed_records_as_the_records_themselves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[bool] = []
    pack_into = log_module._pack_into

    def spy(data: bytearray, first: int, records: PackedRecords) -> bool:
        compiled.append(pack_into(data, first, records))
        return compiled[-1]

    monkeypatch.setattr(log_module, "_pack_into", spy)
    cases = [
        sample(50),
        sample(20, headers=(("__debezium.context", b"x"), ("none", None))),
        packed([b"1}", b"2}"], [b'"a\nb"}', b'"c\rd"}']),  # CR/LF: the slow path's cleaning
        packed([b"1}", b"2}"], [b"1}", b"2}"], key_prefix=b""),  # no key prefix
    ]
    for i, case in enumerate(cases):
        head = [TopicRecord(b'{"id":0}', b'{"first":true}', 5)]
        as_packed = segment_bytes(tmp_path / f"p{i}", [{"t": head}, {"t": case}])
        as_list = segment_bytes(tmp_path / f"l{i}", [{"t": head}, {"t": list(case)}])
        assert as_packed == as_list and as_packed.count(b"\n") == len(case) + 1
        chained = RecordChain([head, case, head, case])
        as_chain = segment_bytes(tmp_path / f"c{i}", [{"t": chained}])
        assert as_chain == segment_bytes(tmp_path / f"cl{i}", [{"t": list(chained)}])
    # The compiled packer laid out the first two cases; the other two took the Python path.
    assert compiled == [True] * 3 + [True] * 3 + [False] * 3 + [False] * 3


def test_spawned_workers_do_not_import_the_main_module_again() -> None:
    main = sys.modules["__main__"]
    before = (getattr(main, "__spec__", None), getattr(main, "__file__", None))
    with without_main_module():
        data = get_preparation_data("worker")
    assert "init_main_from_name" not in data and "init_main_from_path" not in data
    assert (getattr(main, "__spec__", None), getattr(main, "__file__", None)) == before
