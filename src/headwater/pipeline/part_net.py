"""Netting across the parts of a batch, in Arrow: the rule `pipeline.tasks` states, on the
concatenated rows of a topic's staged parts.

Each part is already netted by its task (at most one row per key, or one per re-delivery-free
event from the event-by-event decoder), so the rows here are few next to the batch's events:
netting them in the driver costs a fraction of a second, where a Spark SQL job (a window and
a group-by, a shuffle) cost seconds of executor CPU per batch and did not shrink with more
executors.

Per key, over its fragments (rows):
- the winner is the fragment with the newest `__hw_sequence`;
- its sequence is the lowest sequence of a fragment that is the same event (the same
  sequence but for the trailing offset, the same op): a re-delivery found in an earlier part
  keeps its first sequence, as `net.dedup` does;
- an unchanged-TOAST column takes the value of the upsert fragment, not flagged, whose value
  was sent last (`CARRY_SEQ` + name, else its sequence), when sent after the key's newest
  delete in the batch (`DELETED` or a delete fragment); none: flagged (keep the target's).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from headwater.pipeline.columnar import CARRY_SEQ, DELETED, OP, SEQ, TOAST_FLAG
from headwater.pipeline.decode import Column

_OFFSET_DIGITS = 16  # every sequence ends with the event's offset as 16 hex digits


def first_deliveries(rows: pa.Table, identity: str) -> pa.Table:
    """`rows` (fragments in offset order) without the re-deliveries of an event found in an
    earlier row, by its `identity` column (dropped): what `net.dedup` keeps, for fragments
    whose sequences do not tell re-deliveries apart (Datastream's: the `uuid`)."""
    ids = rows.column(identity)
    first = pa.table({"__id": ids, "__j": pa.array(np.arange(rows.num_rows, dtype=np.int64))}
                     ).group_by(["__id"], use_threads=False).aggregate([("__j", "min")])
    keep = np.sort(first.column("__j_min").to_numpy())
    return rows.drop_columns([identity]).take(pa.array(keep))


def net_fragments(rows: pa.Table, columns: list[Column], keys: tuple[str, ...],
                  toast: list[str]) -> pa.Table:
    """The net rows of a batch from its parts' fragments, in `ColumnarChanges.rows`' layout
    (row columns, `SEQ`, `OP`, a `TOAST_FLAG` per name in `toast`), ordered by sequence.
    A table of one key column without unchanged-TOAST columns (the common case) takes
    `_net_one_key`, which finds the same rows with numpy instead of Arrow's hash
    aggregations and join (a third of the CPU)."""
    if len(keys) == 1 and not toast:
        net = _net_one_key(rows, columns, keys[0])
        if net is not None:
            return net
    return _net_general(rows, columns, keys, toast)


def _net_one_key(rows: pa.Table, columns: list[Column], key: str) -> pa.Table | None:
    """`net_fragments` of fragments with one key column and no unchanged-TOAST column: per
    key the newest fragment by sequence, with the sequence of its first delivery (None: a
    key type Arrow cannot hash, or a null key, left to `_net_general`)."""
    n = rows.num_rows
    # fragments in sequence order (their rank); only the columns the rule reads are taken.
    # Parts hold their fragments in sequence order, and the parts follow each other when
    # the source's positions rise with the offsets: then there is nothing to sort.
    seq = rows.column(SEQ).combine_chunks()
    order = pc.sort_indices(seq) if n > 1 and (seq.null_count or not pc.all(
        pc.less_equal(seq.slice(0, n - 1), seq.slice(1))).as_py()) else None

    def ordered(name: str) -> pa.Array:
        values = rows.column(name).combine_chunks()
        return values if order is None else values.take(order)

    try:
        groups = pc.dictionary_encode(ordered(key))
    except pa.ArrowNotImplementedError:
        return None
    if groups.indices.null_count:
        return None
    seq, op = ordered(SEQ), ordered(OP)
    group = groups.indices.to_numpy().astype(np.int64)
    rank = np.arange(n, dtype=np.int64)
    newest = np.full(len(groups.dictionary), -1, dtype=np.int64)
    np.maximum.at(newest, group, rank)
    winner = newest[group]  # each fragment's key's winner (its rank)
    ranks = np.sort(newest)  # the winners in rank order, which is sequence order
    # a re-delivery of the winner's event in another part (the same sequence but for the
    # trailing offset, the same op) keeps the first delivery's sequence: the lowest rank of
    # the event's fragments, as the fragments are in sequence order
    firsts = ranks
    others = np.flatnonzero(winner != rank)
    if len(others):
        at, of = pa.array(others), pa.array(winner[others])
        same = pc.and_(
            pc.equal(pc.utf8_slice_codeunits(seq.take(at), 0, -_OFFSET_DIGITS),
                     pc.utf8_slice_codeunits(seq.take(of), 0, -_OFFSET_DIGITS)),
            pc.equal(op.take(at), op.take(of))).to_numpy(zero_copy_only=False)
        if same.any():
            firsts = ranks.copy()
            np.minimum.at(firsts, np.searchsorted(ranks, winner[others][same]),
                          others[same])
    won = rows.take(pa.array(ranks if order is None else order.to_numpy()[ranks]))
    arrays: list[pa.Array | pa.ChunkedArray] = [won.column(c.name) for c in columns]
    arrays += [seq.take(pa.array(firsts)), op.take(pa.array(ranks))]
    net = pa.Table.from_arrays(arrays, names=[*(c.name for c in columns), SEQ, OP])
    if firsts is ranks:  # (no re-delivery: already in sequence order)
        return net
    return net.take(pc.sort_indices(net.column(SEQ)))


def _net_general(rows: pa.Table, columns: list[Column], keys: tuple[str, ...],
                 toast: list[str]) -> pa.Table:
    n = rows.num_rows
    present = set(rows.column_names)
    # fragments in sequence order: `__j` ranks them, so "newest" is "highest __j"
    rows = rows.take(pc.sort_indices(rows.column(SEQ)))
    seq = rows.column(SEQ).combine_chunks()
    op = rows.column(OP).combine_chunks()
    is_delete = pc.equal(op, "d")
    deleted = pc.if_else(is_delete, seq, pa.scalar(None, pa.string()))
    if DELETED in present:
        deleted = pc.max_element_wise(deleted, rows.column(DELETED).combine_chunks(),
                                      skip_nulls=True)
    j = pa.array(np.arange(n, dtype=np.int64))
    frame = pa.table({**{k: rows.column(k) for k in keys}, "__j": j, "__d": deleted})
    per_key = frame.group_by(list(keys), use_threads=False).aggregate(
        [("__j", "max"), ("__d", "max")])
    # each fragment's key as its winner's rank, and the key's newest delete
    joined = frame.select([*keys, "__j"]).join(per_key, list(keys), join_type="inner",
                                               use_threads=False).sort_by("__j")
    winner = joined.column("__j_max").to_numpy()
    newest_delete = joined.column("__d_max").combine_chunks()
    # the winner's first delivery
    prefix = pc.utf8_slice_codeunits(seq, 0, -_OFFSET_DIGITS)
    same = pc.and_(pc.equal(prefix, prefix.take(pa.array(winner))),
                   pc.equal(op, op.take(pa.array(winner))))
    first = pa.table({"__w": winner[same.to_numpy(zero_copy_only=False)],
                      SEQ: seq.filter(same)}).group_by(["__w"], use_threads=False).aggregate(
        [(SEQ, "min")])
    # the winners in rank order, and their first sequences in that order
    ranks = first.column("__w").to_numpy()
    order = np.argsort(ranks)
    ranks = ranks[order]
    first_seq = first.column(SEQ + "_min").take(pa.array(order))
    won = rows.take(pa.array(ranks))
    won_delete = pc.equal(won.column(OP), "d")
    carried = {name: _carried(rows, seq, is_delete, newest_delete, winner, ranks, name)
               for name in toast}
    arrays: list[pa.Array | pa.ChunkedArray] = []
    for c in columns:
        if c.name in carried:
            value = carried[c.name][0]
            arrays.append(pc.if_else(won_delete, pa.scalar(None, value.type), value))
        else:
            arrays.append(won.column(c.name))
    arrays += [first_seq, won.column(OP)]
    arrays += [pc.and_(pc.invert(won_delete), pc.is_null(carried[name][1])) for name in toast]
    net = pa.Table.from_arrays(arrays, names=[*(c.name for c in columns), SEQ, OP,
                                              *(TOAST_FLAG + name for name in toast)])
    return net.take(pc.sort_indices(net.column(SEQ)))


def _carried(rows: pa.Table, seq: pa.Array, is_delete: pa.Array, newest_delete: pa.Array,
             winner: np.ndarray, ranks: np.ndarray, name: str) -> tuple[pa.Array, pa.Array]:
    """For each winner (in `ranks` order): the value of unchanged-TOAST column `name` sent
    last after the key's newest delete, and when it was sent (null: none)."""
    present = set(rows.column_names)
    flag = (pc.fill_null(rows.column(TOAST_FLAG + name).combine_chunks(), False)
            if TOAST_FLAG + name in present else pa.array(np.zeros(len(seq), dtype=bool)))
    sent = (pc.coalesce(rows.column(CARRY_SEQ + name).combine_chunks(), seq)
            if CARRY_SEQ + name in present else seq)
    ok = pc.and_(pc.and_(pc.invert(is_delete), pc.invert(flag)),
                 pc.or_(pc.is_null(newest_delete),
                        pc.fill_null(pc.greater(sent, newest_delete), False)))
    mask = ok.to_numpy(zero_copy_only=False)
    values = rows.column(name).combine_chunks()
    if not mask.any():
        return pa.nulls(len(ranks), values.type), pa.nulls(len(ranks), pa.string())
    candidates = pa.table({"__w": winner[mask], "__s": sent.filter(ok),
                           "__r": pa.array(np.flatnonzero(mask))})
    # per key the candidate sent last: sorted by key, then sent, each key's last one
    candidates = candidates.take(pc.sort_indices(candidates, [("__w", "ascending"),
                                                              ("__s", "ascending")]))
    w = candidates.column("__w").to_numpy()
    last = np.flatnonzero(np.append(w[1:] != w[:-1], True))
    at = np.minimum(np.searchsorted(w[last], ranks), len(last) - 1)
    hit = w[last][at] == ranks
    chosen = pa.array(last[at])
    missing = pa.array(~hit)
    rows_of = candidates.column("__r").combine_chunks().take(chosen)
    value = pc.if_else(missing, pa.scalar(None, values.type), values.take(rows_of))
    when = pc.if_else(missing, pa.scalar(None, pa.string()),
                      candidates.column("__s").combine_chunks().take(chosen))
    return value, when
