"""The *target* tables, not only the pipeline's state tables, are compacted every
`headwater.pipeline.delta.compact.interval.batches`: for SCD1, SCD2 and changelog, on the
column-wise and on the event path.  No Spark: `apply_batch` and `maintain` are what a
micro-batch runs."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from deltalake import DeltaTable

from headwater.model.topic import TopicRecord
from headwater.pipeline.config import PipelineConfig
from headwater.pipeline.delta_target import DeltaTarget, read_table
from headwater.pipeline.runner import apply_batch
from headwater.topics.log import TopicLog
from tests.pipeline.test_columnar import TOPIC, document, pg_source, row, write

BATCHES = 12
PER_BATCH = 10
INTERVAL = 5


def inserts(rng: random.Random) -> list[tuple[bytes, bytes]]:
    """Each batch inserts new keys: every batch leaves a new file (a MERGE that updates
    rewrites the files it touches, which hides the pile-up)."""
    out: list[tuple[bytes, bytes]] = []
    for key in range(BATCHES * PER_BATCH):
        out.append(document("c", key, row(rng, key), pg_source(1000 + 10 * len(out), None)))
    return out


def run(tmp_path: Path, mode: str, interval: int) -> tuple[Path, DeltaTarget]:
    cfg = PipelineConfig(topic_prefix="s", topics_dir=tmp_path / "topics",
                         delta_path=tmp_path / f"delta-{interval}",
                         checkpoint_dir=tmp_path / "cp", topics_glob="s.*", mode=mode,
                         pipeline_id="p", compact_interval_batches=interval)
    target = DeltaTarget(cfg.delta_path, cfg.pipeline_id, compact_interval_batches=interval)
    bounds = [*range(0, BATCHES * PER_BATCH, PER_BATCH), BATCHES * PER_BATCH]
    for batch, (a, b) in enumerate(itertools.pairwise(bounds)):
        assert apply_batch(cfg.topics_dir, {TOPIC: (a, b)}, batch, cfg, target) == b - a
        target.maintain(batch)
    return cfg.delta_path / "public" / "t", target


@pytest.mark.parametrize("columnar", [True, False], ids=["column-wise", "event"])
@pytest.mark.parametrize("mode", ["scd1", "scd2", "changelog"])
def test_target_table_files_are_compacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          mode: str, columnar: bool) -> None:
    monkeypatch.setenv("HEADWATER_PIPELINE_COLUMNAR", "1" if columnar else "0")
    write(tmp_path / "topics", inserts(random.Random(11)))
    plain, _ = run(tmp_path, mode, 0)
    compacted, _ = run(tmp_path, mode, INTERVAL)
    many = len(DeltaTable(str(plain)).file_uris())
    few = len(DeltaTable(str(compacted)).file_uris())
    # At most the files of the batches since the last compaction, plus the compacted one(s).
    assert many >= BATCHES, many
    assert few <= BATCHES % INTERVAL + 2, (many, few)
    operations = [c.get("operation") for c in DeltaTable(str(compacted)).history()]
    assert operations.count("OPTIMIZE") == BATCHES // INTERVAL, operations
    sort = [("__hw_seq", "ascending")] if mode != "scd1" else [("id", "ascending")]
    table_plain = DeltaTable(str(plain)).to_pyarrow_table()
    table_compacted = DeltaTable(str(compacted)).to_pyarrow_table()
    if "__hw_seq" not in table_plain.column_names:
        sort = [("id", "ascending")]
    assert table_compacted.sort_by(sort).to_pylist() == table_plain.sort_by(sort).to_pylist()
    assert read_table(compacted).num_rows == read_table(plain).num_rows


def test_tables_not_opened_by_this_run_are_compacted_too(tmp_path: Path) -> None:
    """A `--once` run (or a restarted pipeline) opens only the tables its batches touch.  Two
    tables written in alternate batches, one run per batch: the one never written in a batch
    whose id hits the interval was never compacted (failed on the old code: 6 files)."""
    rng = random.Random(3)
    records = {name: [document("c", k, row(rng, k), pg_source(1000 + 10 * k, None))
                      for k in range(BATCHES // 2 * PER_BATCH)] for name in ("a", "b")}
    topics = {name: f"s.public.{name}" for name in records}
    with TopicLog(tmp_path / "topics") as log:
        for name, recs in records.items():
            log.append({topics[name]: [TopicRecord(k, v.replace(b'"table":"t"',
                                                               f'"table":"{name}"'.encode()), 0)
                                       for k, v in recs]})
    cfg = PipelineConfig(topic_prefix="s", topics_dir=tmp_path / "topics",
                         delta_path=tmp_path / "delta", checkpoint_dir=tmp_path / "cp",
                         topics_glob="s.*", mode="scd1", pipeline_id="p",
                         compact_interval_batches=4)
    for batch in range(BATCHES):
        name = "ab"[batch % 2]
        first = batch // 2 * PER_BATCH
        target = DeltaTarget(cfg.delta_path, "p", compact_interval_batches=4)  # a new run
        apply_batch(cfg.topics_dir, {topics[name]: (first, first + PER_BATCH)}, batch, cfg,
                    target)
        target.maintain(batch)
    for name in "ab":
        path = cfg.delta_path / "public" / name
        assert read_table(path).num_rows == BATCHES // 2 * PER_BATCH
        files = len(DeltaTable(str(path)).file_uris())
        # 12 batches, compaction after batches 3, 7, 11: at most one file per table
        assert files == 1, (name, files)
