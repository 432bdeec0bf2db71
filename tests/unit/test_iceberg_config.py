"""`headwater.pipeline.target=iceberg`: its properties, validated at start, and the target
the pipeline builds (registering its Hadoop catalog in the session).  No Spark session is
started: a stand-in holds the session's settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.config import ConfigError
from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.iceberg_target import IcebergTarget
from headwater.pipeline.runner import append_changelog_once, columnar_path, make_target


class Conf:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.values.pop(key, None)


class Session:
    def __init__(self) -> None:
        self.conf = Conf()


def config(tmp_path: Path, lines: str = "") -> Path:
    path = tmp_path / "c.properties"
    path.write_text(f"topic.prefix=x\nheadwater.pipeline.id=p\n{lines}")
    return path


def test_iceberg_builds_its_target_on_a_hadoop_catalog(tmp_path: Path) -> None:
    cfg = load_pipeline_config(config(tmp_path, "headwater.pipeline.target=Iceberg\n"
                                                "headwater.pipeline.schema.evolution=ignore\n"))
    assert (cfg.target, cfg.iceberg_catalog) == ("iceberg", "headwater")
    assert cfg.iceberg_warehouse == tmp_path / "data" / "iceberg"
    session = Session()
    target = make_target(cfg, session)
    assert isinstance(target, IcebergTarget)
    assert (target.app_id, target.schema_evolution, target.compact_interval_batches) == (
        "p", "ignore", 100)
    assert session.conf.values == {
        "spark.sql.catalog.headwater": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.headwater.type": "hadoop",
        "spark.sql.catalog.headwater.warehouse": str(tmp_path / "data" / "iceberg"),
        "spark.sql.catalog.headwater.cache-enabled": "false",
    }
    path = columnar_path("changelog", target)
    assert path is not None and path[1].func is append_changelog_once  # type: ignore[attr-defined]
    assert path[1].args == (target,)  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"headwater\.pipeline\.target=iceberg needs"):
        make_target(cfg, None)


def test_the_catalog_and_warehouse_are_taken(tmp_path: Path) -> None:
    cfg = load_pipeline_config(config(tmp_path, "headwater.pipeline.target=iceberg\n"
                                                "headwater.pipeline.mode=changelog\n"
                                                "headwater.pipeline.iceberg.catalog=lake\n"
                                                "headwater.pipeline.iceberg.warehouse=w\n"
                                                "headwater.pipeline.iceberg.compact.interval."
                                                "batches=0\n"))
    assert (cfg.iceberg_catalog, cfg.iceberg_warehouse) == ("lake", tmp_path / "w")
    assert cfg.iceberg_compact_interval_batches == 0


def test_a_catalog_name_the_session_gives_another_warehouse_is_refused(tmp_path: Path) -> None:
    session = Session()
    IcebergTarget(session, tmp_path / "a", "lake", "p")
    IcebergTarget(session, tmp_path / "a", "lake", "p")  # the same again: fine
    with pytest.raises(ValueError, match=r"already has a catalog 'lake' on .*/a, not on .*/b"):
        IcebergTarget(session, tmp_path / "b", "lake", "p")
    session.conf.set("spark.sql.catalog.other", "some.Catalog")
    with pytest.raises(ValueError, match=r"already has a catalog 'other' \(spark\.sql"):
        IcebergTarget(session, tmp_path / "a", "other", "p")


@pytest.mark.parametrize(("lines", "message"), [
    ("headwater.pipeline.iceberg.warehouse=w\n",
     "headwater.pipeline.iceberg.warehouse: set, but headwater.pipeline.target=delta writes "
     "no Iceberg table"),
    ("headwater.pipeline.target=iceberg\nheadwater.pipeline.iceberg.catalog=my-lake\n",
     "headwater.pipeline.iceberg.catalog: 'my-lake' is not a Spark catalog name"),
    ("headwater.pipeline.target=iceberg\nheadwater.pipeline.iceberg.warehouse=s3a://b/w\n",
     "headwater.pipeline.iceberg.warehouse: 's3a://b/w' is a s3a:// URI"),
    ("headwater.pipeline.target=iceberg\nheadwater.pipeline.iceberg.compact.interval.batches=-1\n",
     "headwater.pipeline.iceberg.compact.interval.batches: expected an integer >= 0, got -1"),
    ("headwater.pipeline.iceberg.compact.interval.batches=5\n",
     "headwater.pipeline.iceberg.compact.interval.batches: set, but headwater.pipeline.target="
     "delta writes no Iceberg table"),
    ("headwater.pipeline.target=iceberg\nheadwater.pipeline.delta.writer=spark\n",
     "headwater.pipeline.delta.writer: set, but headwater.pipeline.target=iceberg writes no "
     "Delta table"),
])
def test_bad_iceberg_settings_are_refused_in_one_line(tmp_path: Path, lines: str,
                                                      message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_pipeline_config(config(tmp_path, lines))
    assert message in str(caught.value)
