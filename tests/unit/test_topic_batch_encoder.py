"""The topic log's batch encoder (`headwater.topics._crcfill.checksum_lines`, one C call per
batch) writes the bytes of the per-record encoder (the path where that module was not built),
byte for byte: the on-disk format did not change with it."""

from __future__ import annotations

import logging
import random
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

import headwater.topics
from headwater.model.topic import HeaderBytes
from headwater.topics import _crcfill
from headwater.topics import log as topic_log
from headwater.topics.checksum import (
    TAIL_LEN,
    body_end,
    crc32c,
    crc32c_extend_address,
    with_checksum,
)
from headwater.topics.log import OutRecord, TopicLog
from headwater.topics.reader import read
from headwater.topics.segment import list_segments


@pytest.fixture(autouse=True)
def _crc32c_extend_set() -> None:
    """google-crc32c's `crc32c_extend` handed to `_crcfill`, as the writer does on its first
    append: a test that calls `checksum_lines` directly may run with no append before it (an
    xdist worker, `-k`)."""
    _crcfill.set_crc32c_extend(crc32c_extend_address())


TEXT = ["a", "é", "✓", "中文", "😀", '\\"', "\\n", " ", "x" * 300]


def doc(rng: random.Random) -> bytes:
    """A JSON document, sometimes with raw CR/LF whitespace (the slow path's input)."""
    value = {f"c{i}": rng.choice([rng.randint(-10**12, 10**12), rng.choice(TEXT) * rng.randint(
        0, 4), None, 1.5]) for i in range(rng.randint(0, 6))}
    text = orjson.dumps(value)
    if rng.random() < 0.15:
        text = text.replace(b",", b",\r\n ", 1).replace(b"{", b"{\n", 1)
    return text


def records(rng: random.Random, n: int) -> list[OutRecord]:
    shared: HeaderBytes = (("__debezium.context.connectorName", b"bench"),
                           ("h\u00e9", "v\u2713".encode()))
    out = []
    for _ in range(n):
        key = None if rng.random() < 0.1 else doc(rng)
        value = None if rng.random() < 0.1 else doc(rng)  # a tombstone
        pick = rng.random()
        headers: HeaderBytes = (
            () if pick < 0.4 else shared if pick < 0.8
            else (("n", None), ("u", rng.choice(TEXT).encode()), ("j", b'{"a":\n1}')))
        out.append(OutRecord(key, value, rng.choice([-1, 0, rng.randint(0, 1 << 45)]), headers))
    return out


def segment_bytes(root: Path, topic: str) -> Iterator[tuple[str, bytes]]:
    for seg in list_segments(root / topic):
        yield seg.path.name, seg.path.read_bytes()


