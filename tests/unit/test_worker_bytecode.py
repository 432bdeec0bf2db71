"""`worker_bytecode`: pyspark's zip gets bytecode that zipimport loads, once."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from headwater.pipeline.worker_bytecode import add_bytecode, pyspark_zip


def test_bytecode_is_added_once_and_loaded_from_the_zip(tmp_path: Path) -> None:
    path = tmp_path / "lib.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("pkg/__init__.py", "")
        z.writestr("pkg/mod.py", "VALUE = 6 * 7\n")
        z.writestr("pkg/data.txt", "kept")
    assert add_bytecode(path) == 2
    assert add_bytecode(path) == 0
    with zipfile.ZipFile(path) as z:
        assert z.read("pkg/data.txt") == b"kept" and z.read("pkg/mod.py") == b"VALUE = 6 * 7\n"
        assert {"pkg/__init__.pyc", "pkg/mod.pyc"} <= set(z.namelist())
    out = subprocess.run(
        [sys.executable, "-c", "import pkg.mod as m; print(m.VALUE, m.__spec__.cached)"],
        env={"PYTHONPATH": str(path)}, capture_output=True, text=True, check=True).stdout
    value, cached = out.split()
    assert value == "42" and cached.endswith("pkg/mod.pyc")


def test_the_installed_pyspark_zip_is_found() -> None:
    path = pyspark_zip()
    assert path.name == "pyspark.zip" and path.is_file()
