"""The state of each document after a batch's events, in sequence order: pure, so the rules
are tested without Spark or Delta.

A patch needs the state before it, which may come from an earlier event of the batch, from
what the target already holds (SCD1: the current row; SCD2: the version current at the patch)
or be gone (a remembered delete).  All of those are points of one history, merged with the
batch's events by sequence and replayed: a full image sets the state, a delete clears it, a
patch applies to it.  A patch with no state to apply to (the capture started without a
snapshot, or the insert was lost) applies to `{"_id": ...}` alone; when the document's final
state comes from such a patch (no full image or base after it) `Folded.unbased` says so, and
the caller warns: the row then holds only the fields patches set.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import orjson

from headwater.pipeline.documents.events import DocEvent
from headwater.pipeline.documents.patch import apply_update


class Base(NamedTuple):
    """What the target holds for a document at `sequence` (`doc` None: deleted there)."""

    sequence: str
    doc: dict[str, Any] | None


class Resolved(NamedTuple):
    """A batch event with the document's full state after it (None: deleted)."""

    sequence: str
    doc: dict[str, Any] | None
    event: DocEvent


class Folded(NamedTuple):
    resolved: list[Resolved]  # per batch event, in sequence order
    unbased: int  # 1 when the final state was built from a patch with no previous state


def _empty(doc_id: str) -> dict[str, Any]:
    return {"_id": orjson.loads(doc_id)}


def fold(doc_id: str, events: Iterable[DocEvent], bases: Iterable[Base] = ()) -> Folded:
    """One document's batch events resolved to full states (see the module docstring).

    At equal sequences a base ranks before an event (an event the target already holds,
    replayed, resolves to the same state)."""
    points: list[tuple[str, int, Base | DocEvent]] = [(b.sequence, 0, b) for b in bases]
    points += [(e.sequence, 1, e) for e in events]
    points.sort(key=lambda p: (p[0], p[1]))
    state: dict[str, Any] | None = None
    partial = False
    out: list[Resolved] = []
    for _seq, _rank, p in points:
        if isinstance(p, Base):
            state, partial = p.doc, False
            continue
        if p.op == "d":
            state, partial = None, False
        elif p.update is None:
            state, partial = p.doc, False
        else:
            if state is None:
                state, partial = _empty(doc_id), True
            state = apply_update(state, p.update)
        out.append(Resolved(p.sequence, state, p))
    return Folded(out, int(partial))


def by_document(events: Iterable[DocEvent]) -> dict[str, list[DocEvent]]:
    out: dict[str, list[DocEvent]] = {}
    for e in events:
        out.setdefault(e.id, []).append(e)
    return out
