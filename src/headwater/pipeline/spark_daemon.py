"""Spark's Python daemon for the pipeline's executors (`spark.python.daemon.module`): pyspark's
own daemon, started after the archives Spark put on the module path from inside the installed
pyspark package are taken off it.

Why: Spark puts `$SPARK_HOME/python/lib/pyspark.zip`, py4j's zip and the spark-core jar first on
every Python worker's path, so a worker imports pyspark from the zip, one `zipimporter` for
each pyspark package it touches (16 after a `mapInArrow` task).  Before each task pyspark calls
`importlib.invalidate_caches()` (`worker_util.setup_spark_files`), and on Python 3.10-3.12 every
one of those importers re-reads its whole archive's directory (2,500 entries for the zip, more
for the jar): 0.13 s of CPU a task measured here, 0.2-0.3 s in the pipeline's Kafka tasks, paid
again by every task of every batch.  Where pyspark is installed as a package (the pip wheel,
whose `SPARK_HOME` is the package itself), those archives hold the code the package already
has: workers import the package's files, and the invalidation only marks a few folders to be
listed again (0.13 -> 0.0x s a task).  Anywhere else (a Spark distribution with no installed
pyspark, or archives that are not the installed package's own) the path is left as Spark made
it.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys


def without_pyspark_archives(path: list[str]) -> list[str]:
    """`path` without the archives (files, not folders) inside the installed pyspark package's
    folder, when pyspark and py4j import without them; else `path` unchanged."""
    archives = [p for p in path if os.path.isfile(p)]
    rest = [p for p in path if p not in archives]
    spec = importlib.machinery.PathFinder.find_spec("pyspark", rest)
    if not archives or spec is None or spec.origin is None or \
            importlib.machinery.PathFinder.find_spec("py4j", rest) is None:
        return path
    package = os.path.dirname(os.path.realpath(spec.origin)) + os.sep
    ours = {a for a in archives if os.path.realpath(a).startswith(package)}
    return [p for p in path if p not in ours] if ours else path


def main() -> None:
    kept = without_pyspark_archives(sys.path)
    for entry in set(sys.path) - set(kept):
        # the importers made while this module was found (they would still be invalidated)
        sys.path_importer_cache.pop(entry, None)
    sys.path[:] = kept
    from pyspark import daemon

    daemon.manager()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
