"""What every relational connector's incremental snapshot shares: the chunk source's two
connections and keyset predicates, and the streaming hook's session with the controller.

The engine (`headwater.engine.incremental`) runs the watermark algorithm against a 5-method
`ChunkSource`; a relational connector implements it with SQL.  The parts that are the same SQL
and the same bookkeeping for every database live here:

- `encode_key_value` / `decode_key_value`: a key value as JSON in the offsets and back, tagged
  where JSON has no such type (the drivers' natural values: Decimal, bytes, dates, times, UUIDs);
- `keyset_where`: "the rows after this key, up to that one" for a composite key, either as
  a row comparison ``(a, b) > (%s, %s)`` (PostgreSQL) or spelled out lexicographically
  ``a >= %s AND (a > %s OR (a = %s AND b > %s))`` (what MariaDB plans well);
- `IncrementalHookBase`: the streaming side's session - the controller built from the signal
  configuration and the stored offset, the close / actions / boundary steps every hook repeats,
  and a signal table row (a signal, or a watermark that opens or closes the window);
- `LogIncrementalHook`: a log that names tables by ids it announces before their rows
  (pgoutput's relations, the binlog's table maps): which ids the hook must be shown.

The chunk source itself is `headwater.relational.chunk_source` (PostgreSQL, MySQL) and
`headwater.relational.changetables.chunks` (SQL Server, Db2).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from headwater.config.signals import SignalConfig
from headwater.engine.incremental import IncrementalSnapshotController, IncrementalSnapshotError
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.signals import WINDOW_CLOSE, WINDOW_OPEN, Signal, signal_from_row
from headwater.model.collection import same_collection
from headwater.model.record import ChangeRecord, SourceContext

log = logging.getLogger("headwater.relational.incremental")

EmitBlocking = Callable[[list[ChangeRecord]], None]


def encode_key_value(value: Any) -> Any:
    """A natural key value as JSON (tagged where JSON has no such type)."""
    if value is None or isinstance(value, bool | int | str | float):
        return value
    if isinstance(value, Decimal):
        return {"decimal": str(value)}
    if isinstance(value, bytes | bytearray):
        return {"hex": bytes(value).hex()}
    if isinstance(value, datetime):
        return {"datetime": value.isoformat()}
    if isinstance(value, date):
        return {"date": value.isoformat()}
    if isinstance(value, timedelta):
        return {"time_us": value // timedelta(microseconds=1)}
    if isinstance(value, time):
        return {"time": value.isoformat()}
    if isinstance(value, uuid.UUID):
        return {"uuid": str(value)}
    raise IncrementalSnapshotError(f"a key value {value!r} cannot be stored in the offsets")


def decode_key_value(value: Any) -> Any:
    """The inverse of `encode_key_value`: a value the driver turns into a literal of its type."""
    if not isinstance(value, dict):
        return value
    if "decimal" in value:
        return Decimal(value["decimal"])
    if "hex" in value:
        return bytes.fromhex(value["hex"])
    if "datetime" in value:
        return datetime.fromisoformat(value["datetime"])
    if "date" in value:
        return date.fromisoformat(value["date"])
    if "time_us" in value:
        return timedelta(microseconds=int(value["time_us"]))
    if "time" in value:
        return time.fromisoformat(value["time"])
    if "uuid" in value:
        return uuid.UUID(value["uuid"])
    raise IncrementalSnapshotError(f"a stored key value {value!r} is not understood")


def _lexicographic(columns: Sequence[str], marks: Sequence[str], op: str) -> str:
    """``(c1, c2, ...) op (m1, m2, ...)`` spelled out (op ``>`` or ``<=``); parameters are
    consumed as `_lex_params` lists them."""
    strict = ">" if op == ">" else "<"
    terms: list[str] = []
    for i, col in enumerate(columns):
        eq = [f"{c} = {m}" for c, m in zip(columns[:i], marks, strict=False)]
        terms.append("(" + " AND ".join([*eq, f"{col} {strict} {marks[i]}"]) + ")")
    if op == "<=":
        terms.append("(" + " AND ".join(
            f"{c} = {m}" for c, m in zip(columns, marks, strict=True)) + ")")
    text = " OR ".join(terms)
    # The first column bounds the range, which lets the optimizer use the index.
    return f"{columns[0]} {op[0]}= {marks[0]} AND ({text})"


def _lex_params(values: Sequence[Any], op: str) -> list[Any]:
    params: list[Any] = [values[0]]
    for i in range(len(values)):
        params.extend(values[: i + 1])
    if op == "<=":
        params.extend(values)
    return params


def keyset_where(
    columns: Sequence[str], marks: Sequence[str], after: Sequence[Any] | None,
    maximum: Sequence[Any] | None, condition: str | None, *, row_comparison: bool,
) -> tuple[str, list[Any]]:
    """The WHERE clause of a chunk: key after `after` and at most `maximum` (either may be
    None), and the signal's additional condition.  `columns` are quoted key columns, `marks`
    their placeholders (``%s``, or typed like ``%s::int``)."""
    parts: list[str] = []
    params: list[Any] = []
    for bound, op in ((after, ">"), (maximum, "<=")):
        if bound is None:
            continue
        if len(columns) == 1:
            parts.append(f"{columns[0]} {op} {marks[0]}")
            params.append(bound[0])
        elif row_comparison:
            parts.append(f"({', '.join(columns)}) {op} ({', '.join(marks)})")
            params.extend(bound)
        else:
            parts.append(_lexicographic(columns, marks, op))
            params.extend(_lex_params(bound, op))
    if condition:
        parts.append(f"({condition.replace('%', '%%')})")  # not a placeholder
    return (" WHERE " + " AND ".join(parts) if parts else ""), params


class IncrementalHookBase:
    """The streaming loop's side of incremental snapshots, as far as it is not the log's own."""

    def __init__(self, source: Any, context: SourceContext,
                 metrics: CaptureMetrics | None = None) -> None:
        self.source = source
        self.context = context
        self.metrics = metrics
        self.controller: IncrementalSnapshotController | None = None
        self.watched: frozenset[int] = frozenset()

    def _start_controller(self, offset: dict[str, Any] | None) -> None:
        """A new streaming session: the controller resumes from the stored offset."""
        cfg: SignalConfig = self.source.signals
        if self.controller is not None:
            self.controller.close_channels()
        self.controller = IncrementalSnapshotController(
            self.source, self.context, chunk_size=cfg.chunk_size, offset=offset,
            file_channel=cfg.file if cfg.file_channel else None, kafka_channel=cfg.kafka,
            poll_interval_s=cfg.poll_interval_ms / 1000.0,
            allow_schema_changes=cfg.allow_schema_changes, metrics=self.metrics,
            connector_signals=self.connector_signals(),
        )

    def connector_signals(self) -> dict[str, Callable[[Signal], None]]:
        """The connector's own signal types and their handlers (none by default)."""
        return {}

    def _ctl(self) -> IncrementalSnapshotController:
        assert self.controller is not None, "hook used before start"
        return self.controller

    def _refresh(self) -> None:
        """Recompute `watched` after a window or the known tables changed."""
        raise NotImplementedError

    def offset_fields(self) -> dict[str, Any]:
        return self._ctl().offset_fields()

    def actions(self, before_blocking: Callable[[], None], emit_blocking: EmitBlocking) -> None:
        """At a commit, before the offset passes it: signals of the transaction take effect."""
        self._ctl().boundary(emit_blocking, before_blocking, start_chunk=False)
        self._refresh()

    def _next_chunk(self, emit_blocking: EmitBlocking, before_blocking: Callable[[], None]
                    ) -> None:
        """Between transactions: actions, file channel, next chunk."""
        ctl = self._ctl()
        if not ctl.idle:
            ctl.boundary(emit_blocking, before_blocking)
            self._refresh()

    def _close(self, position: Any) -> list[ChangeRecord]:
        records = self._ctl().close(position)
        self._refresh()
        return records

    def _close_past(self, passed: Callable[[Any], bool], position: Callable[[], Any]
                    ) -> list[ChangeRecord]:
        """Read-only: the window closes here if the stream `passed` its high watermark."""
        high = self._ctl().read_only_high
        return self._close(position()) if high is not None and passed(high) else []

    def _keys_changed(self, images: Sequence[Sequence[Any]], index: tuple[int, ...] | None
                      ) -> None:
        """A change of the chunked table: its row images, and where its key sits in them
        (None: a key column is not there, so every row of the chunk may be the one changed)."""
        if index is None:
            self._ctl().truncated()
        else:
            self._ctl().key_changed(*(tuple([image[i] for i in index]) for image in images))

    def _signal_row(self, values: Sequence[Any] | None, inserted: bool,
                    position: Callable[[], Any]) -> list[ChangeRecord]:
        """A row inserted into (or deleted from) the signal table: a watermark of this
        connector's (the open row's delete closes with ``insert_delete``), else a signal, whose
        action runs at the transaction's commit - only with the `source` channel enabled, the
        table also holds the watermarks of snapshots other channels ask for.  Returns the
        window's READ records when it closes."""
        ctl = self._ctl()
        if not values:
            return []
        if not inserted:
            ident = _text(values[0])
            if isinstance(ident, str) and ctl.watermark(ident, False):
                return self._close(position())
            return []
        sig = signal_from_row([_text(v) for v in values])
        if sig.type not in (WINDOW_OPEN, WINDOW_CLOSE):
            if self.source.signals.source_channel:
                ctl.signal(sig)
        elif ctl.watermark(sig.id, sig.type == WINDOW_OPEN):
            return self._close(position())
        elif sig.type == WINDOW_OPEN:
            log.debug("incremental snapshot step: window %s open", sig.id)
        return []

    def close(self) -> None:
        self.source.close()


