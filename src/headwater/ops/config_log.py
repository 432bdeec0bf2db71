"""What a connector logs of its configuration: a one-line summary at INFO, then each
non-secret property on its own line at DEBUG.

Why not the whole configuration in one line: it was hundreds of characters nobody could
read, and it repeated in every log shipper's index.  A summary says what runs; DEBUG says
everything, one grep-able property per line; secrets are never logged (not even masked).
"""

from __future__ import annotations

import logging
from typing import Any, Final

from headwater.config.connector_common import redacted_fields
from headwater.config.secrets import REDACTED

_SUMMARY: Final = (("connector_class", "class"), ("database_hostname", "host"),
                   ("database_port", "port"), ("database_dbname", "database"),
                   ("snapshot_mode", "snapshot.mode"), ("headwater_topics_dir", "topics"))


def _plain(value: Any) -> str:
    if isinstance(value, tuple | list | frozenset | set):
        return ",".join(str(v) for v in value)
    return str(value)


def log_configuration(cfg: Any, log: logging.Logger) -> None:
    fields = redacted_fields(cfg)
    found = fields.pop("passthrough", None)
    passthrough: dict[str, str] = found if isinstance(found, dict) else {}
    parts = [f"{label}={_plain(fields[name])}" for name, label in _SUMMARY
             if fields.get(name) not in (None, "", REDACTED)]
    log.info("connector %s: %s (%d properties; DEBUG lists them)",
             getattr(cfg, "topic_prefix", "?"), ", ".join(parts),
             len(fields) + len(passthrough))
    if not log.isEnabledFor(logging.DEBUG):
        return
    for name in sorted(fields):
        value = fields[name]
        if _loggable(value):
            log.debug("  %s = %s", name.replace("_", "."), _plain(value))
    for key in sorted(passthrough):
        if passthrough[key] != REDACTED:
            log.debug("  %s = %s", key, passthrough[key])


def _loggable(value: Any) -> bool:
    """Plain values only (nested settings objects are summarised by their own modules)."""
    if value == REDACTED:
        return False
    return isinstance(value, str | int | float | bool | tuple | list | frozenset) or hasattr(
        value, "__fspath__")
