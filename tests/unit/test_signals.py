"""Signal parsing (Debezium's execute-snapshot data), collection names, the file channel and the
incremental snapshot context as it travels in offsets."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from headwater.engine.incremental import IncrementalContext, SnapshotTable
from headwater.engine.signals import (
    ExecuteSnapshot,
    FileSignalChannel,
    LogMessage,
    PauseSnapshot,
    ResumeSnapshot,
    Signal,
    StopSnapshot,
    parse_action,
    signal_from_row,
)
from headwater.model.collection import SignalError, format_collection, split_collection


@pytest.mark.parametrize(("name", "parts"), [
    ("public.t", ("public", "t")),
    ("t", ("t",)),
    ("db.public.t", ("db", "public", "t")),
    ('"my.schema"."tab.le"', ("my.schema", "tab.le")),
    ('public."My.Table"', ("public", "My.Table")),
    ('"a""b".c', ('a"b', "c")),
    ('""."x"', ("", "x")),
])
def test_split_collection(name: str, parts: tuple[str, ...]) -> None:
    assert split_collection(name) == parts
    assert split_collection(format_collection(parts)) == parts


@pytest.mark.parametrize("name", ['"open.x', "a..b", ".a", "a.", 'a"b".c', '"a"b.c', "a.b.c.d"])
def test_split_collection_rejects_malformed_names(name: str) -> None:
    with pytest.raises(SignalError):
        split_collection(name)


def _sig(kind: str, data: object = None) -> Signal:
    return Signal("s1", kind, None if data is None else orjson.dumps(data).decode())


def test_execute_snapshot_with_conditions_and_quoted_names() -> None:
    action = parse_action(_sig("execute-snapshot", {
        "data-collections": ["public.a", '"my.schema"."tab.le"'],
        "type": "INCREMENTAL",
        "additional-conditions": [{"data-collection": '"my.schema"."tab.le"',
                                   "filter": "color = 'blue'"}],
    }))
    assert isinstance(action, ExecuteSnapshot)
    assert action.collections == (("public", "a"), ("my.schema", "tab.le"))
    assert action.snapshot_type == "incremental"
    assert action.condition_for(("my.schema", "tab.le")) == "color = 'blue'"
    assert action.condition_for(("public", "a")) is None


def test_execute_snapshot_defaults_to_incremental_and_knows_blocking() -> None:
    action = parse_action(_sig("execute-snapshot", {"data-collections": ["t"]}))
    assert isinstance(action, ExecuteSnapshot) and action.snapshot_type == "incremental"
    action = parse_action(_sig("execute-snapshot", {"data-collections": ["t"],
                                                    "type": "blocking"}))
    assert isinstance(action, ExecuteSnapshot) and action.snapshot_type == "blocking"


def test_older_single_additional_condition_applies_to_every_collection() -> None:
    action = parse_action(_sig("execute-snapshot", {
        "data-collections": ["public.a", "public.b"], "additional-condition": "id > 10",
        "surrogate-key": "code"}))
    assert isinstance(action, ExecuteSnapshot)
    assert action.condition_for(("public", "b")) == "id > 10"
    assert action.surrogate_key == "code"


@pytest.mark.parametrize(("data", "message"), [
    ("not json", "not valid JSON"),
    ([1], "JSON object"),
    ({"data-collections": "public.t", "type": "full"}, "not incremental or blocking"),
    ({"data-collections": [1]}, "array of names"),
    ({"data-collections": ["a"], "additional-conditions": [{"data-collection": "b",
                                                           "filter": "x"}]},
     "not among the data-collections"),
    ({"data-collections": ["a"], "additional-conditions": [{"filter": "x"}]},
     "data-collection and a filter"),
    ({"data-collections": ["a"], "surrogate-key": ""}, "surrogate-key"),
])
def test_malformed_execute_snapshot_is_rejected(data: object, message: str) -> None:
    raw = data if isinstance(data, str) else orjson.dumps(data).decode()
    with pytest.raises(SignalError, match=message):
        parse_action(Signal("s1", "execute-snapshot", raw))


def test_stop_pause_resume_log_and_unknown() -> None:
    stop = parse_action(_sig("stop-snapshot", {"data-collections": ["public.t"],
                                               "type": "incremental"}))
    assert stop == StopSnapshot("s1", (("public", "t"),), "incremental")
    assert parse_action(_sig("stop-snapshot")) == StopSnapshot("s1", (), "incremental")
    assert parse_action(_sig("pause-snapshot")) == PauseSnapshot("s1")
    assert parse_action(_sig("resume-snapshot")) == ResumeSnapshot("s1")
    assert parse_action(_sig("log", {"message": "hi"})) == LogMessage("s1", "hi")
    assert parse_action(_sig("schema-changes", {})) is None
    assert parse_action(_sig("snapshot-window-open")) is None
    with pytest.raises(SignalError):
        parse_action(_sig("log", {}))


def test_signal_from_row() -> None:
    assert signal_from_row(("a", "log", '{"message":"x"}')) == Signal(
        "a", "log", '{"message":"x"}', "source")
    with pytest.raises(SignalError):
        signal_from_row(("a", "log"))


def test_file_channel_consumes_complete_lines_once(tmp_path: Path) -> None:
    path = tmp_path / "signals.txt"
    channel = FileSignalChannel(path)
    assert channel.poll() == []  # no file yet
    path.write_text('{"id":"1","type":"log","data":{"message":"a"}}\n'
                    'garbage\n{"id":"2","type":"pause-snapshot"}\n{"id":"3","ty')
    got = channel.poll()
    assert [(s.id, s.type, s.channel) for s in got] == [("1", "log", "file"),
                                                       ("2", "pause-snapshot", "file")]
    assert got[0].data == '{"message":"a"}'
    assert channel.poll() == []
    with path.open("a") as f:
        f.write('pe":"resume-snapshot"}\n')
    assert [s.id for s in channel.poll()] == ["3"]
    # the position survives a restart through the offset
    again = FileSignalChannel(path, channel.position)
    assert again.poll() == []
    path.write_text('{"id":"4","type":"log","data":"{\\"message\\":\\"b\\"}"}\n')  # shrank
    assert [s.id for s in again.poll()] == ["4"]


def test_incremental_context_round_trips_through_json_offsets() -> None:
    ctx = IncrementalContext(
        tables=[SnapshotTable(("my.schema", "tab.le"), "x > 1", None),
                SnapshotTable(("public", "b"), None, "code")],
        last_key=["42", "a\tb"], max_key=["99", "z"], max_known=True, paused=True)
    stored = orjson.loads(orjson.dumps(ctx.to_offset()))
    assert stored["incremental_snapshot_collections"][0]["id"] == '"my.schema"."tab.le"'
    back = IncrementalContext.from_offset({"lsn": 1, **stored})
    assert back == ctx
    assert IncrementalContext().to_offset() == {}
    assert IncrementalContext.from_offset({"lsn": 1}) == IncrementalContext()
