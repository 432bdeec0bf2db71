"""The signal properties as the change-table connectors read them.

Why apart from the shared signal properties (headwater.config.signals): two rules are the
change-table connectors' own, as Debezium 3.x has them.

* `signal.data.collection` names the signal table fully qualified as the connector names its
  tables: `<database>.<schema>.<table>` for SQL Server (3.x requires the database part), and a
  comma-separated list of them with several `database.names`, one signal table per database;
  `<schema>.<table>` for Db2.  A wrong form is an error at start, not a signal that never
  arrives.
* `read.only` (MySQL's read-only watermarking) is refused: these connectors' watermarks are rows
  of the signal table, seen back through its change table; there is nothing else to close a
  window on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from headwater.config.definition import (
    ConfigValue,
    Property,
    PropertyType,
    ValidationContext,
)

SIGNAL_DATA_COLLECTION: Final = "signal.data.collection"


def split_names(text: str) -> list[str]:
    """A comma-separated list of data collection names; a comma inside double quotes belongs to
    the name (`"my,schema".t`)."""
    names: list[str] = []
    current: list[str] = []
    quoted = False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == "," and not quoted:
            names.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    names.append("".join(current).strip())
    return [n for n in names if n]


def signal_collections(text: str | None) -> tuple[tuple[str, ...], ...]:
    """The signal tables `signal.data.collection` names, each as its name parts."""
    from headwater.model.collection import split_collection

    return tuple(split_collection(n) for n in split_names(text or ""))


def _validator(parts: int, form: str, several: bool) -> Callable[[ConfigValue], str | None]:
    def check(value: ConfigValue) -> str | None:
        if not isinstance(value, str) or not value.strip():
            return None
        from headwater.model.collection import SignalError, split_collection

        names = split_names(value)
        if len(names) > 1 and not several:
            return f"name one signal table ({form}), not {len(names)}"
        for name in names:
            try:
                found = len(split_collection(name))
            except SignalError as exc:
                return str(exc)
            if found != parts:
                return f"{name!r}: name the signal table as {form}"
        return None

    return check


def signal_collection_property(parts: int, form: str, *, several: bool) -> Property:
    """The connector's `signal.data.collection`: `parts` name parts (`form` in errors), a
    comma-separated list when `several`."""
    listed = ", a comma-separated list with one per database" if several else ""
    return Property(SIGNAL_DATA_COLLECTION, PropertyType.STRING,
                    validator=_validator(parts, form, several),
                    doc=f"the signal table, {form}{listed}; it must be captured (CDC enabled), "
                        "its rows (id, type, data) are read from its change table")


def with_signal_collection(properties: Sequence[Property], replacement: Property
                           ) -> tuple[Property, ...]:
    """`properties` with the shared `signal.data.collection` replaced."""
    return tuple(replacement if p.name == SIGNAL_DATA_COLLECTION else p for p in properties)


def check_read_only(database: str) -> Callable[[ValidationContext], None]:
    """A check refusing `read.only=true`: `database`'s watermarks are signal table rows."""

    def check(context: ValidationContext) -> None:
        if context.values.get("read.only") is True:
            context.error(
                f"read.only=true: the {database} connector has no read-only incremental "
                "snapshots (Debezium has them for MySQL only); its watermarks are rows of the "
                f"signal table ({SIGNAL_DATA_COLLECTION}), seen back through its change table")

    return check


def check_signal_databases(context: ValidationContext) -> None:
    """SQL Server: every signal table's database is one of `database.names`."""
    text = context.values.get(SIGNAL_DATA_COLLECTION)
    names = context.values.get("database.names")
    if not isinstance(text, str) or not isinstance(names, tuple) or not context.ok(
            SIGNAL_DATA_COLLECTION, "database.names"):
        return
    seen: set[str] = set()
    for parts in signal_collections(text):
        database = parts[0]
        if database not in names:
            context.error(f"{SIGNAL_DATA_COLLECTION}: the signal table {'.'.join(parts)} is in "
                          f"database {database!r}, which is not in database.names "
                          f"({', '.join(names)})")
        elif database in seen:
            context.error(f"{SIGNAL_DATA_COLLECTION}: two signal tables in database "
                          f"{database!r}; name one per database")
        seen.add(database)
