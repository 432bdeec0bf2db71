"""The restart tracker log readers share (relational/resume.py): a restarted session's first
transaction replays the events an earlier run handed over, skips the rows of the next event it
handed over, and every later transaction is read whole."""

from __future__ import annotations

from typing import Any

from headwater.relational.resume import TransactionResume


def _events(resume: TransactionResume[Any], count: int) -> list[int | None]:
    seen = []
    for _ in range(count):
        seen.append(resume.event())
        resume.event_done()
    return seen


def test_the_first_transaction_replays_what_was_handed_over_then_reads_on() -> None:
    resume = TransactionResume("tx1", skip_events=2, skip_rows=3)
    assert _events(resume, 4) == [None, None, 3, 0]
    assert resume.events == 4 and resume.start == "tx1"
    resume.end("tx2")
    assert resume.start == "tx2" and resume.events == 0
    resume.begin("tx2")
    assert _events(resume, 3) == [0, 0, 0]  # the skipping was the first transaction's only


def test_rows_alone_skip_within_the_first_event() -> None:
    resume = TransactionResume("tx", skip_rows=5)
    assert _events(resume, 2) == [5, 0]


def test_a_fresh_session_skips_nothing() -> None:
    resume = TransactionResume(("f", 4))
    assert _events(resume, 2) == [0, 0]
    resume.begin(("f", 9))
    assert resume.events == 0 and resume.start == ("f", 9)
