"""Topic names as Debezium's topic naming strategies make them (`topic.naming.strategy`).

Why: the topic names are the contract with every consumer, so they must be the ones Debezium
would produce for the same configuration, including for tables whose names Kafka would refuse.

The strategies (io.debezium.schema, AbstractTopicNamingStrategy and subclasses):

- ``DefaultTopicNamingStrategy``: data topic = prefix + the table id's *database parts*
  (catalog, table); the MySQL/MariaDB default (``<prefix>.<database>.<table>``);
- ``SchemaTopicNamingStrategy``: prefix + the *schema parts* (schema, table); Debezium's
  common default, so PostgreSQL's (``<prefix>.<schema>.<table>``);
- ``DefaultUnicodeTopicNamingStrategy`` / ``SchemaUnicodeTopicNamingStrategy``: the same parts,
  but an illegal character becomes ``_u`` + its UTF-16 code in hex (and ``_`` itself is escaped).

Parts are joined with ``topic.delimiter``; empty parts are left out (a MySQL table id has no
schema, a PostgreSQL one no catalog: Debezium builds PostgreSQL ids as (null, schema, table)).
Debezium takes the strategy as a class name and has no short names for it, so neither do we.
The regex strategies need properties Headwater does not implement and are refused.

Sanitizing (``sanitizedTopicName``): every UTF-16 code unit outside ``[a-zA-Z0-9._-]`` is
replaced (``_``, or ``_uXXXX`` for the Unicode strategies), the result is cut to 249
characters, and a name of exactly ``.`` / ``..`` becomes ``_`` / ``__``; Debezium then logs one
warning per table.  The heartbeat and transaction topics are not sanitized: their parts are
validated properties.  Two tables whose names sanitize to one topic would mix their events in
one topic, so that is an error naming both tables, raised by `TopicNaming.check_tables` (at
start, with the captured table list) or at the latest when the second table's first event is
rendered.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Final

from headwater.model.schema import TableId

log = logging.getLogger("headwater.topic_naming")

DEFAULT_STRATEGY: Final = "io.debezium.schema.DefaultTopicNamingStrategy"
SCHEMA_STRATEGY: Final = "io.debezium.schema.SchemaTopicNamingStrategy"
DEFAULT_UNICODE_STRATEGY: Final = "io.debezium.schema.DefaultUnicodeTopicNamingStrategy"
SCHEMA_UNICODE_STRATEGY: Final = "io.debezium.schema.SchemaUnicodeTopicNamingStrategy"
STRATEGIES: Final = (DEFAULT_STRATEGY, SCHEMA_STRATEGY, DEFAULT_UNICODE_STRATEGY,
                     SCHEMA_UNICODE_STRATEGY)
_UNSUPPORTED: Final = {
    "io.debezium.schema.DefaultRegexTopicNamingStrategy":
        "needs topic.regex.enable/topic.regex/topic.replacement, which Headwater does not "
        "implement",
    "io.debezium.schema.SchemaRegexTopicNamingStrategy":
        "needs topic.regex.enable/topic.regex/topic.replacement, which Headwater does not "
        "implement",
}

DEFAULT_DELIMITER: Final = "."
DEFAULT_TRANSACTION_TOPIC: Final = "transaction"
DEFAULT_HEARTBEAT_PREFIX: Final = "__debezium-heartbeat"
MAX_NAME_LENGTH: Final = 249  # TopicNamingStrategy.MAX_NAME_LENGTH (Kafka's limit)
TOPIC_NAME: Final = re.compile(r"[a-zA-Z0-9_.\-]+")  # CommonConnectorConfig.TOPIC_NAME_PATTERN


class TopicNamingError(ValueError):
    """A naming configuration or a set of tables that cannot be given distinct topics."""


def parse_strategy(text: str) -> str:
    """`topic.naming.strategy` parser: one of the supported class names (ValueError says which)."""
    if text in STRATEGIES:
        return text
    if text in _UNSUPPORTED:
        raise ValueError(f"a supported strategy ({text} {_UNSUPPORTED[text]}): "
                         f"one of {', '.join(STRATEGIES)}")
    raise ValueError(f"one of {', '.join(STRATEGIES)}")


def topic_name_problem(value: object) -> str | None:
    """Validator of the topic-name properties (Debezium's validateTopicName)."""
    if isinstance(value, str) and not TOPIC_NAME.fullmatch(value):
        return (f"'{value}' has invalid format (only the underscore, hyphen, dot and "
                "alphanumeric characters are allowed)")
    return None


def _units(name: str) -> Iterable[int]:
    """The UTF-16 code units of `name` (Debezium walks a Java String char by char)."""
    for ch in name:
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            yield 0xD800 + (code >> 10)
            yield 0xDC00 + (code & 0x3FF)
        else:
            yield code


def _underscore(_unit: int) -> str:
    return "_"


def _unicode(unit: int) -> str:
    digits = f"{unit:x}"
    return "_u" + ("00" + digits if len(digits) <= 2 else digits)  # as UnicodeReplacementFunction


def sanitize_topic_name(name: str, unicode: bool = False) -> str:
    """`name` with Kafka-illegal characters replaced as Debezium's `sanitizedTopicName` does
    (`unicode`: the Unicode strategies' `_uXXXX` replacement, which also escapes `_`)."""
    replace = _unicode if unicode else _underscore
    legal = "._-" if not unicode else ".-"
    out: list[str] = []
    for unit in _units(name):
        ch = chr(unit)
        if ch.isascii() and (ch.isalnum() or ch in legal):
            out.append(ch)
        else:
            out.append(replace(unit))
    sanitized = "".join(out)
    if len(sanitized) > MAX_NAME_LENGTH:
        return sanitized[:MAX_NAME_LENGTH]
    if sanitized in (".", ".."):
        return replace(ord(".")) * len(sanitized)
    return sanitized


def _table_label(table: TableId) -> str:
    return ".".join(p for p in (table.database, table.schema, table.table) if p)


class TopicNaming:
    """The topic names of one connector: data change, schema change, transaction, heartbeat."""

    __slots__ = (
        "_by_topic",
        "_topics",
        "_unicode",
        "_use_schema",
        "delimiter",
        "heartbeat_prefix",
        "prefix",
        "strategy",
        "transaction",
    )

    def __init__(
        self,
        prefix: str,
        strategy: str = SCHEMA_STRATEGY,
        delimiter: str = DEFAULT_DELIMITER,
        transaction: str = DEFAULT_TRANSACTION_TOPIC,
        heartbeat_prefix: str = DEFAULT_HEARTBEAT_PREFIX,
    ) -> None:
        try:
            parse_strategy(strategy)
        except ValueError as exc:
            raise TopicNamingError(f"topic.naming.strategy: {strategy!r}: expected {exc}") from None
        for prop, value in (("topic.prefix", prefix), ("topic.delimiter", delimiter),
                            ("topic.transaction", transaction),
                            ("topic.heartbeat.prefix", heartbeat_prefix)):
            problem = topic_name_problem(value) if value else f"'{value}' is empty"
            if problem:
                raise TopicNamingError(f"{prop}: {problem}")
        for prop, value in (("topic.prefix", prefix), ("topic.heartbeat.prefix", heartbeat_prefix)):
            if value.startswith("."):
                # Every topic name starts with it, and the local topic log keeps each topic in
                # a directory named after it: a leading '.' would make it a hidden directory.
                raise TopicNamingError(
                    f"{prop}: '{value}' starts with '.', which the local topic log refuses "
                    "(topic directories would be hidden)"
                )
        self.prefix = prefix
        self.strategy = strategy
        self.delimiter = delimiter
        self.transaction = transaction
        self.heartbeat_prefix = heartbeat_prefix
        self._use_schema = strategy in (SCHEMA_STRATEGY, SCHEMA_UNICODE_STRATEGY)
        self._unicode = strategy in (DEFAULT_UNICODE_STRATEGY, SCHEMA_UNICODE_STRATEGY)
        self._topics: dict[TableId, str] = {}
        self._by_topic: dict[str, TableId] = {}

    def _parts(self, table: TableId) -> tuple[str | None, ...]:
        if self._use_schema:
            return (table.schema, table.table)
        # The database parts (catalog, table): PostgreSQL table ids have no catalog in
        # Debezium, ours carry the database for `source.db`; a schema marks that case.
        return (table.database if table.schema is None else None, table.table)

    def data_change_topic(self, table: TableId) -> str:
        """The topic of `table`'s change events (sanitized, warned about once per table)."""
        topic = self._topics.get(table)
        if topic is not None:
            return topic
        raw = self.delimiter.join(
            p for p in (self.prefix, *self._parts(table)) if p is not None and p.strip()
        )
        topic = sanitize_topic_name(raw, self._unicode)
        if topic != raw:
            log.warning("table %s: topic '%s' isn't a valid topic name, replacing it with '%s'",
                        _table_label(table), raw, topic)
        other = self._by_topic.get(topic)
        if other is not None and other != table:
            raise TopicNamingError(
                f"tables {_table_label(other)!r} and {_table_label(table)!r} would both write "
                f"to topic '{topic}' ({self.strategy}, topic.delimiter '{self.delimiter}'): "
                "rename one, or capture only one of them"
            )
        self._by_topic[topic] = table
        self._topics[table] = topic
        return topic

    def check_tables(self, tables: Iterable[TableId]) -> dict[TableId, str]:
        """Every captured table's topic; raises `TopicNamingError` naming two tables that
        would share one.  Connectors call it at start, before creating anything on the server."""
        return {table: self.data_change_topic(table) for table in tables}

    def data_topic_prefix(self) -> str:
        """What every data change topic's name starts with: the prefix and the delimiter, as
        the strategy sanitizes them (a name longer than Kafka's limit is cut, and may not)."""
        return sanitize_topic_name(self.prefix + self.delimiter, self._unicode)

    def schema_change_topic(self) -> str:
        return self.prefix

    def transaction_topic(self) -> str:
        return f"{self.prefix}{self.delimiter}{self.transaction}"

    def heartbeat_topic(self) -> str:
        return f"{self.heartbeat_prefix}{self.delimiter}{self.prefix}"
