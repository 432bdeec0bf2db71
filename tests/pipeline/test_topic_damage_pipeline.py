"""A damaged topic log stops the Spark pipeline with the damage, rather than a row going
missing in Delta (real Spark, real Delta; no database needed)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.runner import damage_message, start
from headwater.topics.segment import list_segments
from tests.pipeline.test_columnar import TOPIC, workload, write

pytestmark = pytest.mark.integration


def change_a_digit(line: bytes) -> bytes:
    """One digit of the value's payload changed: the line still parses, offset and all, so
    only its checksum tells (a 1 or 2 never makes a number start with a zero)."""
    at = line.index(b'"payload":', line.index(b'"value":'))
    while not line[at:at + 1].isdigit():
        at += 1
    digit = b"2" if line[at:at + 1] == b"1" else b"1"
    return line[:at] + digit + line[at + 1:]


@pytest.mark.parametrize("kind", ["line removed", "half-cut last line", "byte changed"])
def test_pipeline_stops_at_a_damaged_topic(tmp_path: Path, spark: Any, kind: str) -> None:
    topics = tmp_path / "topics"
    write(topics, workload(random.Random(1), False, n=300), segment_bytes=20_000)
    segs = [s.path for s in list_segments(topics / TOPIC)]
    if kind == "line removed":
        seg = segs[1]
        lines = seg.read_bytes().splitlines(keepends=True)
        seg.write_bytes(lines[0] + b"".join(lines[2:]))
        position = len(lines[0])
    elif kind == "byte changed":
        seg = segs[1]
        lines = seg.read_bytes().splitlines(keepends=True)
        seg.write_bytes(b"".join([lines[0], change_a_digit(lines[1]), *lines[2:]]))
        position = len(lines[0])
    else:
        seg = segs[-1]
        data = seg.read_bytes()
        seg.write_bytes(data[:-9])
        position = data.rstrip(b"\n").rfind(b"\n") + 1
    config = tmp_path / "p.properties"
    config.write_text(
        f"topic.prefix=s\nheadwater.topics.dir={topics}\n"
        f"headwater.pipeline.delta.path={tmp_path / 'delta'}\n"
        f"headwater.pipeline.checkpoint.dir={tmp_path / 'checkpoint'}\n")
    query = start(spark, load_pipeline_config(config), once=True)
    with pytest.raises(Exception, match="topic log damaged") as info:
        query.awaitTermination()
    if kind != "half-cut last line":  # found reading the batch (foreachBatch, this process)
        (damage,) = query.headwater_damaged
        assert (damage.topic, damage.segment, damage.position) == (TOPIC, seg, position)
    else:  # found planning the batch (the source's end offsets, in a Python worker)
        assert not query.headwater_damaged
    message = damage_message(str(info.value))
    assert message is not None and "\n" not in message
    assert f"topic log damaged: topic {TOPIC}, segment {seg}, " in message
    assert f", byte {position}: " in message
    if kind == "byte changed":
        assert "CRC-32C checksum does not match" in message
    assert not (tmp_path / "delta" / "public" / "t").exists()  # nothing half-applied


def test_a_log_cut_behind_the_checkpoint_stops_the_pipeline(tmp_path: Path, spark: Any) -> None:
    """After `topics verify --repair` cut records the pipeline had already read, new records
    would reuse those offsets and be skipped: the next run refuses, naming the offsets."""
    topics = tmp_path / "topics"
    write(topics, workload(random.Random(2), False, n=300), segment_bytes=20_000)
    config = tmp_path / "p.properties"
    config.write_text(
        f"topic.prefix=s\nheadwater.topics.dir={topics}\n"
        f"headwater.pipeline.delta.path={tmp_path / 'delta'}\n"
        f"headwater.pipeline.checkpoint.dir={tmp_path / 'checkpoint'}\n")
    start(spark, load_pipeline_config(config), once=True).awaitTermination()
    assert (tmp_path / "delta" / "public" / "t").exists()
    segments = list_segments(topics / TOPIC)
    read = segments[-1].base + len(segments[-1].path.read_bytes().splitlines())
    for segment in segments[1:]:  # what a repair at the second segment would leave
        segment.path.unlink()
    kept = segments[1].base
    query = start(spark, load_pipeline_config(config), once=True)
    with pytest.raises(Exception, match="topic log damaged") as info:
        query.awaitTermination()
    message = damage_message(str(info.value))
    assert message is not None and "\n" not in message
    assert f"topic {TOPIC}," in message
    assert f"the log ends at offset {kept} but this pipeline's checkpoint has read up to " \
           f"offset {read}" in message
