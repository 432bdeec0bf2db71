"""Tests for the sans-IO pgoutput decoder.

Most tests decode real pgoutput bytes captured from PostgreSQL 15 by
tests/fixtures/pgoutput/capture.py; server-side ground truth (oids, xids, commit timestamps,
message LSNs) comes from the manifest.json the capture writes, the row values are the ones the
capture script inserted.  The rest are hand-built byte strings for corner cases and errors.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.postgres import pgoutput
from headwater.connectors.postgres.pgoutput import (
    PG_EPOCH_OFFSET_US,
    Begin,
    Commit,
    Delete,
    Insert,
    LogicalMessage,
    Origin,
    PgOutputError,
    PgOutputMessage,
    Relation,
    RelationColumn,
    StreamAbort,
    StreamCommit,
    StreamStart,
    StreamStop,
    Truncate,
    Type,
    Update,
    decode,
    format_lsn,
    parse_lsn,
)
from headwater.model.record import UNCHANGED_TOAST

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "pgoutput"
MANIFEST: dict[str, Any] = json.loads((FIXTURES / "manifest.json").read_text())
OIDS: dict[str, int] = MANIFEST["oids"]
XIDS: dict[str, int] = MANIFEST["xids"]
TS: dict[str, int | None] = MANIFEST["commit_ts_us"]
MSG_LSN: dict[str, int] = {k: parse_lsn(v) for k, v in MANIFEST["message_lsns"].items()}

INT4, VARCHAR, NUMERIC, TEXT = 23, 1043, 1700, 25


def load(name: str) -> list[bytes]:
    """Read a fixture file of uint32-length-prefixed pgoutput messages."""
    buf = (FIXTURES / name).read_bytes()
    out: list[bytes] = []
    pos = 0
    while pos < len(buf):
        (n,) = struct.unpack_from("!I", buf, pos)
        out.append(buf[pos + 4 : pos + 4 + n])
        pos += 4 + n
    assert pos == len(buf)
    return out


def decode_session(raw: list[bytes]) -> Iterator[tuple[bool, PgOutputMessage]]:
    """Decode a session like a consumer does: track in_stream from StreamStart/StreamStop."""
    in_stream = False
    for data in raw:
        msg = decode(data, in_stream)
        if isinstance(msg, StreamStart):
            assert not in_stream
            in_stream = True
        elif isinstance(msg, StreamStop):
            assert in_stream
            in_stream = False
        yield in_stream, msg


def split_transactions(msgs: list[PgOutputMessage]) -> list[Any]:
    """Group a non-streamed session into (Begin, [body], Commit) and standalone messages."""
    out: list[Any] = []
    it = iter(msgs)
    for msg in it:
        if not isinstance(msg, Begin):
            out.append(msg)
            continue
        body: list[PgOutputMessage] = []
        for inner in it:
            if isinstance(inner, Commit):
                out.append((msg, body, inner))
                break
            body.append(inner)
        else:
            pytest.fail("unterminated transaction")
    return out


def check_tx(tx: Any, name: str) -> list[PgOutputMessage]:
    """Check Begin/Commit against the server's xid and commit timestamp; return the body."""
    begin, body, commit = tx
    assert isinstance(begin, Begin) and isinstance(commit, Commit)
    assert begin.xid == XIDS[name]
    assert begin.commit_ts_us == TS[name] == commit.commit_ts_us
    assert begin.final_lsn == commit.commit_lsn
    assert commit.flags == 0
    assert commit.end_lsn > commit.commit_lsn
    return list(body)


def customers_relation(xid: int | None = None) -> Relation:
    return Relation(
        OIDS["customers"],
        "public",
        "customers",
        "d",
        (
            RelationColumn(True, "id", INT4, -1),
            RelationColumn(False, "name", VARCHAR, 255 + 4),
            RelationColumn(False, "balance", NUMERIC, ((10 << 16) | 2) + 4),
            RelationColumn(False, "note", TEXT, -1),
            RelationColumn(False, "mood", OIDS["mood"], -1),
        ),
        xid,
    )


