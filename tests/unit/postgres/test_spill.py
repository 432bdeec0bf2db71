"""The spill buffer of streamed transactions: format, replay, aborts, stale files, locking."""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater.connectors.postgres.pgoutput import (
    Delete,
    Insert,
    Relation,
    Truncate,
    Update,
    decode,
)
from headwater.connectors.postgres.spill import SpillBuffer, SpillError, default_spill_root

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "pgoutput"


def ins(xid: int, key: int, oid: int = 42) -> bytes:
    """A streamed Insert of one text column."""
    value = str(key).encode()
    return (b"I" + struct.pack("!II", xid, oid) + b"N" + struct.pack("!H", 1)
            + b"t" + struct.pack("!I", len(value)) + value)


def rel(xid: int, oid: int = 42, name: bytes = b"t") -> bytes:
    return (b"R" + struct.pack("!II", xid, oid) + b"public\0" + name + b"\0d"
            + struct.pack("!H", 1) + b"\1id\0" + struct.pack("!Ii", 25, -1))


def keys(buffer: SpillBuffer, xid: int) -> list[int]:
    out = []
    for _, message in buffer.replay(xid):
        m = decode(message)
        if isinstance(m, Insert):
            out.append(int(m.new[0]))
    return out


@pytest.fixture()
def buf(tmp_path: Path) -> Iterator[SpillBuffer]:
    b = SpillBuffer(tmp_path / "spill", read_chunk_size=64)  # tiny chunks: records straddle
    b.open()
    try:
        yield b
    finally:
        b.close()


def write(b: SpillBuffer, xid: int, messages: list[bytes], first: bool = False,
          lsn0: int = 1000) -> None:
    b.start(xid, first)
    for i, data in enumerate(messages):
        b.append(data, lsn0 + i)
    b.stop()


# -- format and replay ---------------------------------------------------------------------------


def _fixture_stream_messages() -> list[bytes]:
    raw = (FIXTURES / "v2_stream.bin").read_bytes()
    out, pos, in_stream = [], 0, False
    while pos < len(raw):
        (n,) = struct.unpack_from("!I", raw, pos)
        data = raw[pos + 4:pos + 4 + n]
        pos += 4 + n
        if data[:1] == b"S":
            in_stream = True
        elif data[:1] == b"E":
            in_stream = False
        elif in_stream and data[:1] in b"IUDTR":
            out.append(data)
    return out


def test_replay_gives_each_message_without_its_xid_decodable_by_the_protocol_1_path(
    buf: SpillBuffer,
) -> None:
    messages = _fixture_stream_messages()
    assert len(messages) > 3
    write(buf, 7, messages[:2], first=True, lsn0=500)
    write(buf, 7, messages[2:], lsn0=502)  # a later segment of the same transaction
    assert buf.size(7) == sum(len(m) - 4 + 25 for m in messages)
    path = buf.path(7)
    assert path.exists() and path.stat().st_size == buf.bytes_on_disk
    replayed = list(buf.replay(7))
    assert [lsn for lsn, _ in replayed] == list(range(500, 500 + len(messages)))
    for (_, message), data in zip(replayed, messages, strict=True):
        assert message == data[:1] + data[5:]
        streamed = decode(data, in_stream=True)
        assert isinstance(streamed, Insert | Update | Delete | Truncate | Relation)
        assert decode(message) == streamed._replace(xid=None)
    assert not path.exists()  # read once, then deleted
    assert buf.transactions == 0


def test_large_messages_straddle_read_chunks(buf: SpillBuffer) -> None:
    big = [ins(5, k) + b"" for k in range(3)]
    huge = b"I" + struct.pack("!II", 5, 42) + b"N" + struct.pack("!H", 1) + b"t" + \
        struct.pack("!I", 10_000) + b"x" * 10_000
    write(buf, 5, [*big, huge, ins(5, 9)], first=True)
    got = [decode(m) for _, m in buf.replay(5)]
    assert len(got) == 5
    assert got[3].new == ("x" * 10_000,)  # type: ignore[union-attr]
    assert got[4].new == ("9",)  # type: ignore[union-attr]


