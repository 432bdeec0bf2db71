"""Which target rows validate takes as current (`validate/current.py`, `validate/target.py`),
on small Delta tables written the way each mode writes them, and the kinds of JDBC target
columns (`canonical.sql_kind`)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from headwater.validate.canonical import sql_kind, sql_text
from headwater.validate.model import TablePlan
from headwater.validate.target import DeltaSide


def plan(path: Path, mode: str) -> TablePlan:
    return TablePlan("s", "t", str(path), ("id",), (("id", "int"), ("v", "text")), True,
                     mode=mode)


def current(path: Path, mode: str) -> list[tuple[str, ...]]:
    return sorted(DeltaSide().rows(plan(path, mode), 1000, 1, {0}))


def test_changelog_latest_event_per_key_after_the_newest_truncate(tmp_path: Path) -> None:
    events = [  # (op, sequence, id, v): written out of order, as appends from batches are
        ("r", "02", 1, "a"), ("u", "05", 1, "b"), ("u", "04", 1, "older"),  # 1: b
        ("r", "02", 2, "x"), ("d", "06", 2, "x"),  # 2: deleted
        ("r", "02", 3, "gone"), ("t", "07", None, None),  # 3: truncated
        ("c", "08", 3, "again"), ("c", "09", 4, None),  # after the truncate
    ]
    write_deltalake(tmp_path, pa.table({
        "__op": [e[0] for e in events], "__hw_sequence": [e[1] for e in events],
        "id": pa.array([e[2] for e in events], pa.int32()), "v": [e[3] for e in events]}))
    assert current(tmp_path, "changelog") == [("3", "again"), ("4", "\\N")]
    write_deltalake(tmp_path, pa.table({"__op": ["t"], "__hw_sequence": ["03"],
                                        "id": pa.array([None], pa.int32()), "v": [None]}),
                    mode="append")  # an older truncate changes nothing
    assert current(tmp_path, "changelog") == [("3", "again"), ("4", "\\N")]


def test_changelog_without_truncates(tmp_path: Path) -> None:
    write_deltalake(tmp_path, pa.table({
        "__op": ["r", "u", "r"], "__hw_sequence": ["1", "2", "1"],
        "id": pa.array([1, 1, 2], pa.int32()), "v": ["a", "b", "c"]}))
    assert current(tmp_path, "changelog") == [("1", "b"), ("2", "c")]


def test_scd2_open_versions_only(tmp_path: Path) -> None:
    write_deltalake(tmp_path, pa.table({
        "id": pa.array([1, 1, 2, 3], pa.int32()), "v": ["old", "new", "closed", "open"],
        "__START_AT": ["1", "3", "1", "2"], "__END_AT": ["3", None, "4", None]}))
    assert current(tmp_path, "scd2") == [("1", "new"), ("3", "open")]
    assert current(tmp_path, "scd1") == [("1", "new"), ("1", "old"), ("2", "closed"),
                                         ("3", "open")]


@pytest.mark.parametrize(("declared", "kind"), [
    ("timestamp without time zone", "timestamp"), ("timestamp(3) with time zone", "timestamp"),
    ("DATETIME(6)", "timestamp"), ("date", "date"), ("boolean", "bool"), ("tinyint(1)", "bool"),
    ("tinyint(4)", "int"), ("bigint(20) unsigned", "int"),
    ("bigint unsigned", "int"), ("integer", "int"),
    ("numeric(12,2)", "decimal"), ("DECIMAL(20, 0)", "decimal"), ("double precision", "float"),
    ("text", "text"), ('text COLLATE "C"', "text"), ("longtext", "text"),
    ("interval", None), ("bytea", None), ("json", None), ("time without time zone", None),
])
def test_jdbc_column_kinds(declared: str, kind: str | None) -> None:
    assert sql_kind(declared) == kind


def test_null_marker_is_one_literal_in_both_dialects() -> None:
    # MariaDB reads backslash escapes in string literals: '\N' would be 'N'
    assert sql_text("mysql", "int", "`c`").endswith(", '\\\\N')")
    assert sql_text("postgres", "int", '"c"').endswith(", '\\N')")
