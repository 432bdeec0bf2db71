"""Tests of the local topic log (headwater.topics.log / reader / segment), on real files."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import google_crc32c
import orjson
import pytest

from headwater.converters.headers import header_value
from headwater.testing.timeouts import scaled
from headwater.topics.checksum import with_checksum
from headwater.topics.log import (
    InvalidTopicNameError,
    OutRecord,
    TopicLog,
    TopicLogFailedError,
    TopicLogLockedError,
)
from headwater.topics.reader import (
    CorruptSegmentError,
    Record,
    follow,
    list_topics,
    parse_line,
    read,
)
from headwater.topics.segment import inprogress_name, parse_segment_name, sealed_name

SRC = Path(__file__).resolve().parents[2] / "src"
T = "inventory.public.customers"


def rec(i: int, pad: int = 0, ts: int = 1_700_000_000_000) -> OutRecord:
    return OutRecord(b'{"id":%d}' % i, b'{"id":%d,"pad":"%s"}' % (i, b"x" * pad), ts + i)


def files(topic_dir: Path) -> list[str]:
    return sorted(p.name for p in topic_dir.iterdir())


def visible(topic_dir: Path) -> list[str]:
    """What a Spark/Hadoop file source would list: no names starting with '.' or '_'."""
    return [n for n in files(topic_dir) if not n.startswith((".", "_"))]


def offsets(root: Path, topic: str = T, **kw: object) -> list[int]:
    return [r.offset for r in read(root, topic, **kw)]  # type: ignore[arg-type]


# ---------------------------------------------------------------------- offsets and format


def test_offsets_grow_and_persist_across_reopen(tmp_path: Path) -> None:
    with TopicLog(tmp_path) as log:
        assert log.append({T: [rec(0), rec(1), rec(2)]}) == {T: (0, 2)}
        assert log.append({T: [rec(3)], "other": [rec(0), rec(1)]}) == {T: (3, 3), "other": (0, 1)}
        assert log.append({T: [], "other": []}) == {}
    with TopicLog(tmp_path) as log:
        assert log.next_offset(T) == 4
        assert log.next_offset("other") == 2
        assert log.append({T: [rec(4), rec(5)]}) == {T: (4, 5)}
    with TopicLog(tmp_path) as log:
        assert log.append({T: [rec(6)]}) == {T: (6, 6)}
    assert offsets(tmp_path) == list(range(7))
    assert offsets(tmp_path, "other") == [0, 1]
    # reopening without appending creates no segment and does not consume an offset
    with TopicLog(tmp_path):
        pass
    with TopicLog(tmp_path) as log:
        assert log.append({T: [rec(7)]}) == {T: (7, 7)}


def test_line_format_is_raw_json_lines(tmp_path: Path) -> None:
    key = b'{"id": 1}'  # whitespace kept: spliced raw, not re-encoded
    value = b'{"n":123456789012345678901234567890,"s":"\\u00e9\\n\xc3\xa9","f":1.10}'
    with TopicLog(tmp_path) as log:
        log.append(
            {
                T: [
                    OutRecord(key, value, 1700000000123),
                    OutRecord(key, None, 5, (("h1", b"x"), ("h\n2", b'{"a":1}'), ("h3", None))),
                    OutRecord(None, b"42", -1),
                ]
            }
        )
    data = (tmp_path / T / sealed_name(0)).read_bytes()
    plain = [
        b'{"offset":0,"timestamp":1700000000123,"key":{"id": 1},"value":' + value + b"}",
        b'{"offset":1,"timestamp":5,"key":{"id": 1},"value":null,'
        b'"headers":{"h1":"x","h\\n2":"{\\"a\\":1}","h3":null}}',
        b'{"offset":2,"timestamp":-1,"key":null,"value":42}',
    ]
    # each line ends with the CRC-32C of its bytes before the member, 8 hex digits
    assert data == b"".join(
        p[:-1] + b',"crc":"%08x"}\n' % google_crc32c.value(p[:-1]) for p in plain)
    for line in data.splitlines():
        assert isinstance(orjson.loads(line), dict)


def test_headers_of_older_logs_read_as_their_json_text(tmp_path: Path) -> None:
    """Before `header.converter` was honoured the log spliced JsonConverter envelopes in raw:
    their text is the header's bytes; a JSON string is the new form, null a null value."""
    line = (b'{"offset":0,"timestamp":1,"key":{"id":1},"value":{},"headers":{'
            b'"__debezium.context.taskId":{"schema":{"type":"string","optional":false},'
            b'"payload":"0"},"__debezium.newkey":"{\\"id\\":2}","n":null}}\n')
    (tmp_path / T).mkdir()
    (tmp_path / T / sealed_name(0)).write_bytes(line)
    (got,) = read(tmp_path, T)
    assert got.headers == (
        ("__debezium.context.taskId",
         b'{"schema":{"type":"string","optional":false},"payload":"0"}'),
        ("__debezium.newkey", b'{"id":2}'),
        ("n", None),
    )
    assert [header_value(v) for _, v in got.headers] == ["0", {"id": 2}, None]