@pytest.fixture
def per_record(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The writer without the batch encoder (as where it was not built)."""
    monkeypatch.setattr(topic_log, "_batch_checksummer", lambda: None)
    yield


@pytest.mark.parametrize("seed", range(6))
def test_batch_encoder_writes_the_per_record_encoders_bytes(seed: int) -> None:
    rng = random.Random(seed)
    batch = records(rng, rng.choice([1, 2, 17, 300]))
    first = rng.randint(0, 10**9)
    log = TopicLog.__new__(TopicLog)  # (only the encoders: no root)
    checksummer = topic_log._batch_checksummer()
    assert checksummer is not None
    new = bytes(log._encode_lines(first, batch, checksummer))
    old = b"".join(log._encode_per_record(first, batch))
    assert new == old
    lines = new.splitlines(keepends=True)
    assert len(lines) == len(batch)
    for i, line in enumerate(lines):
        assert body_end(line) == len(line) - 1 - TAIL_LEN
        assert orjson.loads(line)["offset"] == first + i


@pytest.mark.parametrize("seed", range(3))
def test_logs_written_with_and_without_it_are_the_same_files(
        tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole logs: several topics per append, batches spanning segments, read back by the
    checking reader."""
    rng = random.Random(100 + seed)
    batches = [{t: records(rng, rng.randint(0, 60)) for t in ("a.b", "c.d")} for _ in range(12)]
    seg = rng.randint(500, 6000)
    for name, native_on in (("new", True), ("old", False)):
        if not native_on:
            monkeypatch.setattr(topic_log, "_batch_checksummer", lambda: None)
        with TopicLog(tmp_path / name, segment_bytes=seg) as log:
            for batch in batches:
                log.append(batch)
    for topic in ("a.b", "c.d"):
        new = list(segment_bytes(tmp_path / "new", topic))
        assert new == list(segment_bytes(tmp_path / "old", topic))
        assert len(new) > 2
        for _, data in new[:-1]:  # sealed by size: the line reaching `seg` is its last
            assert len(data) >= seg
            assert len(data) - len(data[:-1].rsplit(b"\n", 1)[-1]) - 1 < seg
        sent = [r for b in batches for r in b[topic]]
        got = list(read(tmp_path / "new", topic))
        assert [r.offset for r in got] == list(range(len(sent)))
        assert [r.value is None for r in got] == [r.value is None for r in sent]


def test_the_checksummer_refuses_a_batch_that_is_not_its_lines() -> None:
    line = b'{"a":1' + topic_log._PLACEHOLDER
    data = bytearray(line * 2)
    _crcfill.checksum_lines(data, 2)
    assert bytes(data) == with_checksum(b'{"a":1}\n') * 2
    for bad, count, where in (
        (b'{"a":\n1' + topic_log._PLACEHOLDER, 1, "line 1 at byte 0"),  # a newline in a record
        (line + b'{"a":1}\n', 2, "line 2 at byte 25"),  # a line without the member
        (line + b'{"', 1, "line 2 at byte 25"),  # bytes after the last line
        (line, 2, "line 2 at byte 25"),  # a line missing
    ):
        with pytest.raises(ValueError, match=f"{len(bad)} encoded bytes are not the {count} "
                           f"lines of its records: {where} does not end with the checksum"):
            _crcfill.checksum_lines(bytearray(bad), count)


def test_without_the_compiled_checksummer_the_per_record_encoder_writes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Where `_crcfill` was not built: the same bytes, and one WARNING naming the cause and
    the command that builds it."""
    topic_log._batch_checksummer.cache_clear()
    try:
        monkeypatch.delattr(headwater.topics, "_crcfill")
        monkeypatch.setitem(sys.modules, "headwater.topics._crcfill", None)
        with caplog.at_level(logging.INFO, "headwater.topics.log"), TopicLog(tmp_path) as log:
            assert log.append({"t": records(random.Random(7), 20)}) == {"t": (0, 19)}
            log.append({"t": records(random.Random(8), 5)})
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1
        assert "headwater.topics._crcfill is not built" in warnings[0].getMessage()
        assert "pip install -e ." in warnings[0].getMessage()
        assert topic_log._batch_checksummer() is None
    finally:
        topic_log._batch_checksummer.cache_clear()
    assert [r.offset for r in read(tmp_path, "t")] == list(range(25))


def test_the_compiled_checksummer_is_built() -> None:
    """CI's clean clone builds it (`pip install -e .` in scripts/setup.sh): a writer that fell
    back to the per-record encoder there would only be slower, so this says it did not."""
    assert topic_log._batch_checksummer() is _crcfill.checksum_lines


@pytest.mark.parametrize("seed", range(4))
def test_the_checksummer_matches_google_crc32c_on_random_bytes(seed: int) -> None:
    """Random line bodies (any byte but the newline; lengths 0 to 300,000, past the size from
    which the GIL is released) against google-crc32c's Python API."""
    rng = random.Random(seed)
    bodies = [rng.randbytes(rng.choice([0, 1, 7, 8, 9, 63, 1000, rng.randint(0, 300_000)]))
              .replace(b"\n", b"\x00") for _ in range(rng.randint(1, 40))]
    data = bytearray(b"".join(body + topic_log._PLACEHOLDER for body in bodies))
    _crcfill.checksum_lines(data, len(bodies))
    assert bytes(data) == b"".join(body + b',"crc":"%08x"}\n' % crc32c(body) for body in bodies)


def test_the_checksummer_refuses_bad_arguments() -> None:
    with pytest.raises(BufferError, match="not writable"):
        _crcfill.checksum_lines(b'{"a":1' + topic_log._PLACEHOLDER, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes 2 arguments"):
        _crcfill.checksum_lines(bytearray())  # type: ignore[call-arg]
    empty = bytearray()
    _crcfill.checksum_lines(empty, 0)
    assert empty == b""
