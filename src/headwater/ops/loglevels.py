"""Logger levels by name, in log4j's vocabulary, changeable while running (Kafka Connect's
`/admin/loggers`).

Why log4j names (WARN, TRACE, OFF) over Python's: the API is Kafka Connect's, and scripts
written for it send and read those.  Setting a logger sets its descendants too, as Kafka
Connect does, and returns the names it changed.  `headwater serve` stores the levels it was
asked for, and each worker applies them on its next heartbeat (once a second), so one request
reaches the service and every connector it runs.
"""

from __future__ import annotations

import logging
import time
from typing import Final

ROOT: Final = "root"
TO_PYTHON: Final = {"OFF": logging.CRITICAL + 10, "FATAL": logging.CRITICAL,
                    "ERROR": logging.ERROR, "WARN": logging.WARNING, "WARNING": logging.WARNING,
                    "INFO": logging.INFO, "DEBUG": logging.DEBUG, "TRACE": 5}
_LAST_MODIFIED: dict[str, int] = {}


def log4j_name(level: int) -> str:
    if level >= logging.CRITICAL + 10:
        return "OFF"
    if level >= logging.CRITICAL:
        return "FATAL"
    if level >= logging.ERROR:
        return "ERROR"
    if level >= logging.WARNING:
        return "WARN"
    if level >= logging.INFO:
        return "INFO"
    return "DEBUG" if level >= logging.DEBUG else "TRACE"


def _logger(name: str) -> logging.Logger:
    return logging.getLogger() if name == ROOT else logging.getLogger(name)


def known() -> list[str]:
    return [ROOT, *sorted(n for n, lg in logging.Logger.manager.loggerDict.items()
                          if isinstance(lg, logging.Logger))]


def level_of(name: str) -> dict[str, object] | None:
    """`{"level", "last_modified"}` of a logger this process has, else None."""
    if name != ROOT and name not in logging.Logger.manager.loggerDict:
        return None
    lg = _logger(name)
    return {"level": log4j_name(lg.getEffectiveLevel()),
            "last_modified": _LAST_MODIFIED.get(name)}


def levels() -> dict[str, dict[str, object]]:
    """Every logger with its effective level (Kafka Connect lists each with a level)."""
    out: dict[str, dict[str, object]] = {}
    for name in known():
        found = level_of(name)
        if found is not None:
            out[name] = found
    return out


def parse_level(text: str) -> int:
    try:
        return TO_PYTHON[text.strip().upper()]
    except KeyError:
        raise ValueError(f"Invalid log level '{text}'") from None


def set_level(name: str, level: str) -> list[str]:
    """Set `name` and its descendants; returns the loggers changed (sorted)."""
    value = parse_level(level)
    now = int(time.time() * 1000)
    targets = [name] + [n for n in known() if name != ROOT and n.startswith(name + ".")]
    if name == ROOT:
        targets = known()
    for target in targets:
        _logger(target).setLevel(value)
        _LAST_MODIFIED[target] = now
    return sorted(targets)


def apply_all(wanted: list[tuple[str, str]]) -> None:
    """Apply requests in the order they were made (a worker catching up with the service)."""
    for name, level in wanted:
        try:
            set_level(name, level)
        except ValueError:
            continue
