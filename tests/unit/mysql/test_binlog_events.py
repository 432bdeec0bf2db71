"""Binlog event parsing from bytes captured from MariaDB 10.11 (tests/fixtures/binlog) and
from hand-built bytes for what MariaDB does not write (MySQL's v2 rows and GTID events)."""

from __future__ import annotations

import itertools
import struct
import zlib
from pathlib import Path

import pytest

from headwater.connectors.mysql.binlog import events as ev
from headwater.connectors.mysql.binlog.events import (
    AnnotateRows,
    BinlogCheckpoint,
    BinlogEvent,
    BinlogFormatError,
    BinlogParser,
    FormatDescription,
    GtidList,
    Heartbeat,
    MariaGtid,
    MySqlGtid,
    Query,
    Rotate,
    RowsEvent,
    Stop,
    TableMap,
    UnknownEvent,
    XaPrepare,
    Xid,
    split_binlog_file,
)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "binlog"


def file_events(name: str, file: str = "f.000001") -> list[BinlogEvent]:
    parser = BinlogParser(file=file)
    return [parser.parse(e) for e in split_binlog_file((FIXTURES / name).read_bytes())]


def stream_packets() -> list[bytes]:
    data = (FIXTURES / "stream.bin").read_bytes()
    out, pos = [], 0
    while pos < len(data):
        (n,) = struct.unpack_from("<I", data, pos)
        out.append(data[pos + 4:pos + 4 + n])
        pos += 4 + n
    return out


def bodies(events: list[BinlogEvent], kind: type) -> list:  # type: ignore[type-arg]
    return [e.body for e in events if isinstance(e.body, kind)]


@pytest.fixture(scope="module")
def types_events() -> list[BinlogEvent]:
    return file_events("types.bin")


def test_positions_chain_and_match_log_pos(types_events: list[BinlogEvent]) -> None:
    assert types_events[0].position == 4
    for prev, cur in itertools.pairwise(types_events):
        assert cur.position == prev.log_pos
        assert cur.log_pos - cur.position == cur.event_size
    assert all(e.file == "f.000001" for e in types_events)


def test_format_description(types_events: list[BinlogEvent]) -> None:
    fde = types_events[0].body
    assert isinstance(fde, FormatDescription)
    assert fde.binlog_version == 4
    assert fde.server_version.startswith("10.11")
    assert fde.checksum_alg == ev.CHECKSUM_CRC32
    assert fde.post_header_lengths[ev.TABLE_MAP_EVENT - 1] == 8
    assert fde.post_header_lengths[ev.WRITE_ROWS_EVENT_V1 - 1] == 8


def test_gtid_list_and_checkpoint(types_events: list[BinlogEvent]) -> None:
    assert bodies(types_events, GtidList)[0] == GtidList(((0, 1, 5),), 0)
    assert [c.file for c in bodies(types_events, BinlogCheckpoint)] == [
        "mariadb-bin.000001", "mariadb-bin.000002"]


def test_mariadb_gtid_events(types_events: list[BinlogEvent]) -> None:
    gtids = bodies(types_events, MariaGtid)
    assert [g.seq_no for g in gtids] == list(range(6, 28))
    ddl = gtids[0]  # CREATE TABLE ints
    assert ddl.standalone and ddl.flags & ev.FL_DDL
    assert ddl.gtid == "0-1-6"
    dml = gtids[1]
    assert not dml.standalone and dml.flags & ev.FL_TRANSACTIONAL
    xa_prepare = next(g for g in gtids if g.flags & ev.FL_PREPARED_XA)
    assert xa_prepare.xa_xid == b"\x01\x00\x00\x00xa1"
    xa_commit = next(g for g in gtids if g.flags & ev.FL_COMPLETED_XA)
    assert xa_commit.standalone and xa_commit.seq_no == xa_prepare.seq_no + 1


def test_query_event(types_events: list[BinlogEvent]) -> None:
    q = bodies(types_events, Query)[0]
    assert q.database == "fx"
    assert q.sql.startswith("CREATE TABLE ints (id INT PRIMARY KEY")
    assert q.error_code == 0 and q.thread_id > 0
    assert q.sql_mode == 0  # the session ran with sql_mode=''
    assert q.charset == (45, 45, 224)  # utf8mb4 client, utf8mb4_general_ci, server collation
    alter = bodies(types_events, Query)[-1]
    assert alter.sql == "ALTER TABLE many ADD COLUMN extra INT"
    assert alter.sql_mode != 0  # a new session with the server default