def _text(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return value


class LogIncrementalHook(IncrementalHookBase):
    """A log that names a table by an id it announces (a pgoutput Relation, a binlog
    TABLE_MAP) before the table's rows.

    The streaming loop asks `watched` (the ids whose rows it must show the hook: the signal
    table's and the chunked table's) on every row, so it is a plain set, updated when a table
    is announced and recomputed when a window starts or ends.
    """

    def __init__(self, source: Any, context: SourceContext,
                 metrics: CaptureMetrics | None = None) -> None:
        super().__init__(source, context, metrics)
        self._names: dict[int, tuple[str, ...]] = {}
        self._signal_ids: set[int] = set()
        self._window_ids: set[int] = set()

    def _start(self, offset: dict[str, Any] | None) -> None:
        self._start_controller(offset)
        self._names.clear()
        self._signal_ids.clear()
        self._refresh()

    def _announce(self, table_id: int, name: tuple[str, ...]) -> None:
        self._names[table_id] = name
        signal = self.source.signal_table
        for ids, hit in (
            (self._signal_ids, signal is not None and self.source.signals.source_channel
             and same_collection(signal, name)),
            (self._window_ids, name == self._ctl().window_table),
        ):
            if hit:
                ids.add(table_id)
            else:
                ids.discard(table_id)
        self.watched = frozenset(self._signal_ids | self._window_ids)

    def _refresh(self) -> None:
        window = self._ctl().window_table
        self._window_ids = {i for i, name in self._names.items() if name == window}
        self.watched = frozenset(self._signal_ids | self._window_ids)