AUDIT = Relation(
    OIDS["audit"],
    "public",
    "audit",
    "f",
    (RelationColumn(True, "id", INT4, -1), RelationColumn(True, "payload", TEXT, -1)),
)
GONE = Relation(OIDS["gone"], "public", "gone", "d", (RelationColumn(True, "id", INT4, -1),))
MOOD = Type(OIDS["mood"], "public", "mood")
ZOE = "Zoë Ümlaut 日本語 🐘"


# ---------------------------------------------------------------------------------------------
# Protocol version 1, text values
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def v1() -> list[Any]:
    msgs = [msg for in_stream, msg in decode_session(load("v1_text.bin"))]
    return split_transactions(msgs)


def test_v1_session_shape(v1: list[Any]) -> None:
    kinds = [type(x).__name__ for x in v1]
    assert kinds == ["tuple"] * 7 + ["LogicalMessage"] + ["tuple"] * 3 + ["LogicalMessage"]


def test_insert_with_type_relation_nulls_and_utf8(v1: list[Any]) -> None:
    cust = OIDS["customers"]
    assert check_tx(v1[0], "insert_customers") == [
        MOOD,
        customers_relation(),
        Insert(cust, ("1", "Ada", "12.50", None, "happy")),
        Insert(cust, ("2", ZOE, "-3.10", 'multi\nline "quoted"', None)),
        Insert(cust, ("3", "", "0.00", "", "ok")),
    ]


def test_relation_typmods(v1: list[Any]) -> None:
    rel = check_tx(v1[0], "insert_customers")[1]
    assert isinstance(rel, Relation)
    assert [c.type_modifier for c in rel.columns] == [-1, 259, 655366, -1, -1]
    # numeric typmod = ((precision << 16) | scale) + VARHDRSZ
    typmod = rel.columns[2].type_modifier - 4
    assert (typmod >> 16, typmod & 0xFFFF) == (10, 2)


def test_update_default_identity_has_no_old_tuple(v1: list[Any]) -> None:
    assert check_tx(v1[1], "update_default") == [
        Update(OIDS["customers"], None, None, ("1", "Ada", "99.99", None, "happy"))
    ]


def test_update_changing_primary_key_sends_key_only_old_tuple(v1: list[Any]) -> None:
    # The 'K' tuple has one entry per column; non-key columns arrive as NULLs.
    assert check_tx(v1[2], "update_pk") == [
        Update(
            OIDS["customers"],
            ("2", None, None, None, None),
            "K",
            ("20", ZOE, "-3.10", 'multi\nline "quoted"', None),
        )
    ]


def test_delete_default_identity(v1: list[Any]) -> None:
    assert check_tx(v1[3], "delete_default") == [
        Delete(OIDS["customers"], ("3", None, None, None, None), "K")
    ]


def test_replica_identity_full(v1: list[Any]) -> None:
    audit = OIDS["audit"]
    assert check_tx(v1[4], "audit_full") == [
        AUDIT,
        Insert(audit, ("1", "a")),
        Insert(audit, ("2", None)),
        Update(audit, ("1", "a"), "O", ("1", "b")),
        Delete(audit, ("2", None), "O"),
    ]


def test_unchanged_toast_value(v1: list[Any]) -> None:
    body = check_tx(v1[5], "toast_update")
    docs = Relation(
        OIDS["docs"],
        "public",
        "docs",
        "d",
        (
            RelationColumn(True, "id", INT4, -1),
            RelationColumn(False, "title", TEXT, -1),
            RelationColumn(False, "body", TEXT, -1),
        ),
    )
    assert body == [docs, Update(OIDS["docs"], None, None, ("1", "v2", UNCHANGED_TOAST))]
    update = body[1]
    assert isinstance(update, Update)
    assert update.new[2] is UNCHANGED_TOAST


