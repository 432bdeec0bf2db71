"""`headwater.pipeline.delta.writer`: which Delta target the pipeline builds (delta-rs in the
driver, or Delta Lake's Spark connector), validated at start.  No Spark session is started."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.config import ConfigError
from headwater.pipeline import config as pipeline_config
from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.delta_spark import SparkDeltaTarget
from headwater.pipeline.delta_target import DeltaTarget
from headwater.pipeline.runner import DELTA_TARGETS, columnar_path, make_target


def config(tmp_path: Path, lines: str = "") -> Path:
    path = tmp_path / "c.properties"
    path.write_text(f"topic.prefix=x\nheadwater.pipeline.id=p\n{lines}")
    return path


def test_every_writer_name_builds_a_target() -> None:
    assert set(DELTA_TARGETS) == set(pipeline_config.DELTA_WRITERS)


def test_delta_rs_is_the_default(tmp_path: Path) -> None:
    cfg = load_pipeline_config(config(tmp_path))
    assert cfg.delta_writer == "delta-rs"
    target = make_target(cfg)
    assert type(target) is DeltaTarget
    assert target.root == tmp_path / "data" / "delta"


def test_spark_builds_the_delta_spark_target_with_the_session(tmp_path: Path) -> None:
    cfg = load_pipeline_config(config(tmp_path, "headwater.pipeline.delta.writer=Spark\n"
                                                "headwater.pipeline.schema.evolution=fail\n"))
    assert cfg.delta_writer == "spark"
    session = object()
    target = make_target(cfg, session)
    assert isinstance(target, SparkDeltaTarget)
    assert target.spark is session
    assert (target.root, target.app_id, target.schema_evolution) == (
        tmp_path / "data" / "delta", "p", "fail")
    # the same column-wise route as delta-rs, into the Spark target's own writes
    path = columnar_path("scd1", target)
    assert path is not None and path[1] == target.apply_scd1_net
    with pytest.raises(ValueError, match=r"headwater\.pipeline\.delta\.writer=spark"):
        make_target(cfg, None)


@pytest.mark.parametrize(("lines", "message"), [
    ("headwater.pipeline.delta.writer=delta-spark\n",
     "headwater.pipeline.delta.writer: 'delta-spark' is not one of delta-rs, spark"),
    ("headwater.pipeline.delta.writer=spark\nheadwater.pipeline.target=jdbc\n"
     "headwater.pipeline.jdbc.url=jdbc:postgresql://h/db\n",
     "headwater.pipeline.delta.writer: set, but headwater.pipeline.target=jdbc writes no "
     "Delta table"),
])
def test_bad_writers_are_refused_in_one_line(tmp_path: Path, lines: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_pipeline_config(config(tmp_path, lines))
    assert message in str(caught.value)