def test_interleaved_transactions_have_separate_files(buf: SpillBuffer) -> None:
    write(buf, 10, [ins(10, 1), ins(10, 2)], first=True)
    write(buf, 11, [ins(11, 100)], first=True)
    write(buf, 10, [ins(10, 3)])
    write(buf, 11, [ins(11, 101)])
    assert buf.transactions == 2
    assert keys(buf, 11) == [100, 101]
    assert keys(buf, 10) == [1, 2, 3]


def test_first_segment_again_starts_over(buf: SpillBuffer) -> None:
    write(buf, 3, [ins(3, 1), ins(3, 2)], first=True)
    write(buf, 3, [ins(3, 7)], first=True)
    assert keys(buf, 3) == [7]


def test_protocol_violations_are_errors(buf: SpillBuffer) -> None:
    with pytest.raises(SpillError, match="earlier segments"):
        buf.start(99, first_segment=False)
    with pytest.raises(SpillError, match="outside a stream segment"):
        buf.append(ins(1, 1), 1)
    with pytest.raises(SpillError, match="Stream Stop outside"):
        buf.stop()
    buf.start(1, True)
    with pytest.raises(SpillError, match="inside a stream segment"):
        buf.start(2, True)
    with pytest.raises(SpillError, match="inside a stream segment"):
        buf.abort(1, 1)
    with pytest.raises(SpillError, match="inside a stream segment"):
        buf.replay(1)
    buf.stop()


def test_partial_record_is_detected(buf: SpillBuffer) -> None:
    write(buf, 4, [ins(4, 1), ins(4, 2)], first=True)
    path = buf.path(4)
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(SpillError, match="partial record"):
        list(buf.replay(4))


def test_unknown_transaction_replays_nothing(buf: SpillBuffer) -> None:
    assert list(buf.replay(12345)) == []
    assert buf.abort(12345, 12345) == 0
    assert buf.abort(12345, 12346) == 0


# -- aborts ---------------------------------------------------------------------------------------


def test_top_level_abort_deletes_the_file(buf: SpillBuffer) -> None:
    write(buf, 20, [ins(20, k) for k in range(5)], first=True)
    path = buf.path(20)
    assert buf.abort(20, 20) == 5 * (len(ins(20, 0)) - 4 + 25)  # bytes
    assert not path.exists()
    assert buf.transactions == 0


def test_savepoint_rollback_drops_only_its_suffix(buf: SpillBuffer) -> None:
    # BEGIN (100); INSERT 1,2; SAVEPOINT a (101); INSERT 3,4; SAVEPOINT b (102); INSERT 5;
    # ROLLBACK TO a -> aborts 102 then 101; INSERT 6 (top level again); COMMIT
    write(buf, 100, [ins(100, 1), ins(100, 2), ins(101, 3), ins(101, 4), ins(102, 5)],
          first=True)
    assert buf.abort(100, 102) == 1
    assert buf.abort(100, 101) == 2
    write(buf, 100, [ins(100, 6)])
    assert keys(buf, 100) == [1, 2, 6]


def test_released_child_is_dropped_with_its_parent(buf: SpillBuffer) -> None:
    # SAVEPOINT a; SAVEPOINT b; INSERT (b=102, a gets 101 first); RELEASE b; INSERT (a);
    # ROLLBACK TO a: the abort of 102 stops at a's change, the abort of 101 drops both.
    write(buf, 100, [ins(100, 1), ins(102, 2), ins(101, 3)], first=True)
    assert buf.abort(100, 102) == 0
    assert buf.abort(100, 101) == 2
    assert keys(buf, 100) == [1]


def test_aborted_sibling_keeps_earlier_released_sibling(buf: SpillBuffer) -> None:
    # SAVEPOINT a (101) INSERT; RELEASE a; SAVEPOINT b (102) INSERT; ROLLBACK TO b
    write(buf, 100, [ins(101, 1), ins(102, 2), ins(102, 3)], first=True)
    assert buf.abort(100, 102) == 2
    assert keys(buf, 100) == [1]


