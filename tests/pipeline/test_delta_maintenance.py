"""Compaction and vacuum of the Delta targets every N batches: fewer files, the same rows, and
the batch ids that make replays exactly-once kept.  No Spark: the target is driven directly."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from deltalake import DeltaTable

from headwater.config import ConfigError
from headwater.pipeline import columnar
from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.delta_target import DeltaTarget, read_table
from tests.pipeline.test_columnar import TOPIC, document, pg_source, row, workload, write


def run_batches(root: Path, target: DeltaTarget, bounds: list[int]) -> None:
    for batch, (a, b) in enumerate(itertools.pairwise(bounds)):
        ch = columnar.read_net(root, TOPIC, a, b, columnar.Positions())
        assert ch is not None
        target.apply_scd1_net(ch, batch)
        target.maintain(batch)


def growing(rng: random.Random, batches: int, per_batch: int) -> list[tuple[bytes, bytes]]:
    """Each batch inserts new keys: a MERGE leaves a new file every time (the case that piles
    up small files; a MERGE that updates rewrites the files it touches)."""
    out: list[tuple[bytes, bytes]] = []
    for b in range(batches):
        for i in range(per_batch):
            key = b * per_batch + i
            out.append(document("c", key, row(rng, key), pg_source(1000 + 10 * len(out), None)))
    return out


def test_compaction_keeps_rows_and_batch_ids(tmp_path: Path) -> None:
    records = growing(random.Random(5), 12, 30)
    write(tmp_path / "topics", records)
    bounds = [*range(0, len(records), 30), len(records)]
    plain = DeltaTarget(tmp_path / "plain", "p")
    compacted = DeltaTarget(tmp_path / "compacted", "p", compact_interval_batches=4)
    run_batches(tmp_path / "topics", plain, bounds)
    run_batches(tmp_path / "topics", compacted, bounds)
    table = Path("public") / "t"
    many = len(DeltaTable(str(tmp_path / "plain" / table)).file_uris())
    few = len(DeltaTable(str(tmp_path / "compacted" / table)).file_uris())
    assert many >= 8 and few < many / 2, (many, few)
    want = read_table(tmp_path / "plain" / table).sort_by("id").to_pylist()
    assert read_table(tmp_path / "compacted" / table).sort_by("id").to_pylist() == want
    history = [c.get("operation") for c in DeltaTable(
        str(tmp_path / "compacted" / table)).history()]
    assert "OPTIMIZE" in history
    last = len(bounds) - 2
    assert compacted.already_applied(tmp_path / "compacted" / table, last)
    # a replayed batch after compaction is still recognised and skipped
    ch = columnar.read_net(tmp_path / "topics", TOPIC, bounds[-2], bounds[-1],
                           columnar.Positions())
    assert ch is not None
    version = DeltaTable(str(tmp_path / "compacted" / table)).version()
    compacted.apply_scd1_net(ch, last)
    assert DeltaTable(str(tmp_path / "compacted" / table)).version() == version


def test_interval_zero_never_compacts(tmp_path: Path) -> None:
    records = workload(random.Random(6), mysql=False, n=200)
    write(tmp_path / "topics", records)
    target = DeltaTarget(tmp_path / "d", "p", compact_interval_batches=0)
    run_batches(tmp_path / "topics", target, [0, 50, 100, 150, len(records)])
    history = [c.get("operation") for c in DeltaTable(str(tmp_path / "d" / "public" / "t"))
               .history()]
    assert "OPTIMIZE" not in history


@pytest.mark.parametrize(("text", "expected"), [("", 100), ("0", 0), ("7", 7)])
def test_interval_property(tmp_path: Path, text: str, expected: int) -> None:
    config = tmp_path / "c.properties"
    config.write_text(f"topic.prefix=x\nheadwater.pipeline.delta.compact.interval.batches={text}\n")
    assert load_pipeline_config(config).compact_interval_batches == expected


def test_negative_interval_is_refused_by_name(tmp_path: Path) -> None:
    config = tmp_path / "c.properties"
    config.write_text("topic.prefix=x\nheadwater.pipeline.delta.compact.interval.batches=-1\n")
    with pytest.raises(ConfigError, match=r"compact\.interval\.batches: expected an integer >= 0"):
        load_pipeline_config(config)
