"""The pipeline's Spark settings: connector jars without what pyspark ships, Spark's resolver
when the cache lacks them, `spark.*` properties from the configuration, and object-store paths
refused by name.  No Spark session is started."""

from __future__ import annotations

from pathlib import Path

import pytest

# (the module: the package's own `spark_session` attribute is the runner's function)
import headwater.pipeline.spark_session as session
from headwater.config import ConfigError
from headwater.jvm import artifacts
from headwater.pipeline.config import load_pipeline_config


@pytest.mark.parametrize(("jar", "name"), [
    ("jackson-core-2.13.5.jar", "jackson-core"),
    ("zstd-jni-1.5.7-3.jar", "zstd-jni"),
    ("delta-spark_4.1_2.13-4.4.0.jar", "delta-spark_4.1_2.13"),
    ("spark-sql-kafka-0-10_2.13-4.1.1.jar", "spark-sql-kafka-0-10_2.13"),
    ("iceberg-spark-runtime-4.1_2.13-1.12.0.jar", "iceberg-spark-runtime-4.1_2.13"),
    ("hive-exec-2.3.10-core.jar", "hive-exec"),
    ("plain.jar", "plain"),
])
def test_artifact_names(jar: str, name: str) -> None:
    assert session.artifact_name(jar) == name


def test_connector_jars_leave_out_what_pyspark_ships() -> None:
    if not artifacts.is_fetched(session.JAR_SET):
        pytest.skip("the spark jar set is not fetched (python -m headwater.jvm.artifacts spark)")
    jars = session.connector_jars()
    assert jars is not None
    names = {session.artifact_name(j.name) for j in jars}
    assert {"delta-spark_4.1_2.13", "delta-storage", "spark-sql-kafka-0-10_2.13",
            "iceberg-spark-runtime-4.1_2.13"} <= names
    shipped = session.pyspark_jars()
    assert "jackson-databind" in shipped and "scala-library" in shipped
    assert not names & shipped
    fetched = {session.artifact_name(j.name) for j in artifacts.fetch(session.JAR_SET)}
    assert {"jackson-databind", "scala-library", "hadoop-client-api"} <= fetched - names


def test_without_cached_jars_spark_resolves_the_same_coordinates() -> None:
    conf = session.connector_conf(None)
    assert "spark.jars" not in conf
    assert conf["spark.jars.packages"].split(",") == list(
        artifacts.SETS["spark"].coordinates)
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert conf["spark.sql.catalog.spark_catalog"] == (
        "org.apache.spark.sql.delta.catalog.DeltaCatalog")


