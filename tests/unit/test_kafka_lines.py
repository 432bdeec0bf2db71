"""`kafka_batch.arrow_lines`: Kafka records as Arrow binary arrays cut into the column-wise
decoder's lines by their buffers, checked against the record-by-record reference."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest

from headwater.pipeline.columnar import NotColumnar
from headwater.pipeline.kafka_batch import arrow_lines, binary_array, column_lines, lines

KEY = b'{"schema":{"type":"struct","fields":[{"field":"id","type":"int32"}]},"payload":'
VALUE = b'{"schema":{"type":"struct","name":"v"},"payload":'


def record(i: int) -> tuple[int, bytes | None, bytes | None]:
    value = None if i % 10 == 3 else VALUE + b'{"after":{"id":%d},\n"op":"c"}}' % i
    return (i << 16 | 1, KEY + b'{"id":%d}}' % i, value)


def reference(docs: list[bytes], head: bytes) -> bytes:
    return b"".join(d[len(head):d.rindex(b"}")].replace(b"\n", b" ") + b"\n" for d in docs)


@pytest.mark.parametrize("kind", [pa.binary(), pa.large_binary()])
def test_lines_equal_the_record_by_record_cut(kind: pa.DataType) -> None:
    records = [record(i) for i in range(40)]
    offsets = np.array([o for o, _k, _v in records], np.int64)
    keys = pa.array([k for _o, k, _v in records], kind)
    values = pa.array([v for _o, _k, v in records], kind)
    # a slice (an array whose data starts inside its buffers, as Arrow batches' columns do)
    got = arrow_lines(offsets[5:], keys.slice(5), values.slice(5))
    live = [r for r in records[5:] if r[2] is not None]
    assert got.offsets.tolist() == [o for o, _k, _v in live]
    assert got.key_head == KEY and got.value_head == b'},"value":' + VALUE
    assert got.key_lines.tobytes() == reference([k for _o, k, _v in live if k], KEY)
    assert got.value_lines.tobytes() == reference([v for _o, _k, v in live if v], VALUE)


def test_another_schema_or_a_null_key_is_not_columnar() -> None:
    records = [record(i) for i in range(5)]
    other = VALUE.replace(b'"v"', b'"w"')
    changed = [*records, (99 << 16, KEY + b'{"id":99}}', other + b'{"op":"c"}}')]
    with pytest.raises(NotColumnar, match="another schema"):
        lines(changed)
    with pytest.raises(NotColumnar, match="null key"):
        lines([*records, (99 << 16, None, VALUE + b'{"op":"c"}}')])
    with pytest.raises(NotColumnar, match="embedded schema"):
        lines([(1, b'{"id":1}', b'{"op":"c"}')])
    with pytest.raises(NotColumnar, match="layout"):
        lines([*records, (99 << 16, KEY + b'{"id":99}}', VALUE + b'{"op":"c"} ')])


def test_only_tombstones_give_no_lines() -> None:
    got = lines([(1, KEY + b'{"id":1}}', None)])
    assert got.count == 0


def test_chunked_columns_are_cut_chunk_by_chunk() -> None:
    """Spark's Kafka source hands a part over as several Arrow batches: the chunks are cut in
    place (tombstones and a newline in some chunks only) into the same lines as one array."""
    records = [record(i) for i in range(60)]
    offsets = np.array([o for o, _k, _v in records], np.int64)
    keys = pa.array([k for _o, k, _v in records], pa.binary())
    values = pa.array([v.replace(b"\n", b"") if v and i >= 20 else v
                       for i, (_o, _k, v) in enumerate(records)], pa.binary())
    cuts = [0, 7, 20, 20, 41, 60]  # (an empty chunk, chunks starting inside their buffers)
    chunked = [pa.chunked_array([a.slice(x, y - x) for x, y in itertools.pairwise(cuts)])
               for a in (keys, values)]
    got = arrow_lines(offsets, *chunked)
    want = arrow_lines(offsets, keys, values)
    assert got.count == want.count == sum(1 for r in records if r[2] is not None)
    assert got.offsets.tolist() == want.offsets.tolist()
    assert got.key_lines.tobytes() == want.key_lines.tobytes()
    assert got.value_lines.tobytes() == want.value_lines.tobytes()
    live = [v for v in values.to_pylist() if v is not None]
    assert got.value_lines.tobytes() == reference(live, VALUE)
    # a null key among the live records is still refused, a null key of a tombstone is not
    null_keys = pa.chunked_array([keys.slice(0, 3), pa.array([None], pa.binary()),
                                  keys.slice(4)])
    assert arrow_lines(offsets, null_keys, values).count == got.count  # record 3: tombstone
    null_keys = pa.chunked_array([keys.slice(0, 4), pa.array([None], pa.binary()),
                                  keys.slice(5)])
    with pytest.raises(NotColumnar, match="null key"):
        arrow_lines(offsets, null_keys, values)


@pytest.mark.parametrize("items", [[], [None], [b""], [b"a", None, b"", b"xyz", None],
                                   [bytes([i % 256]) * i for i in range(300)]])
def test_binary_array_equals_pyarrows_conversion(items: list[bytes | None]) -> None:
    got = binary_array(items)
    got.validate(full=True)
    assert got.equals(pa.array(items, pa.large_binary()))


def test_column_lines_equal_the_record_by_record_cut() -> None:
    records = [record(i) for i in range(40)]
    got = column_lines([o for o, _k, _v in records], [k for _o, k, _v in records],
                       [v for _o, _k, v in records])
    live = [r for r in records if r[2] is not None]
    assert got.offsets.tolist() == [o for o, _k, _v in live]
    assert got.value_lines.tobytes() == reference([v for _o, _k, v in live if v], VALUE)
    assert got.key_lines.tobytes() == reference([k for _o, k, _v in live if k], KEY)


def test_lines_cut_chunk_by_chunk_equal_the_whole_batchs() -> None:
    """The driver's reader cuts each fetched chunk as it arrives (`_Fetched`): partition after
    partition, the same lines as the whole batch cut at once; another schema in a later chunk
    is refused as in the whole."""
    from headwater.pipeline.kafka_batch import _Fetched

    records = {p: [(i << 16 | p, *record(i)[1:]) for i in range(p * 7, p * 7 + 25)]
               for p in (2, 0, 1)}
    fetched = _Fetched(True)
    for at in range(0, 25, 10):  # partitions interleaved, as the fetch gives them
        for p, recs in records.items():
            part = recs[at:at + 10]
            fetched.add(p, ([o for o, _k, _v in part], [k for _o, k, _v in part],
                            [v for _o, _k, v in part]))
    whole = [r for p in sorted(records) for r in records[p]]
    assert list(zip(*fetched.columns(), strict=True)) == whole
    got, want = fetched.lines(), lines(whole)
    assert got.offsets.tolist() == want.offsets.tolist()
    assert (got.key_head, got.value_head) == (want.key_head, want.value_head)
    assert got.key_lines.tobytes() == want.key_lines.tobytes()
    assert got.value_lines.tobytes() == want.value_lines.tobytes()
    other = VALUE.replace(b'"v"', b'"w"')
    fetched.add(0, ([99 << 16], [KEY + b'{"id":99}}'], [other + b'{"op":"c"}}']))
    with pytest.raises(NotColumnar, match="another schema"):
        fetched.lines()
    assert len(fetched.columns()[0]) == len(whole) + 1
