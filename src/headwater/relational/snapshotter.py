"""Snapshot modes as objects (Debezium's `Snapshotter`): what `snapshot.mode` decides at start.

A connector asks two questions at start-up, with what it found: is there a completed snapshot
in the stored offset, and can the log still be read from the stored position (the slot exists
and is not invalidated; the binlog was not purged)?  The answers per mode:

| mode | read data | stream |
|---|---|---|
| `initial` | unless a snapshot completed | yes |
| `initial_only` | unless a snapshot completed | no |
| `when_needed` | unless a snapshot completed and the position is still readable | yes |
| `when_needed_no_data` (SQL Server) | no; a schema snapshot where `when_needed` reads data | yes |
| `always` | yes | yes |
| `no_data` (`never` on PostgreSQL, `schema_only`) | no | yes |
| `never` (MySQL: from the oldest binlog) | no | yes |
| `recovery` (`schema_only_recovery`) | no (the schema is rebuilt) | yes |

What a mode does beyond these answers (MySQL's `never` starts at the oldest binlog; `recovery`
rebuilds the schema history) stays with the connector, which knows its log.
"""

from __future__ import annotations

from typing import ClassVar, Final


class Snapshotter:
    """`initial`: the data once, then the stream."""

    mode: ClassVar[str] = "initial"
    streams: ClassVar[bool] = True

    def reads_data(self, completed: bool, position_readable: bool) -> bool:
        """Whether to read the tables' data now."""
        return not completed

    def __repr__(self) -> str:
        return f"Snapshotter({self.mode})"


class InitialOnlySnapshotter(Snapshotter):
    mode = "initial_only"
    streams = False


class WhenNeededSnapshotter(Snapshotter):
    mode = "when_needed"

    def reads_data(self, completed: bool, position_readable: bool) -> bool:
        return not completed or not position_readable


class WhenNeededNoDataSnapshotter(WhenNeededSnapshotter):
    """Debezium 3.x's `when_needed_no_data` (only its SQL Server connector accepts it): the
    start decisions of `when_needed`, without data (no READ events)."""

    mode = "when_needed_no_data"

    def reads_data(self, completed: bool, position_readable: bool) -> bool:
        return False


class AlwaysSnapshotter(Snapshotter):
    mode = "always"

    def reads_data(self, completed: bool, position_readable: bool) -> bool:
        return True


class NoDataSnapshotter(Snapshotter):
    mode = "no_data"

    def reads_data(self, completed: bool, position_readable: bool) -> bool:
        return False


class NeverSnapshotter(NoDataSnapshotter):
    mode = "never"


class RecoverySnapshotter(NoDataSnapshotter):
    mode = "recovery"


SNAPSHOTTERS: Final[dict[str, Snapshotter]] = {
    s.mode: s for s in (Snapshotter(), InitialOnlySnapshotter(), WhenNeededSnapshotter(),
                        WhenNeededNoDataSnapshotter(), AlwaysSnapshotter(), NoDataSnapshotter(),
                        NeverSnapshotter(), RecoverySnapshotter())
}


def snapshotter_for(mode: str) -> Snapshotter:
    """The snapshotter of a validated `snapshot.mode` (aliases are resolved by validation)."""
    try:
        return SNAPSHOTTERS[mode]
    except KeyError:
        raise ValueError(f"snapshot.mode={mode!r} has no snapshotter; known: "
                         f"{', '.join(sorted(SNAPSHOTTERS))}") from None
