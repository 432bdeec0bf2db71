"""The peer benchmark's workloads (`bench/change_events.py`): each variant's log, replayed by
position, still gives the source's state, and the reordered, duplicated and TOAST variants do
break a job that takes the newest event per key only inside each micro-batch and merges it
unconditionally (the peer of `bench/pipeline_peer.py`), which the benchmark relies on when it
prints that the peer's table differs.  Modelled in Python here: no Spark."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from bench import change_events as ce

from headwater.convert.decimal import ConnectDecimal

CHANGES, KEYS = 4000, 1500
Rows = dict[int, tuple[Any, ...]]


def events(root: Path) -> list[dict[str, Any]]:
    """The log's change payloads in log order (tombstones left out), from the segment files."""
    out = []
    for segment in sorted((root / ce.TOPIC).glob("*.jsonl")):
        for line in segment.read_bytes().splitlines():
            value = orjson.loads(line)["value"]
            if value is not None:
                out.append(value["payload"])
    return out


def row(payload: dict[str, Any]) -> tuple[Any, ...]:
    after = payload["after"]
    amount = ConnectDecimal(after["amount"])
    amount.scale = 2
    return (after["name"], amount.value, after["qty"])


def key(payload: dict[str, Any]) -> int:
    image = payload["after"] or payload["before"]
    return int(image["id"])


def by_position(log: list[dict[str, Any]]) -> Rows:
    """What a pipeline ordering every key's changes by LSN ends with (unsent TOAST values
    carried from the key's previous image)."""
    rows: Rows = {}
    for p in sorted({p["source"]["lsn"]: p for p in log}.values(),
                    key=lambda p: p["source"]["lsn"]):
        if p["op"] == "d":
            rows.pop(key(p), None)
        else:
            new = row(p)
            if new[0] == "__debezium_unavailable_value":
                new = (rows[key(p)][0], *new[1:])
            rows[key(p)] = new
    return rows


def naive(log: list[dict[str, Any]], micro_batches: int) -> Rows:
    """The peer: newest by LSN inside each micro-batch, merged without comparing positions."""
    rows: Rows = {}
    size = -(-len(log) // micro_batches)
    for start in range(0, len(log), size):
        newest: dict[int, dict[str, Any]] = {}
        for p in log[start:start + size]:
            k = key(p)
            if k not in newest or p["source"]["lsn"] > newest[k]["source"]["lsn"]:
                newest[k] = p
        for k, p in newest.items():
            if p["op"] == "d":
                rows.pop(k, None)
            else:
                rows[k] = row(p)
    return rows


@pytest.mark.parametrize("variant", ce.VARIANTS)
def test_each_variant_replayed_by_position_gives_the_source_state(tmp_path: Path,
                                                                   variant: str) -> None:
    state = ce.write(tmp_path / "t", CHANGES, KEYS, variant, segment_bytes=1 << 20)
    log = events(tmp_path / "t")
    want = ce.expected_rows(state)
    assert ce.differences(want, by_position(log)) == ""
    lsns = [p["source"]["lsn"] for p in log]
    copies = Counter(lsns)
    assert set(copies) == {1000 + 100 * (i + 1) for i in range(CHANGES)}
    if variant in ("clean", "toast"):
        assert lsns == sorted(lsns)
    if variant == "clean":
        assert ce.differences(want, naive(log, 3)) == ""  # the peer is right on this one
    if variant == "reordered":
        assert lsns != sorted(lsns) and max(copies.values()) == 1
    if variant == "duplicated":
        assert 0.05 * CHANGES < sum(n - 1 for n in copies.values()) < 0.15 * CHANGES
    placeholders = sum(1 for p in log
                       if p["after"] and p["after"]["name"] == "__debezium_unavailable_value")
    assert (placeholders > 0) == (variant == "toast")


@pytest.mark.parametrize("variant", ["reordered", "duplicated", "toast"])
def test_the_naive_job_goes_wrong_on_the_variants(tmp_path: Path, variant: str) -> None:
    state = ce.write(tmp_path / "t", CHANGES, KEYS, variant, segment_bytes=1 << 20)
    problem = ce.differences(ce.expected_rows(state), naive(events(tmp_path / "t"), 3))
    assert "keys differ" in problem


def test_the_clean_log_is_the_one_pipeline_delta_benchmarked(tmp_path: Path) -> None:
    """Same seed, same events: the toast flag draws from a stream of its own."""
    clean = ce.write(tmp_path / "a", 2000, 100)
    toast = ce.write(tmp_path / "b", 2000, 100, "toast")
    assert clean.keys() == toast.keys()
    assert [r and r[2:] for r in clean.values()] == [r and r[2:] for r in toast.values()]
    assert any(r and r[1] != c[1] for r, c in zip(toast.values(), clean.values(),
                                                  strict=True) if c)


def test_an_unknown_variant_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown variant 'shuffled'"):
        ce.log_order(10, "shuffled")