def test_annotate_rows_xid_xa_rotate(types_events: list[BinlogEvent]) -> None:
    assert bodies(types_events, AnnotateRows)[0].sql.startswith("INSERT INTO ints VALUES (1,")
    assert all(isinstance(x.xid, int) and x.xid > 0 for x in bodies(types_events, Xid))
    assert bodies(types_events, XaPrepare) == [XaPrepare(False, 1, b"xa1", b"")]
    last = types_events[-1]
    assert last.body == Rotate(4, "mariadb-bin.000003")
    assert last.file == "f.000001"  # the rotate belongs to the file it ends


def test_table_map_full_metadata(types_events: list[BinlogEvent]) -> None:
    maps = {t.table: t for t in bodies(types_events, TableMap)}
    ints = maps["ints"]
    assert ints.database == "fx"
    assert ints.column_names == ("id", "t", "tu", "s", "su", "m", "mu", "i", "iu", "b", "bu",
                                 "y", "bo")
    assert ints.column_types == bytes([3, 1, 1, 2, 2, 9, 9, 3, 3, 8, 8, 13, 1])
    # MariaDB counts YEAR (unsigned) in the signedness bitmap.
    assert ints.unsigned == (False, False, True, False, True, False, True, False, True, False,
                             True, True, False)
    assert ints.primary_key == (0,) and ints.primary_key_prefixes == (0,)
    assert ints.nullable[0] is False and all(ints.nullable[1:])
    strs = maps["strs"]
    names = strs.column_names
    assert names is not None
    col = {n: i for i, n in enumerate(names)}
    assert strs.enum_values is not None and strs.set_values is not None
    assert strs.enum_values[col["e"]] == ("a", "b", "c")
    assert strs.set_values[col["st"]] == tuple("xyzwvutsr")
    assert strs.collations is not None
    assert strs.collations[col["vl"]] == 8  # latin1_swedish_ci
    assert strs.collations[col["c"]] == 45  # the database default, utf8mb4_general_ci
    assert strs.collations[col["bn"]] == 63 and strs.collations[col["bl"]] == 63
    assert strs.collations[col["j"]] == 46  # MariaDB JSON: LONGTEXT utf8mb4_bin
    assert strs.collations[col["g"]] == 63  # MariaDB lists GEOMETRY as binary text
    assert strs.collations[col["id"]] is None
    assert strs.geometry_types is not None
    assert strs.geometry_types[col["g"]] == 0 and strs.geometry_types[col["p"]] == 1
    # Metadata: CHAR(255) utf8mb4 = 1020 bytes, hidden in STRING's two bytes.
    assert ev.real_type(strs.column_types[col["e"]], strs.column_meta[col["e"]]) == ev.T_ENUM
    assert ev.real_type(strs.column_types[col["st"]], strs.column_meta[col["st"]]) == ev.T_SET
    assert strs.column_meta[col["v300"]] == 1200
    assert strs.column_meta[col["b10"]] == 10 and strs.column_meta[col["b64"]] == 64
    nums = maps["nums"]
    assert nums.column_meta[3] == (10 << 8 | 2) and nums.column_meta[4] == (65 << 8 | 30)
    assert nums.column_meta[1:3] == (4, 8)
    temporal = maps["temporal"]
    assert temporal.column_types[1:6] == bytes([ev.T_DATE, ev.T_DATETIME2, ev.T_DATETIME2,
                                                ev.T_DATETIME2, ev.T_TIMESTAMP2])
    assert temporal.column_meta[2:6] == (0, 6, 3, 6)


def test_rows_events_v1_and_compressed(types_events: list[BinlogEvent]) -> None:
    rows = [(e.type_code, e.body) for e in types_events if isinstance(e.body, RowsEvent)]
    kinds = [(t, b.kind) for t, b in rows]
    assert (ev.WRITE_ROWS_EVENT_V1, "insert") in kinds
    assert (ev.UPDATE_ROWS_EVENT_V1, "update") in kinds
    assert (ev.DELETE_ROWS_EVENT_V1, "delete") in kinds
    assert kinds[-3:] == [(ev.WRITE_ROWS_COMPRESSED_EVENT_V1, "insert"),
                          (ev.UPDATE_ROWS_COMPRESSED_EVENT_V1, "update"),
                          (ev.DELETE_ROWS_COMPRESSED_EVENT_V1, "delete")]
    first = rows[0][1]
    assert first.column_count == 13 and first.columns_present == 0x1FFF
    assert first.statement_end
    update = next(b for _, b in rows if b.kind == "update")
    assert update.columns_present_after == 0x1FFF