def test_transactional_and_non_transactional_messages(v1: list[Any]) -> None:
    assert check_tx(v1[6], "tx_message") == [
        GONE,
        Insert(OIDS["gone"], ("1",)),
        Insert(OIDS["gone"], ("2",)),
        LogicalMessage(True, MSG_LSN["tx_message"], "hw.test", b"tx payload"),
    ]
    # Non-transactional messages arrive on their own, outside Begin/Commit.
    assert v1[7] == LogicalMessage(False, MSG_LSN["nontx_message"], "hw.bin", b"\x00\xff\x10")
    assert v1[11] == LogicalMessage(False, MSG_LSN["end-v1"], "hw.capture", b"end-v1")


def test_truncate(v1: list[Any]) -> None:
    # TRUNCATE invalidates the relcache, so pgoutput re-sends Relation messages first.
    assert check_tx(v1[8], "truncate_plain") == [GONE, Truncate((OIDS["gone"],), False, False)]
    assert check_tx(v1[9], "truncate_cascade") == [
        GONE,
        AUDIT,
        Truncate((OIDS["gone"], OIDS["audit"]), True, True),
    ]


def test_origin(v1: list[Any]) -> None:
    assert check_tx(v1[10], "origin") == [
        Origin(parse_lsn("1/2345678"), "hw_origin"),
        GONE,
        Insert(OIDS["gone"], ("3",)),
    ]


def test_commit_timestamps_are_unix_microseconds(v1: list[Any]) -> None:
    begin = v1[0][0]
    # The manifest holds extract(epoch from pg_xact_commit_timestamp(xid)) * 1e6.
    assert begin.commit_ts_us == TS["insert_customers"]
    assert 1_600_000_000_000_000 < begin.commit_ts_us < 4_000_000_000_000_000


def test_transaction_lsns_increase(v1: list[Any]) -> None:
    commits = [tx[2] for tx in v1 if type(tx) is tuple]  # (Begin, body, Commit)
    assert len(commits) == 10
    for prev, nxt in itertools.pairwise(commits):
        assert prev.end_lsn <= nxt.commit_lsn


# ---------------------------------------------------------------------------------------------
# Binary values
# ---------------------------------------------------------------------------------------------


def test_binary_values() -> None:
    msgs = split_transactions([m for _, m in decode_session(load("v1_binary.bin"))])
    numeric_1_50 = struct.pack("!hhhhhh", 2, 0, 0, 2, 1, 5000)  # ndigits weight sign dscale 1 5000
    assert check_tx(msgs[0], "insert_binary") == [
        MOOD,
        customers_relation(),
        Insert(OIDS["customers"], (struct.pack("!i", 4), b"Bin", numeric_1_50, b"x", b"ok")),
    ]
    assert msgs[1] == LogicalMessage(False, MSG_LSN["end-bin"], "hw.capture", b"end-bin")


# ---------------------------------------------------------------------------------------------
# Protocol version 2: streamed in-progress transactions
# ---------------------------------------------------------------------------------------------


class StreamedTx:
    def __init__(self) -> None:
        self.segments: list[StreamStart] = []
        self.changes: list[PgOutputMessage] = []
        self.aborts: list[StreamAbort] = []
        self.end: StreamCommit | StreamAbort | None = None


@pytest.fixture(scope="module")
def v2() -> tuple[dict[int, StreamedTx], list[PgOutputMessage]]:
    txs: dict[int, StreamedTx] = {}
    outside: list[PgOutputMessage] = []
    current: StreamedTx | None = None
    for in_stream, msg in decode_session(load("v2_stream.bin")):
        if isinstance(msg, StreamStart):
            current = txs.setdefault(msg.xid, StreamedTx())
            current.segments.append(msg)
        elif isinstance(msg, StreamStop):
            current = None
        elif in_stream:
            assert current is not None
            current.changes.append(msg)
        elif isinstance(msg, StreamCommit):
            txs[msg.xid].end = msg
        elif isinstance(msg, StreamAbort):
            if msg.subxid == msg.xid:
                txs[msg.xid].end = msg
            else:
                txs[msg.xid].aborts.append(msg)
        else:
            outside.append(msg)
    return txs, outside


