"""The executors' Python daemon takes pyspark's own archives off the module path only where
the installed pyspark package holds the same code (`pipeline.spark_daemon`)."""

from __future__ import annotations

from pathlib import Path

from headwater.pipeline.spark_daemon import without_pyspark_archives


def _installed(site: Path) -> tuple[Path, Path, Path]:
    """A pip-style pyspark in `site`: the package, py4j, and the wheel's archives inside it."""
    (site / "pyspark" / "python" / "lib").mkdir(parents=True)
    (site / "pyspark" / "jars").mkdir()
    (site / "pyspark" / "__init__.py").write_text("")
    (site / "py4j").mkdir()
    (site / "py4j" / "__init__.py").write_text("")
    zipped = site / "pyspark" / "python" / "lib" / "pyspark.zip"
    py4j = site / "pyspark" / "python" / "lib" / "py4j-0.10.9.9-src.zip"
    jar = site / "pyspark" / "jars" / "spark-core_2.13-4.1.1.jar"
    for archive in (zipped, py4j, jar):
        archive.write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip
    return zipped, py4j, jar


def test_the_wheels_own_archives_leave_the_path(tmp_path: Path) -> None:
    zipped, py4j, jar = _installed(tmp_path / "site")
    work = tmp_path / "work"
    work.mkdir()
    path = [str(work), str(zipped), str(py4j), str(jar), str(tmp_path / "site")]
    assert without_pyspark_archives(path) == [str(work), str(tmp_path / "site")]


def test_a_distribution_without_an_installed_pyspark_keeps_its_zip(tmp_path: Path) -> None:
    home = tmp_path / "spark-4.1.1-bin" / "python" / "lib"
    home.mkdir(parents=True)
    zipped = home / "pyspark.zip"
    zipped.write_bytes(b"PK\x05\x06" + b"\0" * 18)
    path = [str(zipped), str(tmp_path)]
    assert without_pyspark_archives(path) == path


def test_archives_from_another_spark_than_the_installed_one_stay(tmp_path: Path) -> None:
    _installed(tmp_path / "site")
    other = tmp_path / "spark-home" / "python" / "lib"
    other.mkdir(parents=True)
    zipped = other / "pyspark.zip"
    zipped.write_bytes(b"PK\x05\x06" + b"\0" * 18)
    path = [str(zipped), str(tmp_path / "site")]
    assert without_pyspark_archives(path) == path


def test_no_py4j_outside_the_archives_keeps_the_path(tmp_path: Path) -> None:
    zipped, py4j, _ = _installed(tmp_path / "site")
    for f in (tmp_path / "site" / "py4j").iterdir():
        f.unlink()
    (tmp_path / "site" / "py4j").rmdir()
    path = [str(zipped), str(py4j), str(tmp_path / "site")]
    assert without_pyspark_archives(path) == path
