"""Compiled bytecode inside pyspark's `pyspark.zip`, so that Spark's Python workers start in a
third of the CPU.

Spark starts every Python worker with `python/lib/pyspark.zip` first on its `PYTHONPATH`, and
the wheel's zip holds sources only: Python cannot cache bytecode for a zip, so each worker
compiles the pyspark modules it imports anew (1.7-1.9 s of CPU for the streaming source's
runner here, against 0.6 s from the installed package).  Spark gives some of those workers
a fixed 10 s to connect back (`PythonWorkerFactory.createSimpleWorker`, not configurable in
Spark 4.1): on a loaded machine the compiling alone overran it, and the query failed with
"Python worker failed to connect back".  With `.pyc` entries beside the sources (checked
against their source's hash, so an edited source is still compiled), zipimport loads the
bytecode.

    python -m headwater.pipeline.worker_bytecode   # idempotent; run by scripts/setup.sh
"""

from __future__ import annotations

import copy
import importlib.util
import os
import py_compile
import tempfile
import zipfile
from pathlib import Path


def pyspark_zip() -> Path:
    """The `pyspark.zip` Spark puts on its Python workers' path (the installed wheel's)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise SystemExit("pyspark is not installed")
    return Path(spec.origin).parent / "python" / "lib" / "pyspark.zip"


def _compiled(source: bytes, name: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "m.py", Path(tmp) / "m.pyc"
        src.write_bytes(source)
        py_compile.compile(str(src), cfile=str(out), dfile=name, doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
        return out.read_bytes()


def add_bytecode(path: Path) -> int:
    """Rewrites the zip at `path` with a `.pyc` (this interpreter's) beside each `.py` that
    has none of this interpreter's; returns how many were added (0: already done)."""
    magic = importlib.util.MAGIC_NUMBER
    with zipfile.ZipFile(path) as old:
        names = set(old.namelist())
        todo = [n for n in names if n.endswith(".py")
                and not (n + "c" in names and old.read(n + "c")[:4] == magic)]
        if not todo:
            return 0
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as new:
            for info in old.infolist():
                if info.filename.endswith(".pyc") and info.filename[:-1] in todo:
                    continue  # another interpreter's: replaced below
                # (a copy: `writestr` sets the info's offset to the new file's)
                new.writestr(copy.copy(info), old.read(info))
            for name in sorted(todo):
                new.writestr(name + "c", _compiled(old.read(name), name))
    os.replace(tmp, path)
    return len(todo)


def main() -> None:
    path = pyspark_zip()
    added = add_bytecode(path)
    print(f"{path}: {added} modules compiled" if added else f"{path}: bytecode present")


if __name__ == "__main__":
    main()