def test_xids_compare_modulo_2_32(buf: SpillBuffer) -> None:
    top, sub = 0xFFFF_FFF0, 3  # the subtransaction's xid wrapped around
    write(buf, top, [ins(top, 1), ins(sub, 2), ins(sub, 3)], first=True)
    assert buf.abort(top, sub) == 2
    assert keys(buf, top) == [1]


def test_relation_messages_survive_a_subtransaction_abort(buf: SpillBuffer) -> None:
    # The first change of table 42 happens in a savepoint that rolls back; the server does not
    # describe the table again for the top-level change that follows.
    write(buf, 100, [ins(100, 1, oid=7), rel(101, 42, b"t"), ins(101, 2), rel(101, 43, b"u"),
                     ins(101, 3, oid=43)], first=True)
    assert buf.abort(100, 101) == 2
    write(buf, 100, [ins(100, 4)])
    out = [decode(m) for _, m in buf.replay(100)]
    assert [type(m).__name__ for m in out] == ["Insert", "Relation", "Relation", "Insert"]
    assert [m.oid for m in out if isinstance(m, Relation)] == [42, 43]
    assert [m.new[0] for m in out if isinstance(m, Insert)] == ["1", "4"]


def test_abort_scans_backwards_through_large_records(tmp_path: Path) -> None:
    b = SpillBuffer(tmp_path / "s", read_chunk_size=32)
    b.open()
    try:
        def filler(xid: int) -> bytes:
            return (b"I" + struct.pack("!II", xid, 42) + b"N" + struct.pack("!H", 1) + b"t"
                    + struct.pack("!I", 500) + b"y" * 500)

        write(b, 100, [ins(100, 1), filler(101), ins(101, 2), filler(101), ins(100, 3)],
              first=True)
        # the top level wrote (3) after 101 was released: a later abort of 101 alone drops
        # nothing (its changes are not a suffix; only an abort of 100 itself could follow)
        assert b.abort(100, 101) == 0
        write(b, 100, [ins(102, 4), filler(102), ins(102, 5)])
        assert b.abort(100, 102) == 3
        out = [decode(m).new[0] for _, m in b.replay(100)]  # type: ignore[union-attr]
        assert [v[:3] for v in out] == ["1", "yyy", "2", "yyy", "3"]
    finally:
        b.close()


# A model of one PostgreSQL transaction: savepoints, lazily assigned xids (parents first),
# releases and rollbacks; changes reach the spill file only when the server streams them, and
# Stream Abort is sent for every streamed (sub)transaction of a rolled-back subtree, committed
# children first - as DecodeAbort does.

class _Tx:
    def __init__(self, base: int) -> None:
        self.next_xid = base
        self.stack: list[list[int | None]] = [[None]]  # open (sub)transactions, innermost last
        self.parent: dict[int, int | None] = {}
        self.children: dict[int, list[int]] = {}
        self.queued: list[tuple[int, int]] = []  # (xid, key) not streamed yet
        self.streamed: set[int] = set()
        self.changes: list[tuple[int, int]] = []  # every change made: (xid, key)
        self.aborted: set[int] = set()

    def _assign(self, level: int) -> int:
        slot = self.stack[level]
        if slot[0] is None:
            parent = self._assign(level - 1) if level else None
            xid = self.next_xid
            # 0-2 are special xids, skipped on wraparound
            self.next_xid = max((self.next_xid + 1) & 0xFFFF_FFFF, 3)
            slot[0] = xid
            self.parent[xid] = parent
            self.children[xid] = []
            if parent is not None:
                self.children[parent].append(xid)
        assert slot[0] is not None
        return slot[0]

    def top(self) -> int:
        return self._assign(0)

    def subtree(self, xid: int) -> list[int]:
        out = [xid]
        for child in self.children[xid]:
            out.extend(self.subtree(child))
        return out


