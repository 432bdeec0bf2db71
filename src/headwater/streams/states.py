"""A stream's lifecycle: Datastream's states and the one table of allowed transitions.

Why a table: every interface (CLI, the later REST service, the supervisor, a worker process)
moves streams between states, often from different processes.  If each one decided for
itself what may follow what, a stream could be RUNNING and PAUSED at once in two views.
So every change goes through `next_state` (and `Catalog.transition`, which applies it
atomically), and a forbidden change is an error naming both states and the action.

The states and their API spellings are Datastream's `Stream.State` enum.  The transitions
follow Datastream's "Stream lifecycle" page (start -> STARTING -> RUNNING, an invalid stream
goes back from STARTING to NOT_STARTED, pause goes RUNNING -> DRAINING -> PAUSED, FAILED is
recoverable, FAILED_PERMANENTLY needs the user); where Datastream says nothing (resume goes
through STARTING because a process must be started; pausing a FAILED stream) docs/streams.md
says what was chosen and why.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from headwater.engine.source import StreamState

# The capture runtime's states are the same enum (one list of Datastream's names).
State = StreamState


class Action(StrEnum):
    """What causes a transition: a user's request or an observation of the capture."""

    START = "start"  # user: start a created stream
    STARTED = "started"  # capture: connected, snapshotting or streaming
    VALIDATION_FAILED = "validation_failed"  # capture: the source refused the stream at start
    PAUSE = "pause"  # user: stop reading, write what was read (drain), keep the position
    DRAINED = "drained"  # capture: everything read is durable and acknowledged; it stopped
    RESUME = "resume"  # user: continue from the kept position (also a manual retry of FAILED)
    FAIL = "fail"  # capture: died or failed with an error that may heal
    FAIL_PERMANENTLY = "fail_permanently"  # capture: an error that cannot heal by retrying
    RECOVER = "recover"  # user: try again after fixing what made it fail permanently


_S, _A = State, Action
TRANSITIONS: Final[dict[tuple[State, Action], State]] = {
    (_S.NOT_STARTED, _A.START): _S.STARTING,
    (_S.STARTING, _A.STARTED): _S.RUNNING,
    (_S.STARTING, _A.VALIDATION_FAILED): _S.NOT_STARTED,
    (_S.STARTING, _A.PAUSE): _S.DRAINING,
    (_S.STARTING, _A.FAIL): _S.FAILED,
    (_S.STARTING, _A.FAIL_PERMANENTLY): _S.FAILED_PERMANENTLY,
    (_S.RUNNING, _A.PAUSE): _S.DRAINING,
    (_S.RUNNING, _A.FAIL): _S.FAILED,
    (_S.RUNNING, _A.FAIL_PERMANENTLY): _S.FAILED_PERMANENTLY,
    (_S.DRAINING, _A.DRAINED): _S.PAUSED,
    (_S.DRAINING, _A.FAIL): _S.FAILED,
    (_S.DRAINING, _A.FAIL_PERMANENTLY): _S.FAILED_PERMANENTLY,
    (_S.PAUSED, _A.RESUME): _S.STARTING,
    (_S.FAILED, _A.RESUME): _S.STARTING,
    (_S.FAILED, _A.PAUSE): _S.PAUSED,
    (_S.FAILED_PERMANENTLY, _A.RECOVER): _S.STARTING,
}

# States in which a capture process runs (or should): it must be stopped before a delete.
ACTIVE: Final = frozenset({State.STARTING, State.RUNNING, State.DRAINING})


class TransitionError(ValueError):
    """A transition the table does not allow; the message names both states and the action."""

    def __init__(self, current: State, action: Action, target: State | None = None) -> None:
        self.current, self.action, self.target = current, action, target
        allowed = sorted(a.value for (s, a) in TRANSITIONS if s is current)
        wanted = f" to {target.value}" if target is not None else ""
        super().__init__(
            f"cannot {action.value} a stream in state {current.value}{wanted}; allowed in "
            f"{current.value}: {', '.join(allowed) or 'nothing'}")


def next_state(current: State, action: Action) -> State:
    """The state `action` leads to from `current`; TransitionError when not allowed."""
    target = TRANSITIONS.get((current, action))
    if target is None:
        raise TransitionError(current, action)
    return target


def action_between(current: State, target: State) -> Action:
    """The action that moves `current` to `target`; TransitionError naming both when no
    action does (the form the exhaustive pair test and the catalog's checks use)."""
    for (state, action), to in TRANSITIONS.items():
        if state is current and to is target:
            return action
    raise TransitionErrorPair(current, target)


class TransitionErrorPair(TransitionError):
    def __init__(self, current: State, target: State) -> None:
        self.current, self.target = current, target
        ValueError.__init__(
            self, f"no transition from {current.value} to {target.value}; from "
            f"{current.value} a stream may go to: "
            + (", ".join(sorted({t.value for (s, _), t in TRANSITIONS.items() if s is current}))
               or "nothing"))
