"""The engine's event dispatcher: what every connector's changes go through, tested alone."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from headwater.engine.dispatcher import (
    DispatchOptions,
    EventConvertingError,
    EventDispatcher,
    EventProcessingError,
)
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.queue import Batch
from headwater.model.record import (
    ABSENT,
    ChangeRecord,
    HeartbeatEvent,
    Op,
    SourceContext,
    TransactionEvent,
)
from headwater.model.schema import INT32, STRING, Column, ConnectSchema, TableId, TableSchema
from headwater.relational.codec import RelationalTableCodec

CONTEXT = SourceContext("postgresql", "srv", "3.0")


def table(name: str = "t") -> TableSchema:
    return TableSchema(
        id=TableId("db", "public", name),
        columns=(Column("id", 0, "int4", ConnectSchema(INT32, optional=False)),
                 Column("v", 1, "text", ConnectSchema(STRING, optional=True))),
        key_columns=("id",),
    )


def dispatcher(**options: Any) -> tuple[EventDispatcher, list[Batch], CaptureMetrics]:
    batches: list[Batch] = []
    metrics = CaptureMetrics()
    d = EventDispatcher(CONTEXT, DispatchOptions(**options), metrics, batches.append)
    return d, batches, metrics


def ops(d: EventDispatcher) -> list[str]:
    out = []
    for e in d.pending:
        if isinstance(e, ChangeRecord):
            out.append(e.op.value)
        elif isinstance(e, TransactionEvent):
            out.append(e.status)
        else:
            out.append(type(e).__name__)
    return out


def test_a_key_changing_update_becomes_delete_and_create_with_the_other_image() -> None:
    d, _, _ = dispatcher()
    t = table()
    d.change(t, Op.UPDATE, (1, "a"), (2, "a"), 10, "p")
    delete, create = d.pending
    assert isinstance(delete, ChangeRecord) and isinstance(create, ChangeRecord)
    assert (delete.op, delete.before, delete.after, delete.other_key) == (
        Op.DELETE, (1, "a"), None, (2, "a"))
    assert (create.op, create.before, create.after, create.other_key) == (
        Op.CREATE, None, (2, "a"), (1, "a"))


def test_an_update_with_an_unknown_old_key_stays_an_update() -> None:
    d, _, _ = dispatcher()
    d.change(table(), Op.UPDATE, (ABSENT, ABSENT), (2, "a"), 10, "p")
    d.change(table(), Op.UPDATE, None, (2, "b"), 10, "p")
    d.change(table(), Op.UPDATE, (2, "b"), (2, "c"), 10, "p")
    assert ops(d) == ["u", "u", "u"]


@pytest.mark.parametrize(("skipped", "expected"), [
    ("u", ["d", "c", "c", "d"]),  # the key change still emits its delete and create
    ("d", ["c", "u", "c"]),
    ("c", ["d", "u", "d"]),
    ("cud", []),
])
def test_skipped_operations_apply_to_each_emitted_operation(
    skipped: str, expected: list[str]
) -> None:
    d, _, metrics = dispatcher(skipped_operations=frozenset(skipped))
    t = table()
    d.change(t, Op.UPDATE, (1, "a"), (2, "a"), 10, "p")  # d + c
    d.change(t, Op.UPDATE, (2, "a"), (2, "b"), 10, "p")  # u
    d.change(t, Op.CREATE, None, (3, "x"), 10, "p")
    d.change(t, Op.DELETE, (3, "x"), None, 10, "p")
    assert ops(d) == expected
    assert metrics.events_filtered == 5 - len(expected)


def test_truncates_are_skipped_by_default_and_emitted_with_none() -> None:
    d, _, _ = dispatcher()
    d.truncate(table(), 10, "p")
    assert d.pending == []
    d, _, _ = dispatcher(skipped_operations=frozenset())
    d.truncate(table(), 10, "p")
    assert ops(d) == ["t"]


def test_transaction_metadata_counts_emitted_events_per_collection() -> None:
    d, _, metrics = dispatcher(transaction_metadata=True)
    a, b = table("a"), table("b")
    d.begin("42", 1000, "begin-pos")
    d.change(a, Op.CREATE, None, (1, "x"), 1000, "p1")
    d.change(b, Op.UPDATE, (1, "x"), (5, "x"), 1000, "p2")  # key change: two events
    d.change(a, Op.CREATE, None, (2, "y"), 1000, "p3")
    d.commit(1000, "end-pos")
    assert ops(d) == ["BEGIN", "c", "d", "c", "c", "END"]
    records = [e for e in d.pending if isinstance(e, ChangeRecord)]
    assert [r.tx for r in records] == [  # (TxInfo: id, total_order, data_collection_order)
        ("42", 1, 1), ("42", 2, 1), ("42", 3, 2), ("42", 4, 2)]
    begin, end = d.pending[0], d.pending[-1]
    assert isinstance(begin, TransactionEvent) and begin.position == "begin-pos"
    assert isinstance(end, TransactionEvent)
    assert end.event_count == 4
    assert end.data_collections == (("public.a", 2), ("public.b", 2))
    assert (metrics.committed_transactions, metrics.last_transaction_id) == (1, "42")


def test_a_transaction_with_nothing_emitted_has_no_begin_or_end() -> None:
    d, _, _ = dispatcher(transaction_metadata=True, skipped_operations=frozenset("c"))
    d.begin("7", 0, None)
    d.change(table(), Op.CREATE, None, (1, "x"), 0, None)
    d.commit(0, None)
    assert d.pending == []


def test_without_metadata_events_carry_no_transaction_block() -> None:
    d, _, _ = dispatcher()
    d.begin("7", 0, None)
    d.change(table(), Op.CREATE, None, (1, "x"), 0, None)
    d.commit(0, None)
    (record,) = d.pending
    assert isinstance(record, ChangeRecord) and record.tx is None


def test_replayed_events_count_but_are_not_emitted() -> None:
    """A restart in the middle of a transaction: what the first run wrote is re-read."""
    first, _, _ = dispatcher(transaction_metadata=True)
    resumed, _, _ = dispatcher(transaction_metadata=True)
    t = table()
    for d, replayed in ((first, 0), (resumed, 2)):
        d.begin("9", 0, None)
        for i in range(4):
            d.replaying = i < replayed
            d.change(t, Op.CREATE, None, (i, "x"), 0, None)
        d.replaying = False
        d.commit(0, None)
    assert ops(first) == ["BEGIN", "c", "c", "c", "c", "END"]
    assert ops(resumed) == ["c", "c", "END"]  # the BEGIN went out with the first run's rows
    resumed_tx = [e.tx for e in resumed.pending if isinstance(e, ChangeRecord)]
    first_tx = [e.tx for e in first.pending if isinstance(e, ChangeRecord)]
    assert resumed_tx == first_tx[2:]  # numbered as the first run numbered them
    assert resumed.pending[-1] == first.pending[-1]  # END counts all four


def test_rollback_drops_only_the_transaction_pending() -> None:
    d, _, _ = dispatcher()
    d.change(table(), Op.CREATE, None, (1, "kept"), 0, None)
    d.begin("x", 0, None)
    d.change(table(), Op.CREATE, None, (2, "rolled back"), 0, None)
    d.rollback()
    assert [e.after for e in d.pending if isinstance(e, ChangeRecord)] == [(1, "kept")]


def test_flush_hands_pending_events_with_offset_and_ack() -> None:
    d, batches, _ = dispatcher(max_batch_size=2)
    d.change(table(), Op.CREATE, None, (1, "x"), 0, None)
    assert not d.full
    d.change(table(), Op.CREATE, None, (2, "x"), 0, None)
    assert d.full
    d.flush({"lsn": 5}, 5)
    assert len(batches) == 1 and batches[0].offset == {"lsn": 5} and batches[0].ack == 5
    assert len(batches[0].records) == 2 and d.pending == []


def test_heartbeats_follow_the_interval_and_run_the_action(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[int] = []
    d = EventDispatcher(CONTEXT, DispatchOptions(heartbeat_interval_s=0.0), CaptureMetrics(),
                        lambda b: None, lambda: calls.append(1))
    assert not d.heartbeat_due()  # 0 disables heartbeats
    d = EventDispatcher(CONTEXT, DispatchOptions(heartbeat_interval_s=0.001), CaptureMetrics(),
                        lambda b: None, lambda: calls.append(1))
    d.last_heartbeat -= 1
    assert d.heartbeat_due() and not d.heartbeat_due()  # the interval starts again
    d.run_heartbeat_action()
    d.heartbeat("pos")
    assert calls == [1] and isinstance(d.pending[0], HeartbeatEvent)

    def failing() -> None:
        raise RuntimeError("no such table")

    d.heartbeat_action = failing
    with caplog.at_level(logging.WARNING):
        d.run_heartbeat_action()  # logged, not raised: the heartbeat still goes out
    assert "heartbeat.action.query failed: no such table" in caplog.text


def _codec() -> RelationalTableCodec:
    def strict_int(value: Any) -> int:
        return int(value)

    return RelationalTableCodec(table(), (strict_int, str), (0, 1), 2)


def test_converting_failure_fail_names_table_column_and_value() -> None:
    d, _, _ = dispatcher()
    assert d.convert(_codec(), ("1", "a")) == (1, "a")
    with pytest.raises(EventConvertingError, match=r"table public.t") as info:
        d.convert(_codec(), ("x1", "a"))
    assert "column id (int4)" in str(info.value) and "'x1'" in str(info.value)


@pytest.mark.parametrize(("mode", "level"), [("warn", logging.WARNING), ("skip", logging.INFO)])
def test_converting_failure_warn_and_skip_write_null_and_say_so(
    mode: str, level: int, caplog: pytest.LogCaptureFixture
) -> None:
    d, _, metrics = dispatcher(converting_failure_mode=mode)
    with caplog.at_level(logging.INFO, logger="headwater.engine.dispatcher"):
        assert d.convert(_codec(), ("x1", "a")) == (None, "a")
    assert metrics.erroneous_events == 1
    assert [r.levelno for r in caplog.records] == [level]
    assert "column id" in caplog.text and "written as null" in caplog.text


def test_processing_failure_modes() -> None:
    d, _, _ = dispatcher()
    with pytest.raises(EventProcessingError, match="at LSN 0/1"):
        d.processing_failed(ValueError("boom"), "LSN 0/1")
    d, _, metrics = dispatcher(processing_failure_mode="warn")
    d.processing_failed(ValueError("boom"), "LSN 0/1")
    assert metrics.erroneous_events == 1
    # A converting failure in fail mode stops the connector whatever the processing mode.
    with pytest.raises(EventProcessingError):
        d.processing_failed(EventConvertingError("bad"), "LSN 0/2")


def test_a_closed_queue_is_not_an_event_failure() -> None:
    """The runtime closing the queue mid-flush must end the reader, not count as skipped."""
    from headwater.engine.queue import QueueClosed

    d, _, metrics = dispatcher(processing_failure_mode="skip")
    with pytest.raises(QueueClosed):
        d.processing_failed(QueueClosed(), "binlog.000001:4")
    assert metrics.erroneous_events == 0


def _keyed_rows(op: Op, keys: list[tuple[int, int]]) -> tuple[list[Any], list[Any]]:
    """(befores, afters) of rows whose key goes from the first to the second number."""
    if op is Op.CREATE:
        return [None] * len(keys), [(new, "v") for _old, new in keys]
    if op is Op.DELETE:
        return [(old, "v") for old, _new in keys], [None] * len(keys)
    return [(old, "b") for old, _new in keys], [(new, "a") for _old, new in keys]


@pytest.mark.parametrize("op", [Op.CREATE, Op.UPDATE, Op.DELETE])
@pytest.mark.parametrize("options", [{}, {"skipped_operations": frozenset({"u"})},
                                     {"skipped_operations": frozenset({"c", "d"})},
                                     {"transaction_metadata": True}])
def test_a_rows_event_in_one_call_is_the_records_change_makes(op: Op,
                                                              options: dict[str, Any]) -> None:
    """`changes` takes the rows `plain_rows` accepts and makes the records `change` would
    (processing time aside); skipped operations and transaction blocks are `change`'s."""
    t = table()
    befores, afters = _keyed_rows(op, [(1, 1), (2, 2), (3, 3)])
    positions = [("p", i) for i in range(3)]
    one, _, _ = dispatcher(**options)
    by_row, _, _ = dispatcher(**options)
    for d in (one, by_row):
        d.begin("tx", 5, None)
    if one.plain_rows(t, op, befores, afters):
        one.changes(t, op, befores, afters, 5, positions)
    else:
        for before, after, position in zip(befores, afters, positions, strict=True):
            one.change(t, op, before, after, 5, position)
    for before, after, position in zip(befores, afters, positions, strict=True):
        by_row.change(t, op, before, after, 5, position)
    plain = (not options.get("transaction_metadata")
             and op.value not in options.get("skipped_operations", ()))
    assert one.plain_rows(t, op, befores, afters) is plain
    assert [r._replace(processed_ts_ms=0) for r in one.pending if isinstance(r, ChangeRecord)] \
        == [r._replace(processed_ts_ms=0) for r in by_row.pending
            if isinstance(r, ChangeRecord)]
    assert len(one.pending) == len(by_row.pending)


def test_an_update_changing_a_key_is_not_plain() -> None:
    """An update whose key changes becomes a delete and a create: row by row (`change`)."""
    d, _, _ = dispatcher()
    befores, afters = _keyed_rows(Op.UPDATE, [(1, 1), (2, 7)])
    assert not d.plain_rows(table(), Op.UPDATE, befores, afters)
    befores, afters = _keyed_rows(Op.UPDATE, [(1, 1), (2, 2)])
    assert d.plain_rows(table(), Op.UPDATE, befores, afters)
