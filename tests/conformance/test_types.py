"""Each driver's types table, snapshotted and streamed: every value as Debezium's JSON
converter writes it, with the same JSON type (an int is not a float, a bool not an int)."""

from __future__ import annotations

import pytest

from .driver import Column
from .harness import Harness, wait

pytestmark = pytest.mark.integration


def test_types_table_in_snapshot_and_stream(cdc: Harness) -> None:
    d = cdc.driver
    cases = d.types_table()
    d.create_table("types", [Column("id", "int", nullable=False),
                             *(Column(c.column, c.sql_type) for c in cases)], ["id"])
    literals = ", ".join(c.literal for c in cases)
    d.execute(f"INSERT INTO types VALUES (1, {literals})")
    cap = cdc.capture()
    try:
        wait(lambda: cdc.count("types") >= 1, "the snapshot read", capture=cap)
        d.execute(f"INSERT INTO types VALUES (2, {literals})")
        wait(lambda: cdc.count("types") >= 2, "the streamed insert", capture=cap)
    finally:
        cap.stop()
    values = cdc.values("types")
    assert [(v["op"], v["after"]["id"]) for v in values] == [("r", 1), ("c", 2)]
    problems = []
    for v in values:
        assert list(v["after"]) == ["id", *(c.column for c in cases)]
        for c in cases:
            got = v["after"][c.column]
            if got != c.expected or type(got) is not type(c.expected):
                problems.append(f"{v['op']} {c.column} {c.sql_type}: {got!r} != {c.expected!r}")
    assert not problems, "\n".join(problems)
