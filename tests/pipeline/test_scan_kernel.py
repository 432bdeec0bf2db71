"""The compiled segment scanner against a plain Python scanner of the same rules: random ranges
over segments with tombstones, torn last lines, several segments, stale positions, and every
shape it must refuse."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import orjson
import pytest

from headwater.model.topic import TopicRecord
from headwater.pipeline import columnar
from headwater.topics.checksum import without_checksum
from headwater.topics.log import TopicLog
from headwater.topics.segment import inprogress_name, list_segments

TOPIC = "s.public.t"
KEY_SCHEMA = {"type": "struct", "optional": False,
              "fields": [{"type": "int32", "optional": False, "field": "id"}]}
VALUE_SCHEMA = {"type": "struct", "optional": False, "name": "s.public.t.Envelope",
                "fields": [{"type": "string", "optional": True, "field": "v"}]}


def key(i: int) -> bytes:
    return orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": i}})


def value(i: int, text: str) -> bytes:
    return orjson.dumps({"schema": VALUE_SCHEMA, "payload": {"v": text, "i": i}})


def reference(root: Path, start: int, end: int) -> tuple[list[int], list[bytes], list[bytes]]:
    """Offsets, key payloads and value payloads of the data records in [start, end), by
    parsing every complete line."""
    offsets, keys, values = [], [], []
    for seg in list_segments(root / TOPIC):
        data = seg.path.read_bytes()
        for line in data.split(b"\n")[:-1]:  # the last piece is empty or a torn line
            rec = orjson.loads(line)
            if not start <= rec["offset"] < end or rec["value"] is None:
                continue
            offsets.append(rec["offset"])
            keys.append(orjson.dumps(rec["key"]["payload"]))
            values.append(orjson.dumps(rec["value"]["payload"]))
    return offsets, keys, values


def fast(root: Path, start: int, end: int,
         positions: columnar.Positions) -> tuple[list[int], list[bytes], list[bytes]]:
    lines = columnar.scan(root, TOPIC, start, end, positions)
    ks = lines.key_lines.tobytes().split(b"\n")[:-1]
    return lines.offsets.tolist(), ks, lines.values()


TEXTS = ["plain", "", 'quote " and \\ backslash', "}", '},"value":', "é\u2603\U0001f600",
         '"payload":', "\n in text"]


@pytest.mark.parametrize("seed", range(6))
def test_random_ranges_equal_the_reference(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    n = 400
    with TopicLog(tmp_path, segment_bytes=rng.choice([2_000, 20_000, 1 << 30])) as log:
        for i in range(0, n, 50):
            log.append({TOPIC: [
                TopicRecord(key(j), None if rng.random() < 0.2 else value(j, rng.choice(TEXTS)),
                            j) for j in range(i, i + 50)]})
    if seed >= 3:  # the first segments written before checksums (format 1), as upgraded
        segs = list_segments(tmp_path / TOPIC)
        for seg in segs[:max(1, len(segs) // 2)]:
            lines = seg.path.read_bytes().splitlines(keepends=True)
            seg.path.write_bytes(b"".join(without_checksum(line) for line in lines))
    if seed % 2:  # a torn last line, as a crash mid-write leaves it in an in-progress file
        seg = list_segments(tmp_path / TOPIC)[-1]
        data = seg.path.read_bytes()
        seg.path.unlink()  # (in a sealed segment a cut line is damage: test_damage_* below)
        (tmp_path / TOPIC / inprogress_name(seg.base)).write_bytes(
            data + data[:rng.randrange(1, 200)])
    positions = columnar.Positions()
    for _ in range(30):
        a = rng.randrange(n)
        b = rng.randrange(a, n + 5)
        want = reference(tmp_path, a, b)
        assert fast(tmp_path, a, b, positions) == want
        assert fast(tmp_path, a, b, columnar.Positions()) == want  # without positions
        if rng.random() < 0.3:  # positions of another range: must not be trusted blindly
            for k, (off, pos) in list(positions.at.items()):
                positions.at[k] = (off, max(0, pos - rng.randrange(1, 50)))


def test_positions_follow_the_scan(tmp_path: Path) -> None:
    with TopicLog(tmp_path, segment_bytes=1 << 30) as log:
        log.append({TOPIC: [TopicRecord(key(j), value(j, "x"), j) for j in range(100)]})
    positions = columnar.Positions()
    columnar.scan(tmp_path, TOPIC, 0, 40, positions)
    ((offset, pos),) = positions.at.values()
    data = next((tmp_path / TOPIC).iterdir()).read_bytes()
    assert offset == 40 and data[pos:].startswith(b'{"offset":40,')


def bad_lines() -> dict[str, bytes]:
    head = b'{"offset":0,"timestamp":0,"key":'
    good = head + key(0) + b',"value":' + value(0, "x") + b"}\n"
    return {
        "null key": head + b'null,"value":' + value(0, "x") + b"}\n",
        "value without a schema": head + key(0) + b',"value":{"payload":{"v":"x"}}}\n',
        "not a record": b'{"offset":0,"other":1}\n',
        "another key schema": head + orjson.dumps(
            {"schema": {**KEY_SCHEMA, "optional": True}, "payload": {"id": 1}})
        + b',"value":' + value(1, "x") + b"}\n",
        "another value schema": head + key(0) + b',"value":'
        + value(0, "x").replace(b'"string"', b'"bytes"', 1) + b"}\n",
        "good": good,
    }


@pytest.mark.parametrize("name", [n for n in bad_lines() if n != "good"])
def test_other_layouts_are_refused(tmp_path: Path, name: str) -> None:
    lines = bad_lines()
    good = lines["good"]
    second = lines[name].replace(b'{"offset":0,', b'{"offset":1,', 1)
    topic_dir = tmp_path / TOPIC
    topic_dir.mkdir()
    (topic_dir / f"{0:020d}.jsonl").write_bytes(good + second)
    assert columnar.scan(tmp_path, TOPIC, 0, 1, columnar.Positions()).offsets.tolist() == [0]
    with pytest.raises(columnar.NotColumnar):
        columnar.scan(tmp_path, TOPIC, 0, 2, columnar.Positions())


@pytest.mark.parametrize("headers", [
    # header bytes as JSON strings (SimpleHeaderConverter text, or an envelope's text)
    b',"headers":{"__debezium.context.taskId":"{\\"schema\\":1}","h":"},x"}}\n',
    # an older log's JsonConverter envelopes spliced in raw
    b',"headers":{"__debezium.context.taskId":{"schema":{"type":"string","optional":false},'
    b'"payload":"0"},"__debezium.newkey":{"schema":{"type":"struct"},"payload":{"id":2}}}}\n',
])
def test_headers_after_the_value_are_left_out_of_its_payload(tmp_path: Path,
                                                             headers: bytes) -> None:
    """Debezium 3.x puts context headers on every event: the value ends where they start."""
    head = b'{"offset":%d,"timestamp":0,"key":'
    topic_dir = tmp_path / TOPIC
    topic_dir.mkdir()
    tombstone = head % 4 + key(4) + b',"value":null' + headers  # skipped, as without headers
    (topic_dir / f"{0:020d}.jsonl").write_bytes(b"".join(
        head % i + key(i) + b',"value":' + value(i, "x") + (headers if i % 2 else b"}\n")
        for i in range(4)) + tombstone + head % 5 + key(5) + b',"value":' + value(5, "x")
        + headers)
    found = columnar.scan(tmp_path, TOPIC, 0, 6, columnar.Positions())
    assert found.offsets.tolist() == [0, 1, 2, 3, 5]
    payloads = [orjson.loads(p) for p in found.values()]
    assert payloads == [orjson.loads(value(i, "x"))["payload"] for i in (0, 1, 2, 3, 5)]


def test_same_length_schema_is_compared_byte_for_byte(tmp_path: Path) -> None:
    a = value(0, "x")
    b = a.replace(b'"string"', b'"strinG"', 1)
    assert len(a) == len(b) and a != b
    head = b'{"offset":%d,"timestamp":0,"key":'
    topic_dir = tmp_path / TOPIC
    topic_dir.mkdir()
    (topic_dir / f"{0:020d}.jsonl").write_bytes(
        head % 0 + key(0) + b',"value":' + a + b"}\n" + head % 1 + key(1) + b',"value":' + b
        + b"}\n")
    with pytest.raises(columnar.NotColumnar):
        columnar.scan(tmp_path, TOPIC, 0, 2, columnar.Positions())


def test_gather_joins_ranges_with_newlines() -> None:
    from headwater.pipeline import scan_kernel

    data = np.frombuffer(b"abcdefghij", np.uint8)
    out = np.zeros(8, np.uint8)
    written = scan_kernel.gather_into(data, np.array([0, 5, 9]), np.array([2, 5, 10]), out)
    assert out[:written].tobytes() == b"ab\n\nj\n"


def test_byte_primitives_at_the_edges() -> None:
    """The libc-backed primitives never read past their bounds or the data."""
    from headwater.pipeline import scan_kernel as kernel

    data = np.frombuffer(b"ab}c\n", np.uint8)

    def pat(b: bytes) -> np.ndarray:
        return np.frombuffer(b, np.uint8)

    assert kernel._newline(data, 0, 5) == 4
    assert kernel._newline(data, 4, 5) == 4
    assert kernel._newline(data, 0, 4) == -1
    assert kernel._newline(data, 5, 5) == -1
    assert kernel._same(data, 3, pat(b"c\n"))
    assert not kernel._same(data, 3, pat(b"c\n\n"))  # would run past the end
    assert not kernel._same(data, -1, pat(b"a"))
    assert not kernel._same(data, 0, pat(b"ac"))
    assert kernel._same(data, 5, pat(b""))
    assert kernel._find_before(data, pat(b"}c"), 0, 5) == 2
    assert kernel._find_before(data, pat(b"}c"), 0, 3) == -1  # the match would cross `stop`
    assert kernel._find_before(data, pat(b"}c"), 3, 5) == -1


# -- a damaged topic log stops both read paths with the checker's description ----------------


def damaged_topic(tmp_path: Path, kind: str) -> list[Path]:
    """400 records in 50-record segments, damaged in one way; the segment paths."""
    with TopicLog(tmp_path, segment_bytes=1 << 30) as log:
        for i in range(0, 400, 50):
            log.append({TOPIC: [TopicRecord(key(j), value(j, "x"), j) for j in range(i, i + 50)]})
            log.close() if i == 350 else log._seal(log._topics[TOPIC])
    segs = [s.path for s in list_segments(tmp_path / TOPIC)]
    assert len(segs) == 8
    lines = segs[3].read_bytes().splitlines(keepends=True)
    if kind == "half-cut last line of a sealed segment":
        segs[-1].write_bytes(segs[-1].read_bytes()[:-20])
    elif kind == "line removed":
        segs[3].write_bytes(b"".join(lines[:10] + lines[11:]))
    elif kind == "last line of a segment removed":
        segs[3].write_bytes(b"".join(lines[:-1]))
    elif kind == "garbage bytes":
        segs[3].write_bytes(b"".join(lines[:10]) + b"\x00\xffgarbage" + b"".join(lines[10:]))
    elif kind == "garbage line of a format 1 log":
        plain = [without_checksum(line) for line in lines]
        segs[3].write_bytes(b"".join(plain[:10]) + b"\x00\xffgarbage" + b"".join(plain[10:]))
    elif kind == "byte changed in a value":  # the line still parses: only its checksum tells
        changed = lines[10].replace(b'"i":160}', b'"i":161}')
        assert changed != lines[10] and orjson.loads(changed)["value"]["payload"]["i"] == 161
        segs[3].write_bytes(b"".join([*lines[:10], changed, *lines[11:]]))
    return segs


WHERE = {  # segment index, offset, lines of the segment before the damaged place
    "half-cut last line of a sealed segment": (7, 399, 49),
    "line removed": (3, 160, 10),
    "last line of a segment removed": (4, 199, 0),
    "garbage bytes": (3, 160, 10),
    "garbage line of a format 1 log": (3, 160, 10),
    "byte changed in a value": (3, 160, 10),
}


@pytest.mark.parametrize("kind", list(WHERE))
def test_damage_stops_both_read_paths(tmp_path: Path, kind: str) -> None:
    from headwater.pipeline.source import read_range
    from headwater.topics.damage import TopicLogDamaged

    segs = damaged_topic(tmp_path, kind)
    seg, offset, line_no = WHERE[kind]
    position = sum(map(len, segs[seg].read_bytes().splitlines(keepends=True)[:line_no]))
    for start, end in ((0, 400), (offset - 5, 400), (offset, offset + 1)):
        # The column-wise scan raises the damage, or, for a line outside its layout (garbage
        # in a line without checksum), hands the batch to the event path (the reference),
        # which raises it.  Garbage in a checksummed line fails its checksum.
        with pytest.raises((TopicLogDamaged, columnar.NotColumnar)) as fast_info:
            columnar.scan(tmp_path, TOPIC, start, end, columnar.Positions())
        with pytest.raises(TopicLogDamaged) as info:
            list(read_range(tmp_path, TOPIC, start, end))
        got = info.value
        assert (got.topic, got.segment, got.offset, got.position) == (
            TOPIC, segs[seg], offset, position), (kind, start, end)
        if kind == "garbage line of a format 1 log":
            assert isinstance(fast_info.value, columnar.NotColumnar)
        else:
            assert str(fast_info.value) == str(got)
        if kind in ("garbage bytes", "byte changed in a value"):
            assert "line 11 is not a record: its CRC-32C checksum does not match" in got.problem
    # a range that ends before the damaged place reads normally
    assert columnar.scan(tmp_path, TOPIC, 0, 150, columnar.Positions()).count == 150
    assert len(list(read_range(tmp_path, TOPIC, 0, 150))) == 150


def test_crash_tail_of_the_in_progress_segment_ends_both_read_paths(tmp_path: Path) -> None:
    from headwater.pipeline.source import read_range

    with TopicLog(tmp_path) as log:
        log.append({TOPIC: [TopicRecord(key(j), value(j, "x"), j) for j in range(30)]})
    seg = list_segments(tmp_path / TOPIC)[-1]
    data = seg.path.read_bytes()
    seg.path.unlink()
    (tmp_path / TOPIC / inprogress_name(seg.base)).write_bytes(
        data + b"\x00" * 30 + b"\n" + data[:77])
    # the pipeline's ranges end at the topic's end (30): the scan stops before the tail
    assert columnar.scan(tmp_path, TOPIC, 0, 30, columnar.Positions()).offsets.tolist() == list(
        range(30))
    with pytest.raises(columnar.NotColumnar):  # reading on, it hands over to the event path
        columnar.scan(tmp_path, TOPIC, 0, 40, columnar.Positions())
    assert [r[0] for r in read_range(tmp_path, TOPIC, 0, 40)] == list(range(30))
