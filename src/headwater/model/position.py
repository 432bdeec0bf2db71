"""What every connector's position (the `position` of a ChangeRecord) offers the rest of the
code, whatever the database: an order key and the fields it contributes to the `source` block.

Why a Protocol and not a base class: positions are NamedTuples built with `tuple.__new__` on
the capture hot path; a Protocol costs nothing there and still lets the engine, the tests and
new connectors rely on the two members.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Position(Protocol):
    """A change's place in its source's change stream."""

    @property
    def order_key(self) -> tuple[Any, ...]:
        """Orders the changes of one connector instance (equal keys: the same change)."""
        ...

    def source_fields(self) -> dict[str, Any]:
        """The `source` block fields Debezium derives from the position."""
        ...