def test_old_temporal_types_and_stop() -> None:
    events = file_events("old_temporal.bin")
    tm = bodies(events, TableMap)[0]
    assert tm.column_types == bytes([ev.T_LONG, ev.T_DATETIME, ev.T_TIME, ev.T_TIMESTAMP])
    assert isinstance(events[-1].body, Stop)


def test_stream_artificial_events_and_heartbeats() -> None:
    parser = BinlogParser(checksum=True, file="", position=4)
    events = [parser.parse(p) for p in stream_packets()]
    rotate = events[0]
    assert rotate.flags & ev.LOG_EVENT_ARTIFICIAL_F and rotate.log_pos == 0
    assert rotate.body == Rotate(4, "mariadb-bin.000003")
    assert all(e.file == "mariadb-bin.000003" for e in events)
    fake_list = next(e for e in events[2:] if isinstance(e.body, GtidList)
                     and e.flags & ev.LOG_EVENT_ARTIFICIAL_F)
    assert fake_list.body == GtidList(((0, 1, 28),), 0)
    gtid = next(e for e in events if isinstance(e.body, MariaGtid))
    assert gtid.position == fake_list.log_pos == 583  # resumes right after the start GTID
    beats = [e for e in events if isinstance(e.body, Heartbeat)]
    assert len(beats) == 2
    assert beats[0].body == Heartbeat("mariadb-bin.000003", 948)
    assert beats[0].position == 948
    xid = next(e for e in events if isinstance(e.body, Xid))
    assert xid.log_pos == 948


def test_checksum_mismatch_is_an_error() -> None:
    packets = split_binlog_file((FIXTURES / "types.bin").read_bytes())
    parser = BinlogParser()
    parser.parse(packets[0])
    bad = bytearray(packets[1])
    bad[25] ^= 0xFF
    with pytest.raises(BinlogFormatError, match="CRC32"):
        parser.parse(bytes(bad))
    lax = BinlogParser(verify=False)
    lax.parse(packets[0])
    assert isinstance(lax.parse(bytes(bad)), BinlogEvent)


def test_size_mismatch_and_truncation_are_errors() -> None:
    packets = split_binlog_file((FIXTURES / "types.bin").read_bytes())
    parser = BinlogParser()
    parser.parse(packets[0])
    with pytest.raises(BinlogFormatError, match="header says"):
        parser.parse(packets[1][:-3])
    with pytest.raises(BinlogFormatError, match="shorter than a header"):
        parser.parse(b"\x00" * 10)
    with pytest.raises(BinlogFormatError, match="bad magic"):
        split_binlog_file(b"nope")


# ---- hand-built events (no checksum) -----------------------------------------------------------


def build(type_code: int, body: bytes, *, log_pos: int = 1000, flags: int = 0,
          crc: bool = False) -> bytes:
    size = 19 + len(body) + (4 if crc else 0)
    data = struct.pack("<IBIIIH", 1_700_000_000, type_code, 7, size, log_pos, flags) + body
    return data + struct.pack("<I", zlib.crc32(data)) if crc else data


def test_unknown_events_are_skipped_by_size() -> None:
    parser = BinlogParser()
    event = parser.parse(build(200, b"whatever", log_pos=131))
    assert isinstance(event.body, UnknownEvent) and event.body.payload == b"whatever"
    assert event.position == 131 - event.event_size and parser.position == 131


def test_checksummed_hand_built_event_is_verified_and_stripped() -> None:
    parser = BinlogParser(checksum=True)
    event = parser.parse(build(ev.XID_EVENT, struct.pack("<Q", 42), crc=True))
    assert event.body == Xid(42)


def test_mysql_v2_rows_event_with_extra_data() -> None:
    # WRITE_ROWS v2: table id, flags, extra-data length (2 + 3 bytes of extra), then body.
    body = (struct.pack("<IHHH", 9, 0, 1, 5) + b"\x01\x02\x03"  # table id 6 bytes = 9,0
            + b"\x02" + b"\x03"  # 2 columns, both present
            + b"\x00" + struct.pack("<ii", 5, -6))  # null bitmap, values
    event = BinlogParser().parse(build(ev.WRITE_ROWS_EVENT_V2, body))
    rows = event.body
    assert isinstance(rows, RowsEvent)
    assert (rows.kind, rows.table_id, rows.column_count, rows.columns_present) == \
        ("insert", 9, 2, 3)
    assert rows.data[rows.rows_start:rows.rows_end] == b"\x00" + struct.pack("<ii", 5, -6)