def _check_segments(tx: StreamedTx, xid: int) -> None:
    assert len(tx.segments) >= 2  # 64kB logical_decoding_work_mem forced several segments
    assert tx.segments[0] == StreamStart(xid, True)
    assert all(s == StreamStart(xid, False) for s in tx.segments[1:])


def test_stream_commit(v2: tuple[dict[int, StreamedTx], list[PgOutputMessage]]) -> None:
    txs, _ = v2
    xid = XIDS["stream_commit"]
    tx = txs[xid]
    _check_segments(tx, xid)
    cust = OIDS["customers"]
    # Inside a stream every data message carries the transaction's xid.
    assert tx.changes == [
        Type(OIDS["mood"], "public", "mood", xid),
        customers_relation(xid),
        Insert(cust, ("100", "stream-a", "1.00", None, None), xid),
        LogicalMessage(True, MSG_LSN["stream_message"], "hw.stream", b"in stream", xid),
        Insert(cust, ("101", "stream-b", "2.00", None, None), xid),
    ]
    end = tx.end
    assert isinstance(end, StreamCommit)
    assert (end.xid, end.flags, end.commit_ts_us) == (xid, 0, TS["stream_commit"])
    assert end.end_lsn > end.commit_lsn > MSG_LSN["stream_message"]


def test_stream_abort_of_top_level_transaction(
    v2: tuple[dict[int, StreamedTx], list[PgOutputMessage]],
) -> None:
    txs, _ = v2
    xid = XIDS["stream_abort"]
    tx = txs[xid]
    _check_segments(tx, xid)
    assert tx.changes == [
        Type(OIDS["mood"], "public", "mood", xid),
        customers_relation(xid),
        Insert(OIDS["customers"], ("200", "doomed", "3.00", None, None), xid),
    ]
    assert tx.end == StreamAbort(xid, xid)
    assert TS["stream_abort"] is None  # it never committed


def test_stream_abort_of_subtransaction(
    v2: tuple[dict[int, StreamedTx], list[PgOutputMessage]],
) -> None:
    txs, _ = v2
    top = XIDS["stream_subabort"]
    tx = txs[top]
    _check_segments(tx, top)
    cust = OIDS["customers"]
    # Changes made under a savepoint carry the *subtransaction's* xid, so that
    # StreamAbort(top, subxid) can discard exactly them.
    rolled_back = tx.changes[3]
    assert isinstance(rolled_back, Insert)
    sub = rolled_back.xid
    assert sub is not None and sub != top
    assert tx.aborts == [StreamAbort(top, sub)]
    # ROLLBACK TO SAVEPOINT re-opens the savepoint: the next insert is in a new subtransaction,
    # and pgoutput re-sends Type/Relation after the subtransaction abort.
    after = tx.changes[6]
    assert isinstance(after, Insert)
    sub2 = after.xid
    assert sub2 not in (None, top, sub)
    assert tx.changes == [
        Type(OIDS["mood"], "public", "mood", top),
        customers_relation(top),
        Insert(cust, ("300", "kept", "4.00", None, None), top),
        Insert(cust, ("301", "rolled back", "5.00", None, None), sub),
        Type(OIDS["mood"], "public", "mood", sub2),
        customers_relation(sub2),
        Insert(cust, ("302", "after", "6.00", None, None), sub2),
    ]
    end = tx.end
    assert isinstance(end, StreamCommit)
    assert (end.xid, end.commit_ts_us) == (top, TS["stream_subabort"])


