"""MariaDB GTID positions and MySQL GTID sets (MySQL paths need no server)."""

from __future__ import annotations

import pytest

from headwater.connectors.mysql.binlog.gtid import (
    GtidError,
    GtidSet,
    MariadbGtid,
    MariaGtidPosition,
    source_filter,
)

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
    for bad in ("nope:1", f"{U1}", f"{U1}:0", f"{U1}:5-3", f"{U1}:x"):
        with pytest.raises(GtidError):
            GtidSet.parse(bad)


def test_mysql_gtid_set_add_union_subset() -> None:
    s = GtidSet.parse(f"{U1}:1-5")
    assert str(s.add(U1, 6)) == f"{U1}:1-6"
    assert str(s.add(U1, 8)) == f"{U1}:1-5:8"
    assert str(s.add(U2, 1)) == f"{U1}:1-5,{U2}:1"
    u = s.union(GtidSet.parse(f"{U1}:6-7,{U2}:2"))
    assert str(u) == f"{U1}:1-7,{U2}:2"
    assert s.is_subset_of(u) and not u.is_subset_of(s)
    assert GtidSet().is_subset_of(s) and str(GtidSet()) == ""


def test_gtid_source_includes_excludes() -> None:
    s = GtidSet.parse(f"{U1}:1-5,{U2}:1-3")
    assert str(s.filter(includes="3e11.*")) == f"{U1}:1-5"
    assert str(s.filter(excludes="3E11FA47-.*, other")) == f"{U2}:1-3"
    assert s.filter() == s
    assert str(s.filter(includes="3e11")) == ""  # full match, not search
    keep = source_filter(None, f"{U2}")
    assert keep(U1) and not keep(U2)