def test_round_trip_keys_values_tombstones_headers(tmp_path: Path) -> None:
    big = b'{"n":123456789012345678901234567890, "x" : [1.50, "a\\"b"] }'
    records = [
        OutRecord(b'{"id":1}', big, 10),
        OutRecord(b'{"id":1}', None, 11),  # tombstone
        OutRecord(None, b'"just a string"', 12),
        OutRecord(b'{"id":2}', b"{}", 13, (("trace", b'"abc"'), ("n", b"7"), ("trace", None))),
        OutRecord(b'{"id":3}', b"[]", 14, (("empty", b""), ("text", b"a\nb \xc3\xa9"))),
    ]
    with TopicLog(tmp_path) as log:
        log.append({T: records})
    got = list(read(tmp_path, T))
    assert got == [
        Record(T, i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(records)
    ]


def test_raw_newlines_in_documents_become_spaces(tmp_path: Path) -> None:
    records = [
        OutRecord(b'{"id":1}', b'{"a":\n"b"}', 1),  # each line break alone in one field
        OutRecord(b'{"id":2}', b'{"a":\r"b"}', 2),
        OutRecord(b'{"id":\n3}', b"{}", 3),
        OutRecord(b'{"id":\r4}', b"{}", 4),
        OutRecord(b'{"id":5}', b"{\r\n}", 5, (("h", b"[1,\n2]"),)),  # a header keeps its bytes
    ]
    with TopicLog(tmp_path) as log:
        log.append({T: records})
        log.append({T: [rec(5)]})
    lines = (tmp_path / T / sealed_name(0)).read_bytes().split(b"\n")
    assert len(lines) == 7  # six records, then the empty string after the final newline
    assert lines[2] == with_checksum(b'{"offset":2,"timestamp":3,"key":{"id": 3},"value":{}}')[:-1]
    got = [(r.key, r.value, r.headers) for r in read(tmp_path, T)]
    assert got[:5] == [
        (b'{"id":1}', b'{"a": "b"}', ()),
        (b'{"id":2}', b'{"a": "b"}', ()),
        (b'{"id": 3}', b"{}", ()),
        (b'{"id": 4}', b"{}", ()),
        (b'{"id":5}', b"{  }", (("h", b"[1,\n2]"),)),
    ]
    assert offsets(tmp_path) == list(range(6))


def test_unencodable_record_writes_nothing_and_log_stays_usable(tmp_path: Path) -> None:
    with TopicLog(tmp_path) as log:
        log.append({T: [rec(0)]})
        for bad in (
            OutRecord(b"{}", b"", 1),  # empty bytes is not JSON
            OutRecord(b"", b"{}", 1),
            OutRecord("str", b"{}", 1),  # type: ignore[arg-type]
            OutRecord(b"{}", b"{}", "soon"),  # type: ignore[arg-type]
            OutRecord(b"{}", b"{}", 1, (("h", b"\xff"),)),  # header converters write text
        ):
            with pytest.raises((ValueError, TypeError), match="record #1"):
                log.append({"first": [rec(0)], T: [rec(1), bad]})
        assert log.next_offset(T) == 1
        assert log.append({T: [rec(1)]}) == {T: (1, 1)}
    assert offsets(tmp_path) == [0, 1]
    assert offsets(tmp_path, "first") == []


def test_validate_json_option(tmp_path: Path) -> None:
    with TopicLog(tmp_path, validate_json=True) as log:
        with pytest.raises(ValueError, match="not valid JSON"):
            log.append({T: [OutRecord(b"{}", b'{"a":', 1)]})
        log.append({T: [rec(0)]})
    with TopicLog(tmp_path) as log:  # off by default: the caller guarantees valid JSON
        log.append({T: [OutRecord(b"{}", b"{nope", 1)]})
    with pytest.raises(CorruptSegmentError, match="line 1"):
        list(read(tmp_path, T, from_offset=1))


@pytest.mark.parametrize(
    "name",
    ["", "a/b", "a b", "x" * 250, ".", "..", ".hidden", "caf\u00e9", "a\nb", "a:b", "../x"],
)
def test_invalid_topic_names_are_rejected(tmp_path: Path, name: str) -> None:
    with TopicLog(tmp_path) as log, pytest.raises(InvalidTopicNameError, match="topic name"):
        log.append({name: [rec(0)]})
    assert not any(p.is_dir() for p in tmp_path.iterdir())
    with pytest.raises(InvalidTopicNameError):
        list(read(tmp_path, name))


def test_valid_topic_names(tmp_path: Path) -> None:
    names = ["inventory.public.customers", "__debezium-heartbeat.inventory", "A-b_c.9", "x" * 249]
    with TopicLog(tmp_path) as log:
        log.append({n: [rec(0)] for n in names})
    assert [t.name for t in list_topics(tmp_path)] == sorted(names)


def test_append_fsyncs_each_touched_file_once_after_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with TopicLog(tmp_path) as log:
        log.append({"a": [rec(0)], "b": [rec(0)]})  # creates the segments (and fsyncs dirs)
        synced: list[tuple[str, int]] = []
        real_fsync = os.fsync

        def fsync(fd: int) -> None:
            real_fsync(fd)
            target = os.readlink(f"/proc/self/fd/{fd}")
            synced.append((Path(target).name, os.fstat(fd).st_size))

        monkeypatch.setattr(os, "fsync", fsync)
        log.append({"a": [rec(1), rec(2)], "b": [rec(1)], "c": []})
        monkeypatch.undo()
        sizes = {t: (tmp_path / t / inprogress_name(0)).stat().st_size for t in ("a", "b")}
    # exactly one fsync per touched file, each after all of its records were written
    assert sorted(synced) == sorted((inprogress_name(0), size) for size in sizes.values())


def _segment_bytes_written(root: Path, batch: list[OutRecord],
                           monkeypatch: pytest.MonkeyPatch,
                           write: object = None) -> tuple[bytes, list[int]]:
    """The in-progress segment's bytes after appending `batch`, and the sizes handed to
    write(2) (through `write`, if given, instead of os.write)."""
    sizes: list[int] = []
    inner = write if write is not None else os.write

    def recording(fd: int, data: object) -> int:
        sizes.append(len(data))  # type: ignore[arg-type]
        return inner(fd, data)  # type: ignore[operator, no-any-return]

    with TopicLog(root) as log:
        monkeypatch.setattr(os, "write", recording)
        log.append({T: batch})
        monkeypatch.undo()
        data = (root / T / inprogress_name(0)).read_bytes()
    return data, sizes


def test_a_large_batch_is_written_in_pieces_with_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from headwater.topics import log as topic_log

    piece = topic_log._WRITE_PIECE
    hdr = (("__debezium.context.connectorLogicalName", b"bench"),
           ("__debezium.context.taskId", b"0"))
    batch = [rec(i, pad=3000)._replace(headers=hdr) for i in range(3 * piece // 3000)]
    pieces, sizes = _segment_bytes_written(tmp_path / "pieces", batch, monkeypatch)
    assert len(pieces) > 2 * piece
    assert max(sizes) == piece and sum(sizes) == len(pieces)
    # one write of the whole batch (the writer before pieces) leaves the same bytes
    monkeypatch.setattr(topic_log, "_WRITE_PIECE", 1 << 40)
    whole, whole_sizes = _segment_bytes_written(tmp_path / "whole", batch, monkeypatch)
    assert whole_sizes == [len(whole)] and whole == pieces
    assert offsets(tmp_path / "pieces") == list(range(len(batch)))


def test_short_writes_are_continued(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write

    def short(fd: int, data: bytes) -> int:  # a kernel taking at most 1000 bytes per call
        return real_write(fd, bytes(data)[:1000])

    batch = [rec(i, pad=500) for i in range(300)]
    data, sizes = _segment_bytes_written(tmp_path / "short", batch, monkeypatch, short)
    assert len(sizes) > len(data) // 1000
    expected, _ = _segment_bytes_written(tmp_path / "whole", batch, monkeypatch)
    assert data == expected


# ---------------------------------------------------------------------- segments and visibility


def test_in_progress_segment_is_hidden_until_sealed(tmp_path: Path) -> None:
    log = TopicLog(tmp_path)
    log.append({T: [rec(0), rec(1)]})
    assert files(tmp_path / T) == [inprogress_name(0)]
    assert visible(tmp_path / T) == []
    assert offsets(tmp_path) == [0, 1]  # in-process readers may see it
    assert offsets(tmp_path, include_inprogress=False) == []  # what Spark sees
    log.close()
    assert files(tmp_path / T) == [sealed_name(0)]
    assert offsets(tmp_path, include_inprogress=False) == [0, 1]
    with pytest.raises(TopicLogFailedError, match="closed"):
        log.append({T: [rec(2)]})


def test_segments_roll_by_size(tmp_path: Path) -> None:
    r0 = rec(0, pad=100)
    assert r0.key is not None and r0.value is not None
    line = len(
        b'{"offset":0,"timestamp":%d,"key":%b,"value":%b}\n' % (r0.timestamp, r0.key, r0.value)
    )
    with TopicLog(tmp_path, segment_bytes=3 * line) as log:
        log.append({T: [rec(i, pad=100) for i in range(7)]})  # one batch spanning segments
        assert visible(tmp_path / T) == [sealed_name(0), sealed_name(3)]
        assert files(tmp_path / T)[0] == inprogress_name(6)
        for i in range(7, 10):
            log.append({T: [rec(i, pad=100)]})
        assert visible(tmp_path / T) == [sealed_name(0), sealed_name(3), sealed_name(6)]
    names = visible(tmp_path / T)
    assert names == [sealed_name(b) for b in (0, 3, 6, 9)]
    for name in names:
        base = int(name.split(".")[0])
        lines = (tmp_path / T / name).read_bytes().splitlines()
        assert orjson.loads(lines[0])["offset"] == base
    assert offsets(tmp_path) == list(range(10))
    assert offsets(tmp_path, from_offset=4) == list(range(4, 10))


def test_segments_roll_by_time_in_append(tmp_path: Path) -> None:
    with TopicLog(tmp_path, segment_ms=400) as log:
        log.append({T: [rec(0)], "quiet": [rec(0)]})
        log.append({T: [rec(1)]})
        assert visible(tmp_path / T) == []  # young: still in progress
        time.sleep(0.45)
        log.append({T: [rec(2)]})
        # the old segment was sealed before writing; rolling covers untouched topics too
        assert visible(tmp_path / T) == [sealed_name(0)]
        assert files(tmp_path / T)[0] == inprogress_name(2)
        assert visible(tmp_path / "quiet") == [sealed_name(0)]
        assert offsets(tmp_path, include_inprogress=False) == [0, 1]


def test_segments_roll_by_time_in_maintain(tmp_path: Path) -> None:
    with TopicLog(tmp_path, segment_ms=1000) as log:
        now = time.time_ns() // 1_000_000
        log.maintain(now)  # nothing open: no-op
        log.append({T: [rec(0)]})
        log.maintain(now + 10)
        assert visible(tmp_path / T) == []
        log.maintain(now + 5000)
        assert visible(tmp_path / T) == [sealed_name(0)]
        assert [n for n in files(tmp_path / T) if n.startswith(".")] == []
        log.maintain(now + 10000)  # an empty topic creates no empty segment
        assert files(tmp_path / T) == [sealed_name(0)]
        assert log.append({T: [rec(1)]}) == {T: (1, 1)}
        assert files(tmp_path / T) == [inprogress_name(1), sealed_name(0)]


def test_visible_segments_are_always_complete(tmp_path: Path) -> None:
    """A concurrent lister (like a Spark file source) only ever sees complete segments."""
    stop = threading.Event()
    problems: list[str] = []
    checked = 0

    def lister() -> None:
        nonlocal checked
        d = tmp_path / T
        while not stop.is_set():
            if not d.exists():
                time.sleep(0.001)
                continue
            for name in visible(d):
                data = (d / name).read_bytes()
                lines = data.split(b"\n")
                if lines[-1] != b"" or not data:
                    problems.append(f"{name} does not end with a newline")
                    continue
                offs = [orjson.loads(x)["offset"] for x in lines[:-1]]
                base = int(name.split(".")[0])
                if offs != list(range(base, base + len(offs))):
                    problems.append(f"{name}: offsets {offs[:3]}...")
                checked += 1

    t = threading.Thread(target=lister)
    t.start()
    try:
        with TopicLog(tmp_path, segment_bytes=20_000, segment_ms=5) as log:
            for i in range(300):
                log.append({T: [rec(i * 10 + j, pad=200) for j in range(10)]})
    finally:
        stop.set()
        t.join()
    assert problems == []
    assert checked > 0
    assert offsets(tmp_path, include_inprogress=False) == list(range(3000))


def test_close_seals_everything(tmp_path: Path) -> None:
    with TopicLog(tmp_path) as log:
        log.append({"a": [rec(0)], "b": [rec(0), rec(1)]})
    assert files(tmp_path / "a") == [sealed_name(0)]
    assert files(tmp_path / "b") == [sealed_name(0)]


# ---------------------------------------------------------------------- recovery


def crash_leftover(root: Path, topic: str, base: int, tail: bytes) -> Path:
    """Turn a sealed segment back into what a crash leaves: in-progress name + torn tail."""
    src = root / topic / sealed_name(base)
    dst = root / topic / inprogress_name(base)
    os.rename(src, dst)
    with open(dst, "ab") as f:
        f.write(tail)
    return dst


def test_recovery_truncates_torn_line_and_continues(tmp_path: Path) -> None:
    with TopicLog(tmp_path, segment_bytes=300) as log:
        log.append({T: [rec(i) for i in range(12)]})
    last_base = max(parse_segment_name(n)[0] for n in files(tmp_path / T))  # type: ignore[index]
    torn = b'{"offset":12,"timestamp":1,"key":{"id":12},"value":{"id":1'
    path = crash_leftover(tmp_path, T, last_base, torn)
    size_before = path.stat().st_size
    # readers ignore the torn tail of an in-progress file
    assert offsets(tmp_path) == list(range(12))
    assert list_topics(tmp_path)[0].end_offset == 12
    with TopicLog(tmp_path) as log:
        assert log.next_offset(T) == 12
        assert not path.exists()
        sealed = tmp_path / T / sealed_name(last_base)
        assert sealed.stat().st_size == size_before - len(torn)
        assert sealed.read_bytes().endswith(b"}\n")
        assert log.append({T: [rec(12), rec(13)]}) == {T: (12, 13)}
    assert offsets(tmp_path) == list(range(14))
    for name in visible(tmp_path / T):
        for line in (tmp_path / T / name).read_bytes().splitlines():
            orjson.loads(line)


def test_recovery_of_in_progress_file_without_a_complete_line(tmp_path: Path) -> None:
    with TopicLog(tmp_path) as log:
        log.append({T: [rec(0), rec(1)]})
    with TopicLog(tmp_path) as log:
        log.append({T: [rec(2)]})
    crash_leftover(tmp_path, T, 2, b"")
    (tmp_path / T / inprogress_name(2)).write_bytes(b'{"offset":2,"times')
    assert offsets(tmp_path) == [0, 1]
    with TopicLog(tmp_path) as log:
        assert files(tmp_path / T) == [sealed_name(0)]  # the empty leftover is removed
        assert log.append({T: [rec(2)]}) == {T: (2, 2)}
    assert offsets(tmp_path) == [0, 1, 2]


def test_recovery_drops_garbage_complete_lines_at_the_tail(tmp_path: Path) -> None:
    with TopicLog(tmp_path) as log:
        log.append({T: [rec(0), rec(1), rec(2)]})
    crash_leftover(tmp_path, T, 0, b"\x00" * 100 + b"\n" + b'{"offset":3,"ti\n' + b"\x00" * 5)
    with TopicLog(tmp_path) as log:
        assert log.append({T: [rec(3)]}) == {T: (3, 3)}
    assert offsets(tmp_path) == [0, 1, 2, 3]


def test_recovery_seals_complete_in_progress_file(tmp_path: Path) -> None:
    """Killed after writing+fsync of the in-progress file but before its rename."""
    with TopicLog(tmp_path) as log:
        log.append({T: [rec(0), rec(1)]})
    crash_leftover(tmp_path, T, 0, b"")
    with TopicLog(tmp_path) as log:
        assert files(tmp_path / T) == [sealed_name(0)]
        assert log.append({T: [rec(2)]}) == {T: (2, 2)}


def test_sealed_segment_with_in_progress_twin_is_an_error(tmp_path: Path) -> None:
    with TopicLog(tmp_path) as log:
        log.append({T: [rec(0)]})
    (tmp_path / T / inprogress_name(0)).write_bytes(b"")
    with pytest.raises(CorruptSegmentError, match="both exist"):
        TopicLog(tmp_path)
    (tmp_path / T / inprogress_name(0)).unlink()
    TopicLog(tmp_path).close()  # the failed open released its lock


# ---------------------------------------------------------------------- lock


def test_lock_prevents_a_second_writer(tmp_path: Path) -> None:
    log = TopicLog(tmp_path)
    with pytest.raises(TopicLogLockedError, match=str(tmp_path)):
        TopicLog(tmp_path)
    # also from another process
    code = textwrap.dedent(
        """
        import sys
        from headwater.topics.log import TopicLog, TopicLogLockedError
        try:
            TopicLog(sys.argv[1])
        except TopicLogLockedError as e:
            print(e)
            sys.exit(3)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    p = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        check=False,
        env=env,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 3, p.stderr
    assert f"pid {os.getpid()}" in p.stdout
    log.close()
    TopicLog(tmp_path).close()  # released on close


# ---------------------------------------------------------------------- reader


def test_list_topics(tmp_path: Path) -> None:
    assert list_topics(tmp_path / "missing") == []
    with TopicLog(tmp_path, segment_bytes=200) as log:
        log.append({"a": [rec(i) for i in range(5)], "b": [rec(0)]})
        (tmp_path / "not a topic").mkdir()
        (tmp_path / "a" / "junk.txt").write_text("x")
        infos = {t.name: t for t in list_topics(tmp_path)}
        assert set(infos) == {"a", "b"}
        a = infos["a"]
        assert (a.start_offset, a.end_offset, a.record_count) == (0, 5, 5)
        segs = [n for n in files(tmp_path / "a") if parse_segment_name(n)]
        assert a.segment_count == len(segs) > 1
        assert a.size_bytes == sum((tmp_path / "a" / n).stat().st_size for n in segs)
        assert infos["b"][1:5] == (0, 1, 1, (tmp_path / "b" / inprogress_name(0)).stat().st_size)
        sealed_only = {t.name: t for t in list_topics(tmp_path, include_inprogress=False)}
        assert sealed_only["b"].record_count == 0
    assert list_topics(tmp_path)[1].record_count == 1


def test_read_skips_segments_below_from_offset_by_name(tmp_path: Path) -> None:
    with TopicLog(tmp_path, segment_bytes=200) as log:
        log.append({T: [rec(i) for i in range(20)]})
    names = visible(tmp_path / T)
    assert len(names) >= 4
    bases = [int(n.split(".")[0]) for n in names]
    # corrupt the first segment: reading from a later segment must not even open it
    (tmp_path / T / names[0]).write_bytes(b"garbage\n")
    assert offsets(tmp_path, from_offset=bases[2]) == list(range(bases[2], 20))
    assert offsets(tmp_path, from_offset=bases[2] + 1) == list(range(bases[2] + 1, 20))
    assert offsets(tmp_path, from_offset=25) == []
    with pytest.raises(CorruptSegmentError, match=names[0]):
        list(read(tmp_path, T))


def test_reader_ignores_torn_last_line_of_in_progress_file(tmp_path: Path) -> None:
    log = TopicLog(tmp_path)
    log.append({T: [rec(0), rec(1)]})
    with open(tmp_path / T / inprogress_name(0), "ab") as f:
        f.write(b'{"offset":2,"timestamp":3,"key":{"id":2},"val')
    assert offsets(tmp_path) == [0, 1]
    assert list_topics(tmp_path)[0].end_offset == 2
    log.close()


def test_parse_line_rejects_malformed_lines() -> None:
    good = b'{"offset":1,"timestamp":2,"key":null,"value":{"a":1}}\n'
    assert parse_line("t", good) == Record("t", 1, 2, None, b'{"a":1}', ())
    for bad in (
        b'{"offset":1,"timestamp":2,"key":null}',
        b'{"offset":x,"timestamp":2,"key":null,"value":1}',
        b'{"offset":1,"timestamp":2,"key":nul,"value":1}',
        b'{"offset":1,"timestamp":2,"key":1,"value":1}}',
        b'{"offset":1,"timestamp":2,"key":1,"value":1,"headers":{"a"}}',
        b'{"timestamp":2,"offset":1,"key":1,"value":1}',
    ):
        with pytest.raises(ValueError):
            parse_line("t", bad)


def test_follow_sees_new_records_across_segment_rolls(tmp_path: Path) -> None:
    def writer() -> None:
        time.sleep(0.1)  # the topic does not exist yet when follow starts
        with TopicLog(tmp_path, segment_bytes=500, segment_ms=20) as log:
            for i in range(0, 40, 4):
                log.append({T: [rec(i + j) for j in range(4)]})
                time.sleep(0.01)

    t = threading.Thread(target=writer)
    t.start()
    got = []
    for r in follow(tmp_path, T, poll_interval=0.01, timeout=10):
        got.append(r.offset)
        if len(got) == 40:
            break
    t.join()
    assert got == list(range(40))
    assert len(visible(tmp_path / T)) > 3
    # from the middle, stops by timeout once caught up
    t0 = time.monotonic()
    assert [r.offset for r in follow(tmp_path, T, 37, poll_interval=0.01, timeout=0.3)] == [
        37,
        38,
        39,
    ]
    assert 0.25 < time.monotonic() - t0 < 5
    # and by the stop callable
    calls: list[int] = []

    def stop() -> bool:
        calls.append(1)
        return len(calls) > 3
    assert list(follow(tmp_path, T, 40, poll_interval=0.01, stop=stop)) == []
    assert len(calls) == 4


def test_follow_survives_writer_crash_recovery(tmp_path: Path) -> None:
    """The in-progress file the follower has open is removed by recovery and recreated."""
    with TopicLog(tmp_path) as log:
        log.append({T: [rec(0), rec(1)]})
    # crash leftover: an in-progress segment at base 2 holding only a torn line
    (tmp_path / T / inprogress_name(2)).write_bytes(b'{"offset":2,"tim')
    it = follow(tmp_path, T, poll_interval=0.01, timeout=10)
    assert [next(it).offset, next(it).offset] == [0, 1]

    def restart() -> None:
        time.sleep(0.2)  # the follower is polling the torn in-progress file by now
        with TopicLog(tmp_path) as log:
            log.append({T: [rec(2), rec(3)]})

    t = threading.Thread(target=restart)
    t.start()
    assert [next(it).offset, next(it).offset] == [2, 3]
    t.join()
    it.close()


# ---------------------------------------------------------------------- crash simulation

CHILD = textwrap.dedent(
    """
    import os, random, signal, stat, sys
    import orjson
    from headwater.topics.log import OutRecord, TopicLog

    root, side, mode, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    rnd = random.Random(seed)
    log = TopicLog(root, segment_bytes=3000, segment_ms=15)

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    def arm():
        real_rename, real_fsync, real_write = os.rename, os.fsync, os.write
        renamed = []
        if mode == "before_rename":
            os.rename = lambda a, b: die()
        elif mode == "after_rename":
            os.rename = lambda a, b: (real_rename(a, b), die())
        elif mode == "before_dir_fsync":
            def rename(a, b):
                real_rename(a, b)
                renamed.append(b)
            def fsync(fd):
                if renamed and stat.S_ISDIR(os.fstat(fd).st_mode):
                    die()
                real_fsync(fd)
            os.rename, os.fsync = rename, fsync
        elif mode == "mid_write":
            def write(fd, data):
                real_write(fd, bytes(data)[: len(data) // 2 + 7])
                die()
            os.write = write

    durable = orjson.loads(open(side, "rb").read()) if os.path.exists(side) else {}
    n = 0
    while True:
        batch = {}
        for topic in ("a.t", "b.t"):
            recs = []
            for _ in range(rnd.randint(0, 25)):
                n += 1
                pad = b"p" * rnd.randint(0, 200)
                recs.append(OutRecord(b'{"id":%d}' % n, b'{"id":%d,"pad":"%s"}' % (n, pad), n))
            batch[topic] = recs
        result = log.append(batch)
        # append returned: these records are durable; publish that atomically
        durable.update({t: last for t, (first, last) in result.items()})
        with open(side + ".tmp", "wb") as f:
            f.write(orjson.dumps(durable))
        os.replace(side + ".tmp", side)
        if mode not in ("loop", "armed") and n > 40:
            arm()
            mode = "armed"
    """
)


def run_child(root: Path, side: Path, mode: str, seed: int, kill_after: float | None) -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    args = [sys.executable, "-c", CHILD, str(root), str(side), mode, str(seed)]
    before = side.stat().st_mtime_ns if side.exists() else 0
    p = subprocess.Popen(args, env=env, stderr=subprocess.PIPE)
    try:
        if kill_after is None:
            p.wait(timeout=60)
        else:
            deadline = time.monotonic() + scaled(30)
            # wait until the child has made at least one append durable in this round
            while (not side.exists() or side.stat().st_mtime_ns == before) and p.poll() is None:
                assert time.monotonic() < deadline
                time.sleep(0.005)
            time.sleep(kill_after)
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == -signal.SIGKILL, p.stderr.read() if p.stderr else ""
    if p.stderr:
        p.stderr.close()


def check_log(root: Path, side: Path) -> dict[str, int]:
    """Offsets unique and contiguous from 0, lines valid, every durable record present."""
    durable: dict[str, int] = orjson.loads(side.read_bytes()) if side.exists() else {}
    ends = {}
    for topic in ("a.t", "b.t"):
        d = root / topic
        recs = list(read(root, topic))
        assert [r.offset for r in recs] == list(range(len(recs)))
        for r in recs:
            assert r.key is not None
            assert r.value is not None
            assert orjson.loads(r.value)["id"] == orjson.loads(r.key)["id"]
        assert len(recs) > durable.get(topic, -1)
        ends[topic] = len(recs)
        # raw files: complete lines are valid JSON, each file starts at its base offset
        names = [n for n in files(d) if parse_segment_name(n)] if d.exists() else []
        for name in names:
            base, sealed = parse_segment_name(name)  # type: ignore[misc]
            data = (d / name).read_bytes()
            lines = data.split(b"\n")
            if sealed:
                assert lines[-1] == b"", name
            complete = lines[:-1]
            for line in complete:
                orjson.loads(line)
            if complete:
                assert orjson.loads(complete[0])["offset"] == base
    return ends


@pytest.mark.slow
def test_crash_at_random_moments(tmp_path: Path) -> None:
    root, side = tmp_path / "log", tmp_path / "durable"
    rnd = random.Random(1234)
    for round_ in range(8):
        run_child(root, side, "loop", round_, kill_after=rnd.uniform(0, 0.15))
        check_log(root, side)
    with TopicLog(root) as log:  # recovery, then a clean close
        ends = {t: log.next_offset(t) for t in ("a.t", "b.t")}
    assert ends == check_log(root, side)
    for topic in ("a.t", "b.t"):
        assert all(not n.startswith(".") for n in files(root / topic))
        assert ends[topic] > 40


@pytest.mark.parametrize("mode", ["before_rename", "after_rename", "before_dir_fsync", "mid_write"])
def test_crash_at_chosen_points(tmp_path: Path, mode: str) -> None:
    root, side = tmp_path / "log", tmp_path / "durable"
    run_child(root, side, mode, 7, kill_after=None)  # the child kills itself at that point
    before = check_log(root, side)
    if mode in ("before_rename", "mid_write"):
        assert any(n.startswith(".") for t in before for n in files(root / t))
    with TopicLog(root) as log:
        for topic, end in before.items():
            assert log.next_offset(topic) == end
            assert log.append({topic: [rec(999_999)]}) == {topic: (end, end)}
    after = check_log(root, side)
    assert after == {t: e + 1 for t, e in before.items()}
    # a second crash-and-recover round on top of the first
    run_child(root, side, mode, 8, kill_after=None)
    check_log(root, side)
