"""MariaDB GTID positions and MySQL GTID sets (MySQL paths need no server)."""

from __future__ import annotations

import pytest

from headwater.connectors.mysql.binlog.gtid import (
    GtidError,
    GtidSet,
    GtidSetError,
    MariadbGtid,
    MariaGtidPosition,
)
from headwater.connectors.mysql.config import validate_mysql_config

U1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
U2 = "5e11fa47-71ca-11e1-9e33-c80aa9429562"


def test_mariadb_gtid_round_trip() -> None:
    g = MariadbGtid.parse(" 0-1-10 ")
    assert g == MariadbGtid(0, 1, 10) and str(g) == "0-1-10"
    for bad in ("0-1", "a-1-2", "0-1-2-3", ""):
        with pytest.raises(GtidError):
            MariadbGtid.parse(bad)


def test_mariadb_position_parse_format_advance_contains() -> None:
    pos = MariaGtidPosition.parse("1-2-5,0-1-10")
    assert str(pos) == "0-1-10,1-2-5"
    assert pos.get(1) == MariadbGtid(1, 2, 5) and pos.get(7) is None
    assert pos.contains("0-1-10") and pos.contains("0-3-9") and not pos.contains("0-1-11")
    assert not pos.contains("2-1-1")
    later = pos.advance("0-3-11").advance(MariadbGtid(2, 1, 1))
    assert str(later) == "0-3-11,1-2-5,2-1-1"
    assert pos <= later and later >= pos and not later <= pos
    assert str(MariaGtidPosition.parse("")) == ""
    with pytest.raises(GtidError, match="twice"):
        MariaGtidPosition.parse("0-1-1,0-2-2")


def test_mysql_gtid_set_parse_merge_format() -> None:
    s = GtidSet.parse(f"{U2}:1-3,\n{U1.upper()}:1-5:7-9:6, {U1}:11")
    assert str(s) == f"{U1}:1-9:11,{U2}:1-3"
    assert GtidSet.parse(str(s)) == s
    assert s.contains(U1, 8) and not s.contains(U1, 10) and not s.contains(U2, 4)
    assert not s.contains("00000000-0000-0000-0000-000000000000", 1)
    # as SHOW MASTER STATUS prints it: a newline after each comma
    executed = GtidSet.parse(f"{U1}:1-42,\n{U2}:1-3:5")
    assert str(executed) == f"{U1}:1-42,{U2}:1-3:5"
    assert GtidSet.parse("") == GtidSet() and str(GtidSet()) == ""


@pytest.mark.parametrize(("bad", "names"), [
    ("nope:1", "'nope:1' is not a MySQL GTID set entry"),
    (f"{U1}", f"'{U1}' is not a MySQL GTID set entry"),
    (f"{U1}:1-5,0-1-7", "'0-1-7' is not a MySQL GTID set entry"),
    (f"{U1}:1- 5", f"'{U1}:1- 5' is not"),
    (f"{U1}:x", f"'{U1}:x' is not"),
    (f"{U1}:1-3:0", f"'{U1}:1-3:0': interval 0 is not n or n-m"),
    (f"{U1}:5-3", f"'{U1}:5-3': interval 5-3 is not n or n-m"),
    (f"{U2}:1-9223372036854775808", "interval 1-9223372036854775808 is not"),
])
def test_mysql_gtid_set_errors_name_the_bad_part(bad: str, names: str) -> None:
    with pytest.raises(GtidSetError) as err:
        GtidSet.parse(bad)
    assert names in str(err.value)
    assert isinstance(err.value, GtidError)


def test_mysql_gtid_set_add_union_subset() -> None:
    s = GtidSet.parse(f"{U1}:1-5")
    assert str(s.add(U1, 6)) == f"{U1}:1-6"
    assert str(s.add(U1, 8)) == f"{U1}:1-5:8"
    assert str(s.add(U1, 3)) == f"{U1}:1-5"  # already in
    assert str(s.add(U2.upper(), 1)) == f"{U1}:1-5,{U2}:1"
    assert str(GtidSet().add(U2, 1).add(U1, 9)) == f"{U1}:9,{U2}:1"  # uuids stay in order
    # a transaction filling the gap between two intervals joins them
    gap = GtidSet.parse(f"{U1}:1-5:7-9")
    assert str(gap.add_gtid(f"{U1}:6")) == f"{U1}:1-9"
    assert str(gap.add_gtid(f"{U1}:10")) == f"{U1}:1-5:7-10"
    assert str(gap.add_gtid(f"{U1}:12")) == f"{U1}:1-5:7-9:12"
    u = s.union(GtidSet.parse(f"{U1}:6-7,{U2}:2"))
    assert str(u) == f"{U1}:1-7,{U2}:2"
    assert s.is_subset_of(u) and not u.is_subset_of(s)
    assert GtidSet().is_subset_of(s)


def test_mysql_gtid_set_overridden_by_keeps_the_other_sets_uuids() -> None:
    purged = GtidSet.parse(f"{U1}:1-100,{U2}:1-7")
    offset = GtidSet.parse(f"{U1}:1-150:160")
    assert str(purged.overridden_by(offset)) == f"{U1}:1-150:160,{U2}:1-7"
    assert purged.overridden_by(GtidSet()) == purged


def test_gtid_source_includes_excludes_keep_uuids() -> None:
    s = GtidSet.parse(f"{U1}:1-5,{U2}:1-3")

    def kept(**props: str) -> str:
        cfg, _ = validate_mysql_config({"topic.prefix": "m", "database.hostname": "h",
                                        "database.user": "u", **props})
        return str(s.retain(cfg.gtid_source_filter))

    assert kept(**{"gtid.source.includes": "3e11.*"}) == f"{U1}:1-5"
    assert kept(**{"gtid.source.excludes": "3E11FA47-.*,other"}) == f"{U2}:1-3"
    assert kept() == str(s)
    assert kept(**{"gtid.source.includes": "3e11"}) == ""  # full match, not search


def test_mysql_gtid_set_encoding_as_mysql_sends_it() -> None:
    """Gtid_set::encode by hand: 2 sids; U1 with [1,6) and [7,10); U2 with [3,4)."""
    s = GtidSet.parse(f"{U2}:3,{U1}:1-5:7-9")
    expected = bytes.fromhex(
        "0200000000000000"  # n_sids
        "3e11fa4771ca11e19e33c80aa9429562"  # U1
        "0200000000000000"  # its intervals
        "0100000000000000" "0600000000000000"  # 1-5 as [1, 6)
        "0700000000000000" "0a00000000000000"  # 7-9 as [7, 10)
        "5e11fa4771ca11e19e33c80aa9429562"  # U2
        "0100000000000000"
        "0300000000000000" "0400000000000000")  # 3 as [3, 4)
    assert s.encoded() == expected
    assert GtidSet().encoded() == bytes(8)