def test_stream_session_has_nothing_else(
    v2: tuple[dict[int, StreamedTx], list[PgOutputMessage]],
) -> None:
    txs, outside = v2
    assert set(txs) == {XIDS["stream_commit"], XIDS["stream_abort"], XIDS["stream_subabort"]}
    assert outside == [LogicalMessage(False, MSG_LSN["end-v2"], "hw.capture", b"end-v2")]


def test_stream_message_decoded_without_in_stream_fails_clearly() -> None:
    raw = load("v2_stream.bin")
    insert = next(m for m in raw if m[:1] == b"I")
    with pytest.raises(
        PgOutputError, match=r"Insert.*expected 'N'.*offset 5 .*without in_stream\?"
    ):
        decode(insert)
    streamed_update = b"U" + struct.pack("!II", 9, 42) + b"N" + tup(text(b"x"))
    with pytest.raises(PgOutputError, match=r"Update.*got b'\\x00' at offset 5.*without in_stream"):
        decode(streamed_update)
    assert decode(streamed_update, in_stream=True) == Update(42, None, None, ("x",), 9)


# ---------------------------------------------------------------------------------------------
# Robustness over every captured message
# ---------------------------------------------------------------------------------------------

ALL_RAW: list[tuple[bytes, bool]] = []
for _name in ("v1_text.bin", "v1_binary.bin", "v2_stream.bin"):
    _in = False
    for _data in load(_name):
        ALL_RAW.append((_data, _in))
        if _data[:1] == b"S":
            _in = True
        elif _data[:1] == b"E":
            _in = False


def test_every_truncation_raises_pgoutput_error() -> None:
    for data, in_stream in ALL_RAW:
        for cut in range(len(data)):
            with pytest.raises(PgOutputError):
                decode(data[:cut], in_stream)


def test_trailing_bytes_raise() -> None:
    for data, in_stream in ALL_RAW:
        with pytest.raises(PgOutputError, match="trailing"):
            decode(data + b"\x00", in_stream)


def test_random_corruption_raises_only_pgoutput_error() -> None:
    rng = random.Random(1234)
    for data, in_stream in ALL_RAW:
        for _ in range(40):
            buf = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                buf[rng.randrange(len(buf))] = rng.randrange(256)
            with contextlib.suppress(PgOutputError):
                decode(bytes(buf), in_stream)


def _outcome(data: bytes, in_stream: bool) -> Any:
    """What `decode` makes of `data`: the message, or the error's type and text."""
    try:
        return decode(data, in_stream)
    except PgOutputError as exc:
        return (type(exc), str(exc))