def test_mysql_gtid_event() -> None:
    sid = bytes.fromhex("3e11fa47-71ca-11e1-9e33-c80aa9429562".replace("-", ""))
    event = BinlogParser().parse(build(ev.MYSQL_GTID_EVENT, b"\x01" + sid
                                       + struct.pack("<Q", 23) + b"\x02" + bytes(16)))
    assert event.body == MySqlGtid(1, "3e11fa47-71ca-11e1-9e33-c80aa9429562", 23)
    assert isinstance(event.body, MySqlGtid)
    assert event.body.gtid == "3e11fa47-71ca-11e1-9e33-c80aa9429562:23"


def test_mariadb_gtid_with_commit_id() -> None:
    body = struct.pack("<QIBQ", 99, 3, ev.FL_GROUP_COMMIT_ID | ev.FL_TRANSACTIONAL, 1234) + \
        bytes(6)
    event = BinlogParser().parse(build(ev.MARIADB_GTID_EVENT, body))
    assert event.body == MariaGtid(99, 3, 7, 6, 1234, None)
    assert isinstance(event.body, MariaGtid) and event.body.gtid == "3-7-99"


def test_heartbeat_stop_and_encrypted() -> None:
    parser = BinlogParser(file="b.000002", position=500)
    beat = parser.parse(build(ev.HEARTBEAT_LOG_EVENT, b"b.000002", log_pos=777,
                              flags=ev.LOG_EVENT_ARTIFICIAL_F))
    assert beat.body == Heartbeat("b.000002", 777) and beat.position == 777
    assert parser.position == 500  # a heartbeat is not an event of the file
    assert isinstance(parser.parse(build(ev.STOP_EVENT, b"")).body, Stop)
    with pytest.raises(BinlogFormatError, match="encrypted"):
        parser.parse(build(ev.START_ENCRYPTION_EVENT, bytes(17)))


@pytest.mark.parametrize(("code", "setting"), [
    (ev.PARTIAL_UPDATE_ROWS_EVENT, "binlog_row_value_options"),
    (ev.TRANSACTION_PAYLOAD_EVENT, "binlog_transaction_compression"),
])
def test_rows_in_a_form_not_decoded_raise_naming_the_setting(code: int, setting: str) -> None:
    """MySQL's partial JSON updates and compressed transactions carry rows: an error naming
    the event's place and the server setting that writes them, never an event passed over."""
    parser = BinlogParser(file="b.000003", position=4)
    with pytest.raises(BinlogFormatError, match=rf"b\.000003:.*{setting}"):
        parser.parse(build(code, bytes(40)))


def test_the_compressed_rows_and_statements_are_dispatched_as_the_plain_ones() -> None:
    assert {ev.WRITE_ROWS_COMPRESSED_EVENT_V1, ev.WRITE_ROWS_COMPRESSED_EVENT} <= ev.WRITE_ROWS
    assert {ev.UPDATE_ROWS_COMPRESSED_EVENT_V1, ev.UPDATE_ROWS_COMPRESSED_EVENT} <= ev.UPDATE_ROWS
    assert {ev.DELETE_ROWS_COMPRESSED_EVENT_V1, ev.DELETE_ROWS_COMPRESSED_EVENT} <= ev.DELETE_ROWS
    assert ev.QUERY_COMPRESSED_EVENT in ev.QUERY


def test_compressed_payload_header_errors() -> None:
    with pytest.raises(BinlogFormatError, match="header byte"):
        ev._uncompress(b"\x00abc")
    payload = zlib.compress(b"hello")
    assert ev._uncompress(b"\x81\x05" + payload) == b"hello"
    with pytest.raises(BinlogFormatError, match="header says"):
        ev._uncompress(b"\x81\x06" + payload)


def test_read_packed_int() -> None:
    assert ev.read_packed_int(b"\xfa", 0) == (250, 1)
    assert ev.read_packed_int(b"\xfc\x01\x02", 0) == (0x0201, 3)
    assert ev.read_packed_int(b"\xfd\x01\x02\x03", 0) == (0x030201, 4)
    assert ev.read_packed_int(b"\xfe" + struct.pack("<Q", 2**40), 0) == (2**40, 9)
    with pytest.raises(BinlogFormatError):
        ev.read_packed_int(b"\xff", 0)
