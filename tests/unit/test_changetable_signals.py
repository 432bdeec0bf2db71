"""The change-table connectors' incremental snapshot hook (relational.changetables.incremental)
driven change by change, with the engine's controller and an in-memory table behind the chunk
source: signal rows, watermarks and changes of the chunked table inside and outside the window,
in a fixed order, so the window's effect is exact (the emulation tests cannot place a change
inside a window on purpose)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from headwater.connectors.db2.config import validate_db2_config
from headwater.engine.incremental import ChunkRead, RawKey, SnapshotTable
from headwater.engine.signals import WINDOW_CLOSE, WINDOW_OPEN
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
from headwater.model.schema import INT32, Column, ConnectSchema, TableId, TableSchema
from headwater.relational.changetables.chunks import ChangeTableChunkSource
from headwater.relational.changetables.incremental import ChangeTableIncrementalHook
from headwater.relational.changetables.poller import Change

T = TableId("TESTDB", "S", "T")
SIGNAL = TableId("TESTDB", "S", "SIG")


def _handle(table: TableId, columns: tuple[str, ...], key: tuple[str, ...]) -> Any:
    schema = TableSchema(table, tuple(Column(c, i, "INTEGER", ConnectSchema(INT32, True))
                                      for i, c in enumerate(columns)), key)
    return SimpleNamespace(table=table, columns=columns,
                           codec=SimpleNamespace(schema=schema, convert=tuple))


class MemorySource(ChangeTableChunkSource):
    """A chunk source over an in-memory table `S.T` (id, v); watermarks are recorded and fed
    back by the test, as the change table would."""

    def __init__(self, rows: dict[int, int], strategy: str = "insert_insert") -> None:
        cfg, _ = validate_db2_config({
            "topic.prefix": "p", "database.hostname": "h", "database.user": "u",
            "database.dbname": "TESTDB", "signal.data.collection": "S.SIG",
            "incremental.snapshot.chunk.size": "3",
            "incremental.snapshot.watermarking.strategy": strategy})
        super().__init__(cfg, SourceContext("db2", "p", "3.0"))
        self.rows = rows
        self.table = _handle(T, ("ID", "V"), ("ID",))
        self.watermarks: list[tuple[str, bool]] = []

    def signal_table_ids(self) -> list[TableId]:
        return [SIGNAL]

    def handles(self, conn: Any, database: str) -> list[Any]:
        return [self.table, _handle(SIGNAL, ("ID", "TYPE", "DATA"), ("ID",))]

    def connect(self, database: str) -> Any:
        return SimpleNamespace(rollback=lambda: None, close=lambda: None)

    def table_id(self, collection: tuple[str, ...]) -> TableId:
        return TableId("TESTDB", *collection)

    def collection(self, table: TableId) -> tuple[str, ...]:
        return (table.schema or "", table.table)

    def max_key(self, table: SnapshotTable) -> RawKey | None:
        return [max(self.rows)] if self.rows else None

    def read_chunk(self, table: SnapshotTable, after: RawKey | None, maximum: RawKey,
                   limit: int) -> ChunkRead:
        keys = sorted(k for k in self.rows if (after is None or k > after[0]) and k <= maximum[0])
        keys = keys[:limit]
        return ChunkRead(self.table.codec.schema, [((k,), (k, self.rows[k])) for k in keys],
                         [keys[-1]] if keys else None)

    def write_watermark(self, chunk_id: str, opening: bool) -> None:
        self.watermarks.append((chunk_id, opening))


class Stream:
    """Feeds the hook as the streaming loop does: one change per transaction."""

    def __init__(self, hook: ChangeTableIncrementalHook) -> None:
        self.hook = hook
        self.commit = 0
        self.emitted: list[ChangeRecord] = []

    def change(self, table: Any, op: Op, before: tuple[Any, ...] | None,
               after: tuple[Any, ...] | None) -> None:
        self.commit += 1
        lsn = self.commit.to_bytes(10, "big")
        self.emitted += self.hook.change(Change(table, op, before, after, lsn, lsn, 1, None),
                                         f"pos-{self.commit}")
        self.hook.committed(lsn)

    def signal(self, ident: str, kind: str, data: str | None = None) -> None:
        self.change(self.hook.source.handles(None, "TESTDB")[1], Op.CREATE, None,
                    (ident, kind, data))

    def watermarks(self, source: MemorySource) -> None:
        """The watermarks written so far come back through the change table."""
        written, source.watermarks = source.watermarks, []
        for chunk_id, opening in written:
            if opening or source.signals.watermarking_strategy == "insert_insert":
                self.signal(f"{chunk_id}-{'open' if opening else 'close'}",
                            WINDOW_OPEN if opening else WINDOW_CLOSE)
            else:
                self.change(source.handles(None, "TESTDB")[1], Op.DELETE,
                            (f"{chunk_id}-open", WINDOW_OPEN, None), None)


def _session(rows: dict[int, int], strategy: str = "insert_insert"
             ) -> tuple[MemorySource, ChangeTableIncrementalHook, Stream]:
    source = MemorySource(rows, strategy)
    hook = ChangeTableIncrementalHook(source, source.context)
    hook.start(None, lambda: None, lambda records: None)
    return source, hook, Stream(hook)


def _reads(stream: Stream) -> list[tuple[Any, ...]]:
    assert all(r.op is Op.READ and r.snapshot is SnapshotMarker.INCREMENTAL
               for r in stream.emitted)
    return [r.after for r in stream.emitted if r.after is not None]


def test_a_change_inside_the_window_drops_its_read_and_one_before_it_does_not() -> None:
    source, hook, stream = _session({1: 10, 2: 20, 3: 30, 4: 40})
    stream.signal("s1", "execute-snapshot", '{"data-collections": ["S.T"]}')
    assert [opening for _, opening in source.watermarks] == [True, False]  # chunk 1 read
    t = source.table
    stream.change(t, Op.UPDATE, (1, 10), (1, 11))  # before the open watermark: kept
    source.rows[1] = 11
    written, source.watermarks = source.watermarks, []
    chunk = written[0][0]
    stream.signal(f"{chunk}-open", WINDOW_OPEN)
    stream.change(t, Op.UPDATE, (2, 20), (2, 21))  # inside: the chunk's row of key 2 is stale
    stream.change(t, Op.DELETE, (3, 30), None)  # inside: the row is gone
    stream.signal(f"{chunk}-close", WINDOW_CLOSE)
    assert _reads(stream) == [(1, 10)]  # 2 and 3 dropped (the read's row 1 is what it read)
    assert [r.position for r in stream.emitted] == [f"pos-{stream.commit}"]  # at the close
    assert hook.offset_fields()["incremental_snapshot_primary_key"] == [3]
    # the next chunk starts at the close's commit: key 4, no change in its window
    stream.watermarks(source)
    assert _reads(stream)[1:] == [(4, 40)]
    assert hook.offset_fields() == {}  # done: no progress left in the offsets


def test_insert_delete_closes_on_the_delete_of_the_open_row() -> None:
    source, _hook, stream = _session({1: 10, 2: 20}, "insert_delete")
    stream.signal("s1", "execute-snapshot", '{"data-collections": ["S.T"]}')
    stream.watermarks(source)
    assert _reads(stream) == [(1, 10), (2, 20)]


def test_a_key_change_drops_both_keys_and_another_table_drops_nothing() -> None:
    source, _hook, stream = _session({1: 10, 2: 20, 3: 30})
    stream.signal("s1", "execute-snapshot", '{"data-collections": ["S.T"]}')
    chunk = source.watermarks[0][0]
    source.watermarks = []
    other = _handle(TableId("TESTDB", "S", "OTHER"), ("ID", "V"), ("ID",))
    stream.signal(f"{chunk}-open", WINDOW_OPEN)
    stream.change(other, Op.DELETE, (1, 10), None)
    stream.change(source.table, Op.UPDATE, (2, 20), (9, 20))
    stream.signal(f"{chunk}-close", WINDOW_CLOSE)
    assert _reads(stream) == [(1, 10), (3, 30)]


def test_pause_resume_and_stop_act_between_chunks() -> None:
    source, hook, stream = _session({k: k for k in range(1, 10)})
    stream.signal("s1", "execute-snapshot", '{"data-collections": ["S.T"]}')
    stream.signal("p", "pause-snapshot")  # the chunk in flight completes
    stream.watermarks(source)
    assert _reads(stream) == [(1, 1), (2, 2), (3, 3)] and source.watermarks == []
    assert hook.offset_fields()["incremental_snapshot_paused"] is True
    stream.signal("r", "resume-snapshot")
    stream.watermarks(source)
    assert len(_reads(stream)) == 6
    stream.signal("s", "stop-snapshot", '{"data-collections": ["S.T"]}')
    stream.watermarks(source)  # the chunk in flight has no table any more: nothing emitted
    assert len(_reads(stream)) == 6 and hook.offset_fields() == {}


def test_a_restart_resumes_after_the_stored_key() -> None:
    source, hook, stream = _session({k: k for k in range(1, 8)})
    stream.signal("s1", "execute-snapshot", '{"data-collections": ["S.T"]}')
    stream.watermarks(source)
    offset = hook.offset_fields()
    assert offset["incremental_snapshot_primary_key"] == [3]
    again = ChangeTableIncrementalHook(source, source.context)
    again.start(offset, lambda: None, lambda records: None)
    source.watermarks = []
    second = Stream(again)
    again.boundary()  # the first idle poll starts the stored snapshot's next chunk
    second.watermarks(source)
    second.watermarks(source)
    assert _reads(second) == [(k, k) for k in range(4, 8)]
