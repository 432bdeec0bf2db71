"""Which definition decodes each change table's rows, and where a table's definition changes:
the schema half of a change-table stream (Debezium's SqlServerStreamingChangeEventSource
`getChangeTablesToQuery` / `migrateTable`, and Db2's).

A change table (an SQL Server capture instance, a Db2 registration) starts at its start LSN.
For each captured table the follower knows, at the stream's position:

- a table the schema does not know yet gets a CREATE (the definition of the change table it is
  read from now), before any of its rows;
- a change table that starts after the position is a *checkpoint*: its definition takes over
  right before the first change at or after its start LSN (or at the end of a poll that read
  past its start without one), with an ALTER when it differs from the one in force.  Until
  then the rows of the older change table are decoded with the definition in force, which
  after a restart is the schema history's;
- the oldest change table of a known table is not a checkpoint when the definition in force
  has exactly its columns, even if it starts after the position: it is the one that
  definition was recorded from.  A capture instance enabled after the last change starts past
  the maximum LSN, so a snapshot taken then (and its offset) sits before its start; a restart
  there must keep the recorded definition, not switch to today's catalog, which may have lost
  columns the instance's rows still carry (Debezium's current change table likewise takes the
  schema's definition).  With other columns it is a newer change table (the one the definition
  came from was dropped meanwhile) and a checkpoint as above.

Debezium's SQL Server connector migrates at the first change at or after the new instance's
start LSN as well; its Db2 connector at the first change of the poll that found the new
registration.  Headwater places both at the start LSN (docs/compatibility.md), so a schema
change sits between the data events where it took effect.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from headwater.model.record import SchemaChangeEvent
from headwater.model.schema import TableId
from headwater.relational.changetables.codecs import CodecCache
from headwater.relational.changetables.position import LsnPosition
from headwater.relational.changetables.schema import ChangeTableSchema
from headwater.relational.codec import RelationalTableCodec
from headwater.relational.table_definition import TableDefinition


class ChangeTableHandle(Protocol):
    """What the follower needs of a change table (sqlserver CaptureInstance, db2 ChangeTable)."""

    @property
    def table(self) -> TableId: ...

    @property
    def start_lsn(self) -> bytes | None: ...

    @property
    def change_columns(self) -> tuple[str, ...]: ...  # the change table's data columns

    @property
    def definition(self) -> TableDefinition | None: ...  # today's catalog, these columns


def _start(handle: ChangeTableHandle) -> bytes:
    return handle.start_lsn or b""


def _key(handle: ChangeTableHandle) -> tuple[str, bytes]:
    return (str(handle), _start(handle))


def _definition(handle: ChangeTableHandle) -> TableDefinition:
    if handle.definition is None:
        raise ValueError(f"{handle}: no table definition")
    return handle.definition


class SchemaFollower:
    """The schema of one stream's change tables; `position` gives the stream's position (the
    last change handed on) for the records and events."""

    def __init__(self, schema: ChangeTableSchema, codecs: CodecCache,
                 position: Callable[[], LsnPosition]) -> None:
        self.schema = schema
        self.codecs = codecs
        self.position = position
        self._creates: list[ChangeTableHandle] = []
        self._checkpoints: list[ChangeTableHandle] = []
        self._done: set[tuple[str, bytes]] = set()
        # id(handle) -> (handle, definition, codec): the hot path's cache (see `codec`)
        self._codecs: dict[int, tuple[Any, int, RelationalTableCodec]] = {}

    def track(self, handles: Iterable[ChangeTableHandle], at: bytes | None) -> None:
        """Plans the CREATEs and checkpoints of `handles` (all change tables of the stream,
        as listed now) for a stream at commit LSN `at`."""
        position = at or b""
        by_table: dict[TableId, list[ChangeTableHandle]] = {}
        for handle in sorted(handles, key=_start):
            by_table.setdefault(handle.table, []).append(handle)
        known = set(self.schema.tables) | {h.table for h in self._creates}
        for table, group in by_table.items():
            crossed = [h for h in group if _start(h) <= position]
            active = crossed[-1] if crossed else group[0]
            later = [h for h in group if _start(h) > position]
            if table not in known:
                self._creates.append(active)
            if table not in known or (not crossed and self._in_force(active)):
                later = [h for h in later if h is not active]
            for handle in later:
                if _key(handle) not in self._done and _key(handle) not in {
                        _key(c) for c in self._checkpoints}:
                    self._checkpoints.append(handle)
        self._checkpoints.sort(key=_start)

    def _in_force(self, handle: ChangeTableHandle) -> bool:
        """The definition in force for `handle`'s table has exactly its change table's columns
        (a capture instance's columns are fixed when it is created)."""
        definition = self.schema.definition(handle.table)
        return definition is not None and {c.name for c in definition.columns} == set(
            handle.change_columns)

    def before(self, commit: bytes) -> list[SchemaChangeEvent]:
        """The schema changes that take effect before a change at `commit` (at the end of a
        poll: before anything after it)."""
        events: list[SchemaChangeEvent] = []
        while self._creates:
            handle = self._creates.pop(0)
            events.extend(self.schema.create(_definition(handle), self.position()))
        while self._checkpoints and _start(self._checkpoints[0]) <= commit:
            handle = self._checkpoints.pop(0)
            self._done.add(_key(handle))
            events.extend(self.schema.alter(_definition(handle), self.position()))
        return events

    def codec(self, handle: Any) -> RelationalTableCodec:
        """The codec of a row of `handle`: the definition in force for its table, mapped onto
        the change table's columns.  On the capture's hot path: remembered per handle object
        until the schema changes (its `version`)."""
        cached = self._codecs.get(id(handle))
        version = self.schema.version
        if cached is not None and cached[0] is handle and cached[1] == version:
            return cached[2]
        definition = self.schema.definition(handle.table) or _definition(handle)
        codec = self.codecs.get(definition, handle.change_columns, str(handle))
        if len(self._codecs) > 1024:
            self._codecs.clear()
        self._codecs[id(handle)] = (handle, version, codec)
        return codec