def _run_model(b: SpillBuffer, rnd: random.Random, base: int, steps: int) -> int:
    """Runs one random transaction; checks the replay; returns how many records aborts dropped."""
    tx = _Tx(base)
    top = tx.top()
    key = 0
    first = True
    dropped = 0

    def stream() -> None:
        nonlocal first
        if not tx.queued:
            return
        b.start(top, first)
        first = False
        for xid, k in tx.queued:
            b.append(ins(xid, k), k)
            tx.streamed.add(xid)
        b.stop()
        tx.queued.clear()

    for _ in range(steps):
        op = rnd.choices(["write", "touch", "savepoint", "release", "rollback", "stream"],
                         weights=[8, 1, 3, 1, 2, 2])[0]
        if op == "touch":  # an xid without a published change (row lock, unpublished table)
            tx._assign(len(tx.stack) - 1)
        elif op == "write":
            xid = tx._assign(len(tx.stack) - 1)
            key += 1
            tx.changes.append((xid, key))
            tx.queued.append((xid, key))
        elif op == "savepoint":
            tx.stack.append([None])
        elif op == "release" and len(tx.stack) > 1:
            tx.stack.pop()  # its xid (if any) stays a child of the parent
        elif op == "rollback" and len(tx.stack) > 1:
            # ROLLBACK TO SAVEPOINT: the savepoint stays, with a new subtransaction
            savepoint_xid = tx.stack[-1][0]
            tx.stack[-1] = [None]
            if savepoint_xid is not None:
                doomed = tx.subtree(savepoint_xid)
                tx.aborted.update(doomed)
                tx.queued = [(x, k) for x, k in tx.queued if x not in tx.aborted]
                # the committed children first (in any order), then the subtransaction
                children = doomed[1:]
                rnd.shuffle(children)
                for x in [*children, savepoint_xid]:
                    if x in tx.streamed:
                        dropped += b.abort(top, x)
        elif op == "stream":
            stream()
    stream()
    want = [k for x, k in tx.changes if x not in tx.aborted]
    got = keys(b, top) if not first else []
    assert got == want
    return dropped


def test_subtransaction_aborts_match_a_model_of_postgresql(tmp_path: Path) -> None:
    b = SpillBuffer(tmp_path / "spill", read_chunk_size=48)
    b.open()
    try:
        total = dropping = 0
        for seed in range(600):
            rnd = random.Random(seed)
            base = rnd.choice([1000, 0xFFFF_FFF0, 0xFFFF_FFFE])  # with and without wraparound
            dropped = _run_model(b, rnd, base, rnd.randint(5, 150))
            total += dropped
            dropping += dropped > 0
        assert dropping > 300 and total > 2000  # the model does exercise the abort path
    finally:
        b.close()


# -- directory lifecycle --------------------------------------------------------------------------


def test_open_deletes_stale_files_and_close_deletes_its_own(tmp_path: Path) -> None:
    d = tmp_path / "spill"
    d.mkdir()
    (d / "123.spill").write_bytes(b"stale")
    (d / "keep.txt").write_text("not ours")
    b = SpillBuffer(d)
    assert b.open() == 1
    assert not (d / "123.spill").exists()
    assert (d / "keep.txt").exists()
    write(b, 5, [ins(5, 1)], first=True)
    b.start(6, True)
    b.append(ins(6, 1), 1)  # a segment still open at close
    assert len(list(d.glob("*.spill"))) == 2
    b.close()
    assert list(d.glob("*.spill")) == []
    assert sorted(x.name for x in d.iterdir()) == ["keep.txt"]  # the lock file is gone too
    b2 = SpillBuffer(tmp_path / "other")
    b2.open()
    b2.close()
    assert not (tmp_path / "other").exists()  # an empty directory is removed


def test_one_process_per_directory(tmp_path: Path) -> None:
    a = SpillBuffer(tmp_path / "spill")
    a.open()
    b = SpillBuffer(tmp_path / "spill")
    try:
        with pytest.raises(SpillError, match="in use by another capture process"):
            b.open()
    finally:
        a.close()
    b.open()  # released by close
    b.close()


def test_default_root_is_in_the_temp_directory(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert default_spill_root() == tmp_path / "headwater-spill"
