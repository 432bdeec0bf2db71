"""Optional dependencies: which pip extra brings which module, checked before anything starts.

Why a table: `pip install headwater` alone has no REST server, Kafka client, MongoDB or SQL
Server driver, nor Spark.  Without this check a command ran until the first import of the
missing module and died with a traceback ending in `No module named 'uvicorn'`, having created
directories on the way; now each entry point asks `require(extra, what)` first and the user
reads one line naming the extra to install.  `extra_of` maps a module that failed to import
anyway (an import deeper than the start check) to its extra, for the same one line.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Final

# extra (pyproject.toml [project.optional-dependencies]) -> the top-level modules it brings
EXTRAS: Final[dict[str, tuple[str, ...]]] = {
    "server": ("fastapi", "uvicorn"),
    "kafka": ("confluent_kafka",),
    "mongodb": ("pymongo",),
    "sqlserver": ("pymssql",),
    "spark": ("pyspark", "delta", "pyarrow"),
}


class MissingExtra(RuntimeError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, extra: str, module: str, what: str) -> None:
        self.extra = extra
        self.module = module
        super().__init__(f"{what} needs the '{extra}' extra (module {module!r} is not "
                         f"installed): pip install 'headwater[{extra}]'")


def installed(module: str) -> bool:
    """Whether `module` can be imported, without importing it (pyspark takes seconds).
    A `None` entry in sys.modules (how Python marks a module as unimportable) counts as
    missing."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(extra: str, what: str) -> None:
    """MissingExtra unless every module of `extra` is importable; `what` names the user's
    request ("headwater serve", "headwater.topics.store=kafka")."""
    for module in EXTRAS[extra]:
        if not installed(module):
            raise MissingExtra(extra, module, what)


def extra_of(module: str | None) -> str | None:
    """The extra that brings `module` (a dotted name: its top level counts), if any."""
    if not module:
        return None
    top = module.split(".", 1)[0]
    for extra, modules in EXTRAS.items():
        if top in modules:
            return extra
    return None