def test_spark_properties_reach_the_session_and_win(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    monkeypatch.setenv("HEADWATER_SPARK_MASTER", "local[3]")
    monkeypatch.setattr(session, "connector_jars", lambda: [tmp_path / "delta.jar"])
    base = session.session_conf({})
    assert base["spark.master"] == "local[3]"  # the environment, below the properties
    conf = session.session_conf({"spark.master": "spark://127.0.0.1:7077",
                                 "spark.executor.memory": "2g",
                                 "spark.jars": "/opt/mine.jar"})
    assert conf["spark.master"] == "spark://127.0.0.1:7077"
    assert conf["spark.executor.memory"] == "2g"
    jars = conf["spark.jars"].split(",")
    assert jars[0] == str(tmp_path / "delta.jar") and jars[-1] == "/opt/mine.jar"


def test_jvm_options_of_the_configuration_join_the_logging_ones(tmp_path: Path) -> None:
    """A user's driver JVM flags come after the options that send Spark's logs to a file,
    instead of replacing them."""
    conf = session.session_conf({"spark.driver.extraJavaOptions": "-XX:+UseZGC"}, tmp_path)
    options = conf["spark.driver.extraJavaOptions"]
    assert options.endswith(" -XX:+UseZGC") and str(tmp_path) in options


def test_spark_properties_in_the_configuration(tmp_path: Path) -> None:
    config = tmp_path / "c.properties"
    config.write_text("topic.prefix=x\nspark.master=local[1]\nspark.sql.shuffle.partitions=2\n")
    cfg = load_pipeline_config(config)
    assert dict(cfg.spark_conf) == {"spark.master": "local[1]",
                                    "spark.sql.shuffle.partitions": "2"}


@pytest.mark.parametrize("name", ["headwater.pipeline.delta.path",
                                  "headwater.pipeline.checkpoint.dir"])
@pytest.mark.parametrize("uri", ["s3://bucket/delta", "s3a://b/x", "gs://b/x",
                                 "abfss://c@acct.dfs.core.windows.net/x", "wasbs://c@a/x",
                                 "hdfs://nn:8020/x"])
def test_object_store_paths_are_refused_by_name(tmp_path: Path, name: str, uri: str) -> None:
    config = tmp_path / "c.properties"
    config.write_text(f"topic.prefix=x\n{name}={uri}\n")
    with pytest.raises(ConfigError) as caught:
        load_pipeline_config(config)
    assert f"{name}: {uri!r}" in str(caught.value)
    assert not any(p.name.endswith(":") for p in tmp_path.iterdir())  # no local s3a: dir


@pytest.mark.parametrize(("lines", "name"), [
    ("headwater.topics.dir=s3a://b/topics\n", "headwater.topics.dir"),
    ("headwater.pipeline.source=datastream-files\n"
     "headwater.pipeline.datastream.files.dir=gs://b/files\n",
     "headwater.pipeline.datastream.files.dir"),
    ("headwater.pipeline.source=datastream-files\n"
     "headwater.destination.files.dir=abfss://c@a.dfs.core.windows.net/f\n",
     "headwater.destination.files.dir"),
])
def test_object_store_paths_the_source_reads_are_refused_by_name(tmp_path: Path, lines: str,
                                                                 name: str) -> None:
    config = tmp_path / "c.properties"
    config.write_text(f"topic.prefix=x\n{lines}")
    with pytest.raises(ConfigError) as caught:
        load_pipeline_config(config)
    assert f"{name}: '" in str(caught.value)
    assert "://" in str(caught.value)


def test_local_paths_and_file_uris_are_taken(tmp_path: Path) -> None:
    config = tmp_path / "c.properties"
    config.write_text("topic.prefix=x\nheadwater.pipeline.delta.path=delta\n"
                      f"headwater.pipeline.checkpoint.dir=file://{tmp_path}/ck\n")
    cfg = load_pipeline_config(config)
    assert cfg.delta_path == tmp_path / "delta"
    assert cfg.checkpoint_dir == tmp_path / "ck"


@pytest.mark.parametrize(("master", "loopback"), [
    ("local[*]", True), ("local[2]", True), ("local", True),
    ("spark://127.0.0.1:7077", True), ("spark://localhost:7077", True),
    ("spark://10.0.0.5:7077", False), ("spark://master.example:7077", False),
    ("spark://m1:7077,m2:7077", False), ("k8s://https://10.0.0.1:6443", False), ("yarn", False),
])
def test_the_driver_is_bound_to_loopback_only_for_a_loopback_master(master: str,
                                                                     loopback: bool) -> None:
    """A driver bound to 127.0.0.1 cannot be reached by a cluster's workers."""
    assert session.loopback_master(master) is loopback


def test_the_checkpoint_file_manager_is_a_class_of_the_installed_spark() -> None:
    """Spark fails every query at its start on a checkpoint file manager it cannot load (the
    class moved between Spark lines), so the name must be one the installed Spark ships."""
    import zipfile

    import pyspark

    name = session.session_conf({})["spark.sql.streaming.checkpointFileManagerClass"]
    entry = name.replace(".", "/") + ".class"
    jars = (Path(pyspark.__file__).parent / "jars").glob("spark-sql_*.jar")
    assert any(entry in zipfile.ZipFile(j).namelist() for j in jars), name
