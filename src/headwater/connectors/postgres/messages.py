"""Logical decoding messages (``pg_logical_emit_message``): which are emitted, and as what.

PostgreSQL 14+ sends them on a pgoutput slot read with ``messages 'true'``: a transactional one
inside its transaction (at its commit, or in its stream segments), a non-transactional one at
once, between transactions.  Debezium emits each whose prefix passes
``message.prefix.include.list`` / ``message.prefix.exclude.list`` as an op ``m`` event
(formats/message_events.py); the content is rendered per ``binary.handling.mode``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from headwater.config.connector_common import NameFilter
from headwater.convert import binary_encoder, binary_schema
from headwater.formats.message_events import MESSAGE_COLLECTION, message_table

__all__ = ["MESSAGES_MIN_SERVER_VERSION", "MESSAGE_COLLECTION", "MessageCapture"]

# The first server version with pgoutput's `messages` option.
MESSAGES_MIN_SERVER_VERSION = 140000


class MessageCapture:
    """The message "table" of one database, the prefix filter and the content encoder."""

    __slots__ = ("admits", "encode", "table")

    def __init__(self, database: str, binary_handling_mode: str, prefixes: NameFilter) -> None:
        self.table = message_table(database, binary_schema(binary_handling_mode, True))
        self.encode: Callable[[bytes], Any] = binary_encoder(binary_handling_mode)
        self.admits: Callable[[str], bool] = prefixes.admits
