"""Which MongoDB errors the capture retries (reopening the stream after its stored token) and
which stop it: a cursor the server ended (killCursors, killOp, a timeout) is retried; a lost
history, or a command the server refused, is not."""

from __future__ import annotations

import pytest
from pymongo import errors

from headwater.connectors.mongodb.connection import transient


@pytest.mark.parametrize(("code", "name"), [(43, "CursorNotFound"), (11601, "Interrupted"),
                                            (237, "CursorKilled")])
def test_a_cursor_the_server_ended_is_retried(code: int, name: str) -> None:
    exc = errors.OperationFailure(f"Executor error during getMore :: {name}", code=code)
    assert transient(exc)


@pytest.mark.parametrize("code", [286, 2, 13])  # history lost, BadValue, Unauthorized
def test_lost_history_and_refused_commands_stop_the_capture(code: int) -> None:
    assert not transient(errors.OperationFailure("refused", code=code))


def test_labels_and_connection_errors_stay_retriable() -> None:
    labelled = errors.OperationFailure("x", code=1, details={
        "errorLabels": ["ResumableChangeStreamError"]})
    assert transient(labelled)
    assert transient(errors.AutoReconnect("gone"))
