"""Keeping `headwater pipeline`'s terminal readable: Spark's own logs go to a file, a
failure is one line naming its root cause, Ctrl-C is one line.

Why: Spark logs WARN lines nobody acted on to the console, and a failure inside a
`foreachBatch` comes back as a Java StreamingQueryException wrapping the Python traceback
(160 lines for a schema evolution error).  The terminal gets the root cause; the file
`<checkpoint dir>/logs/pipeline.log` gets the whole trace, and `spark.log` Spark's logs.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import traceback
from pathlib import Path
from typing import Final

TRACE_LOGGER: Final = "headwater.pipeline.trace"

LOG4J2: Final = """\
# Written by headwater pipeline: Spark's logs go to this directory's spark.log, not the terminal.
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {path}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{ISO8601}} %p %c: %m%n%ex
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
"""


def log_dir(checkpoint_dir: Path) -> Path:
    return checkpoint_dir / "logs"


def log4j_options(directory: Path) -> str:
    """JVM options that point log4j2 at a configuration writing to `directory`/spark.log."""
    directory.mkdir(parents=True, exist_ok=True)
    conf = directory / "log4j2.properties"
    conf.write_text(LOG4J2.format(path=(directory / "spark.log").resolve()))
    return f"-Dlog4j2.configurationFile=file:{conf.resolve()}"


class _TraceFile(logging.FileHandler):
    """pipeline.log: a trace that cannot be written (a full disk, the usual reason the
    pipeline is failing then) is dropped, not printed to the terminal as logging's own
    traceback; `unwritten` keeps why, for the one line the terminal shows."""

    unwritten: BaseException | None = None

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        self.unwritten = sys.exc_info()[1]


def trace_unwritten(logger: logging.Logger) -> BaseException | None:
    """Why the trace logger's file lost a record, if it did."""
    for handler in logger.handlers:
        if isinstance(handler, _TraceFile) and handler.unwritten is not None:
            return handler.unwritten
    return None


def trace_to_file(directory: Path) -> logging.Logger:
    """A logger that writes only to `directory`/pipeline.log (full traces)."""
    directory.mkdir(parents=True, exist_ok=True)
    logger = logging.getLogger(TRACE_LOGGER)
    logger.propagate = False
    path = (directory / "pipeline.log").resolve()
    if not any(isinstance(h, logging.FileHandler) and Path(h.baseFilename) == path
               for h in logger.handlers):
        handler = _TraceFile(path)
        handler.setFormatter(logging.Formatter("[%(asctime)s] %(levelname)s %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    return logger


# The last "SomethingError: message" or "java.x.YException: message" line of a trace.
_CAUSE: Final = re.compile(
    r"^\s*(?:Caused by: )?((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception)): (.+)$",
    re.MULTILINE)
_WRAPPERS: Final = ("StreamingQueryException", "Py4JJavaError", "PythonException",
                    "SparkException", "ExecutionException")


def root_cause(text: str) -> str:
    """The innermost exception of a Spark/Py4J error text, as `Type: message` (the Python
    exception raised in a batch when there is one; else the last Java cause)."""
    found = [(name, msg.strip()) for name, msg in _CAUSE.findall(text)]
    useful = [(n, m) for n, m in found if not n.split(".")[-1].startswith(_WRAPPERS)]
    if not useful:
        first = text.strip().splitlines()
        return first[0] if first else text
    name, message = useful[-1]
    return f"{name.split('.')[-1]}: {message}"


def one_line(exc: BaseException) -> str:
    """What the terminal shows of a pipeline failure."""
    text = "".join(traceback.format_exception_only(type(exc), exc))
    if type(exc).__name__ in _WRAPPERS or "Traceback (most recent call last)" in text or \
            "\n\tat " in text:
        return root_cause(text)
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


NO_SPACE: Final = "No space left on device"


def full_disks(paths: dict[str, Path], below: int = 1 << 20) -> list[str]:
    """`property path (N bytes free)` for each written path whose file system has less than
    `below` bytes free: a JVM's "No space left on device" names no file, the user needs to
    know which of the pipeline's places filled up."""
    out = []
    for name, path in paths.items():
        probe = path
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        try:
            st = os.statvfs(probe)
        except OSError:
            continue
        free = st.f_bavail * st.f_frsize
        if free < below:
            out.append(f"{name} {path} ({free} bytes free)")
    return out
