"""Every pair of states: the allowed transitions succeed (in the table and in the catalog),
the forbidden ones raise an error naming both states."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from headwater.streams.catalog import Catalog
from headwater.streams.model import StreamSpec
from headwater.streams.profiles import destination_profile, source_profile
from headwater.streams.states import (
    TRANSITIONS,
    Action,
    State,
    TransitionError,
    action_between,
    next_state,
)

# The lifecycle as docs/streams.md states it: written out again so that a change of the
# table in the code is a failing test until the documentation's table changes too.
EXPECTED = {
    (State.NOT_STARTED, State.STARTING),
    (State.STARTING, State.RUNNING),
    (State.STARTING, State.NOT_STARTED),
    (State.STARTING, State.DRAINING),
    (State.STARTING, State.FAILED),
    (State.STARTING, State.FAILED_PERMANENTLY),
    (State.RUNNING, State.DRAINING),
    (State.RUNNING, State.FAILED),
    (State.RUNNING, State.FAILED_PERMANENTLY),
    (State.DRAINING, State.PAUSED),
    (State.DRAINING, State.FAILED),
    (State.DRAINING, State.FAILED_PERMANENTLY),
    (State.PAUSED, State.STARTING),
    (State.FAILED, State.STARTING),
    (State.FAILED, State.PAUSED),
    (State.FAILED_PERMANENTLY, State.STARTING),
}
PAIRS = list(itertools.product(State, State))


def test_the_table_is_the_documented_one() -> None:
    assert {(s, t) for (s, _), t in TRANSITIONS.items()} == EXPECTED
    assert len(State) == 8 and {s.value for s in State} == {
        "NOT_STARTED", "STARTING", "RUNNING", "DRAINING", "PAUSED", "FAILED",
        "FAILED_PERMANENTLY", "MAINTENANCE"}


@pytest.mark.parametrize(("current", "target"), PAIRS, ids=[f"{a.value}->{b.value}"
                                                             for a, b in PAIRS])
def test_every_pair(current: State, target: State) -> None:
    if (current, target) in EXPECTED:
        action = action_between(current, target)
        assert next_state(current, action) is target
    else:
        with pytest.raises(TransitionError) as info:
            action_between(current, target)
        assert current.value in str(info.value) and target.value in str(info.value)


@pytest.mark.parametrize(("current", "action"), list(itertools.product(State, Action)))
def test_every_action_in_every_state(current: State, action: Action) -> None:
    target = TRANSITIONS.get((current, action))
    if target is not None:
        assert next_state(current, action) is target
    else:
        with pytest.raises(TransitionError) as info:
            next_state(current, action)
        assert current.value in str(info.value) and action.value in str(info.value)


def _catalog_in(tmp: Path, state: State) -> Catalog:
    """A catalog whose stream 's' is in `state`, reached through allowed transitions."""
    cat = Catalog(tmp)
    cat.add_profile(source_profile("src", "postgresql", {
        "database.hostname": "h", "database.user": "u", "database.dbname": "d"}))
    cat.add_profile(destination_profile("dst", "topics", str(tmp / "topics")))
    cat.create_stream(StreamSpec("s", "src", "dst"))
    path = {
        State.NOT_STARTED: [],
        State.STARTING: [Action.START],
        State.RUNNING: [Action.START, Action.STARTED],
        State.DRAINING: [Action.START, Action.STARTED, Action.PAUSE],
        State.PAUSED: [Action.START, Action.STARTED, Action.PAUSE, Action.DRAINED],
        State.FAILED: [Action.START, Action.FAIL],
        State.FAILED_PERMANENTLY: [Action.START, Action.FAIL_PERMANENTLY],
    }
    for action in path[state]:
        cat.transition("s", action)
    return cat


@pytest.mark.parametrize(("current", "action"), [
    (s, a) for s, a in itertools.product(State, Action) if s is not State.MAINTENANCE])
def test_catalog_applies_exactly_the_table(tmp_path: Path, current: State,
                                           action: Action) -> None:
    cat = _catalog_in(tmp_path, current)
    assert cat.stream("s").state is current
    target = TRANSITIONS.get((current, action))
    if target is None:
        with pytest.raises(TransitionError, match=current.value):
            cat.transition("s", action)
        assert cat.stream("s").state is current  # unchanged
    else:
        assert cat.transition("s", action, "why") is target
        assert cat.stream("s").state is target
        last = cat.history("s")[-1]
        assert (last["from"], last["to"], last["action"], last["detail"]) == (
            current.value, target.value, action.value, "why")