def test_compiled_row_reader_decodes_as_the_python_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The compiled TupleData reader (_tupledata.c) gives the messages, and for malformed
    bytes the errors, the Python loop gives: every fixture message, its truncations and
    random corruptions, each decoded with and without it."""
    assert vars(pgoutput)["_read_tuple"] is not None, "build it: setup.py build_ext --inplace"
    rng = random.Random(4321)
    cases: list[tuple[bytes, bool]] = []
    for data, in_stream in ALL_RAW:
        cases.append((data, in_stream))
        cases.extend((data[:cut], in_stream) for cut in range(len(data)))
        for _ in range(40):
            buf = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                buf[rng.randrange(len(buf))] = rng.randrange(256)
            cases.append((bytes(buf), in_stream))
    compiled = [_outcome(data, in_stream) for data, in_stream in cases]
    monkeypatch.setattr(pgoutput, "_read_tuple", None)
    assert [_outcome(data, in_stream) for data, in_stream in cases] == compiled


def test_memoryview_and_bytearray_input() -> None:
    data, in_stream = ALL_RAW[3]
    expected = decode(data, in_stream)
    assert decode(memoryview(data), in_stream) == expected
    assert decode(memoryview(b"xx" + data)[2:], in_stream) == expected
    assert decode(bytearray(data), in_stream) == expected  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Hand-built messages
# ---------------------------------------------------------------------------------------------


def text(value: bytes) -> bytes:
    return b"t" + struct.pack("!I", len(value)) + value


def tup(*cols: bytes) -> bytes:
    return struct.pack("!H", len(cols)) + b"".join(cols)


def test_begin_epoch_conversion() -> None:
    msg = b"B" + struct.pack("!QqI", 0x16B374D848, 0, 7)
    assert decode(msg) == Begin(0x16B374D848, PG_EPOCH_OFFSET_US, 7)
    assert PG_EPOCH_OFFSET_US == 946_684_800 * 1_000_000
    negative = b"B" + struct.pack("!QqI", 1, -1, 7)  # before 2000-01-01
    assert decode(negative) == Begin(1, PG_EPOCH_OFFSET_US - 1, 7)


def test_all_column_kinds() -> None:
    cols = tup(b"n", b"u", text("é".encode()), b"b\0\0\0\2\x01\x02")
    msg = b"I" + struct.pack("!I", 42) + b"N" + cols
    assert decode(msg) == Insert(42, (None, UNCHANGED_TOAST, "é", b"\x01\x02"))
    in_stream = b"I" + struct.pack("!II", 9, 42) + b"N" + tup(text(b""), b"b\0\0\0\0")
    assert decode(in_stream, in_stream=True) == Insert(42, ("", b""), 9)


def test_update_and_delete_in_stream() -> None:
    upd = b"U" + struct.pack("!II", 9, 42) + b"O" + tup(text(b"a")) + b"N" + tup(text(b"b"))
    assert decode(upd, True) == Update(42, ("a",), "O", ("b",), 9)
    dele = b"D" + struct.pack("!II", 9, 42) + b"K" + tup(text(b"a"))
    assert decode(dele, True) == Delete(42, ("a",), "K", 9)
    trunc = b"T" + struct.pack("!IIBI", 9, 1, 2, 42)
    assert decode(trunc, True) == Truncate((42,), False, True, 9)


def test_zero_column_tuple() -> None:
    assert decode(b"I" + struct.pack("!I", 1) + b"N" + tup()) == Insert(1, ())


def test_relation_other_identities_and_pg_catalog_namespace() -> None:
    for ident in "nid":
        msg = b"R" + struct.pack("!I", 5) + b"\0t\0" + ident.encode() + struct.pack("!H", 0)
        assert decode(msg) == Relation(5, "pg_catalog", "t", ident, ())
    assert decode(b"Y" + struct.pack("!I", 77) + b"\0typ\0") == Type(77, "pg_catalog", "typ")


def test_stream_abort_protocol_4_fields() -> None:
    msg = b"A" + struct.pack("!IIQq", 10, 11, 0x1234, 5)
    assert decode(msg) == StreamAbort(10, 11, 0x1234, PG_EPOCH_OFFSET_US + 5)
    assert decode(b"A" + struct.pack("!II", 10, 10)) == StreamAbort(10, 10)


def test_stream_stop_and_start() -> None:
    assert decode(b"E") == StreamStop()
    assert decode(b"S" + struct.pack("!IB", 3, 0)) == StreamStart(3, False)


@pytest.mark.parametrize(
    ("data", "pattern"),
    [
        (b"", r"empty message"),
        (b"Z\0\0", r"unknown message \(type byte b'Z'\).*unknown message type at offset 0"),
        (b"b" + bytes(40), r"Begin Prepare.*two-phase commit messages are not supported"),
        (b"B\0\0\0", r"Begin message \(type byte b'B'\): truncated: expected Int64 final LSN"),
        (b"C" + bytes(24), r"Commit message.*truncated.*offset 1 \(message is 25 bytes\)"),
        (b"I\0\0\0\1K" + tup(), r"Insert.*expected 'N' \(new tuple\), got b'K' at offset 5"),
        (b"I\0\0\0\1N\0", r"Insert.*truncated.*offset 1"),
        (
            b"I\0\0\0\1N" + tup(text(b"ab"), b"t\0\0\0\x0aabc"),
            r"Insert.*value of column 1 of 2 declares 7 more bytes.*offset 23 "
            r"\(message is 23 bytes\)",
        ),
        (
            b"I\0\0\0\1N" + tup(text(b"ab"), b"t\0\0"),
            r"Insert.*expected 4-byte value length of column 1 of 2 at offset 16",
        ),
        (b"I\0\0\0\1N\0\2n", r"Insert.*expected kind byte of column 1 of 2 at offset 9"),
        (b"I\0\0\0\1N" + tup(b"x"), r"unknown column kind b'x' for column 0.* at offset 8"),
        (
            b"I\0\0\0\1N" + tup(text(b"a\xffb")),
            r"invalid UTF-8 in text value of column 0 at offset 14",
        ),
        (b"I\0\0\0\1N" + tup(b"n") + b"zz", r"Insert.*2 unexpected trailing bytes at offset 9"),
        (b"U\0\0\0\1Q", r"Update.*expected 'K', 'O' or 'N', got b'Q' at offset 5"),
        (b"U\0\0\0\1K" + tup(b"n") + b"X" + tup(), r"Update.*expected 'N' \(new tuple\), got b'X'"),
        (b"D\0\0\0\1N" + tup(b"n"), r"Delete.*expected 'K' or 'O', got b'N' at offset 5"),
        (b"R\0\0\0\1public\0t\0z\0\0", r"Relation.*unknown replica identity b'z'"),
        (b"R\0\0\0\1public\0tab", r"Relation.*expected NUL-terminated relation name at offset 12"),
        (b"R\0\0\0\1public\0t\0d\0\1\1id\0\0\0", r"Relation.*type modifier of column 0 of 1"),
        (b"M\1" + bytes(8) + b"p\0\0\0\0\5abc", r"Message.*5 content bytes, 3 present"),
        (b"T\0\0\0\3\0\0\0\0\1", r"Truncate.*expected 3 Int32 relation oids at offset 6"),
        (b"Y\0\0\0\1\xff\0t\0", r"Type.*invalid UTF-8 in namespace at offset 5"),
    ],
)
def test_errors(data: bytes, pattern: str) -> None:
    with pytest.raises(PgOutputError, match=pattern):
        decode(data)


def test_error_is_value_error() -> None:
    assert issubclass(PgOutputError, ValueError)


# ---------------------------------------------------------------------------------------------
# LSN helpers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text_lsn", "value"),
    [
        ("0/0", 0),
        ("16/B374D848", 0x16_B374_D848),
        ("0/2249D80", 0x2249D80),
        ("FFFFFFFF/FFFFFFFF", 2**64 - 1),
    ],
)
def test_lsn_round_trip(text_lsn: str, value: int) -> None:
    assert parse_lsn(text_lsn) == value
    assert format_lsn(value) == text_lsn


def test_parse_lsn_accepts_lowercase_and_leading_zeros() -> None:
    assert parse_lsn("16/b374d848") == parse_lsn("00000016/B374D848") == 0x16_B374_D848


def test_manifest_lsns_match_server_formatting() -> None:
    for text_lsn in MANIFEST["message_lsns"].values():
        assert format_lsn(parse_lsn(text_lsn)) == text_lsn


@pytest.mark.parametrize(
    "bad", ["", "1", "1/", "/1", "G/1", "123456789/0", "1/2/3", " 1/2", "1/+2"]
)
def test_parse_lsn_rejects(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid LSN"):
        parse_lsn(bad)


@pytest.mark.parametrize("bad", [-1, 2**64])
def test_format_lsn_rejects_out_of_range(bad: int) -> None:
    with pytest.raises(ValueError, match="out of range"):
        format_lsn(bad)
