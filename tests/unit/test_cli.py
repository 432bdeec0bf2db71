"""The command line: configuration errors, topics list/tail, offsets show, secrets kept out."""

from __future__ import annotations

from pathlib import Path

import orjson
from typer.testing import CliRunner

from headwater.cli import app
from headwater.engine.offsets import FileOffsetStore
from headwater.model.topic import TopicRecord
from headwater.testing.localpg import free_port
from headwater.topics.log import TopicLog

runner = CliRunner()


def write_config(tmp_path: Path, **extra: str) -> Path:
    props = {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": "127.0.0.1",
        "database.port": str(free_port()),
        "database.user": "u",
        "database.password": "s3cret-pass",
        "database.dbname": "db",
        "topic.prefix": "srv",
        "headwater.topics.dir": "topics",
        "offset.storage.file.filename": "offsets.json",
    }
    props.update(extra)
    path = tmp_path / "c.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items() if v != "-"))
    return path


def test_missing_required_property_is_named(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", str(write_config(tmp_path, **{"topic.prefix": "-"}))])
    assert result.exit_code == 2
    assert "topic.prefix" in result.output


def test_invalid_value_is_named_with_expectation(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, **{"snapshot.mode": "initil"})
    result = runner.invoke(app, ["run", str(cfg)])
    assert result.exit_code == 2
    assert "snapshot.mode" in result.output and "initial" in result.output


def test_unreachable_database_fails_without_leaking_the_password(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", str(write_config(tmp_path)), "--log-level", "DEBUG"])
    assert result.exit_code == 1
    # A summary at INFO, then one non-secret property per line at DEBUG...
    assert "connector srv: class=io.debezium.connector.postgresql.PostgresConnector" in \
        result.output
    assert "  topic.prefix = srv" in result.output
    assert "s3cret-pass" not in result.output  # ...never the password
    assert "database.password" not in result.output


def test_topics_list_and_tail(tmp_path: Path) -> None:
    root = tmp_path / "topics"
    with TopicLog(root) as log:
        log.append({"srv.public.t": [
            TopicRecord(b'{"id":1}', b'{"op":"c","after":{"id":1},"source":{}}', 5,
                        (("__debezium.oldkey", b'{"id":9}'),
                         ("__debezium.context.connectorLogicalName", b"srv"))),
            TopicRecord(b'{"id":1}', None, 6, (
                ("__debezium.context.connectorLogicalName",
                 b'{"schema":{"type":"string","optional":false},"payload":"srv"}'),)),
        ]})
    out = runner.invoke(app, ["topics", "list", "--dir", str(root)])
    assert out.exit_code == 0 and "srv.public.t" in out.output and "2" in out.output
    tail = runner.invoke(app, ["topics", "tail", "srv.public.t", "--from-beginning",
                               "--dir", str(root)])
    lines = [orjson.loads(line) for line in tail.output.splitlines()]
    assert [(r["offset"], r["value"]) for r in lines] == [
        (0, {"op": "c", "after": {"id": 1}, "source": {}}), (1, None)]
    # Headers in SimpleHeaderConverter form and as JsonConverter envelopes read the same.
    assert [r["headers"] for r in lines] == [
        {"__debezium.oldkey": {"id": 9}, "__debezium.context.connectorLogicalName": "srv"},
        {"__debezium.context.connectorLogicalName": "srv"}]
    pretty = runner.invoke(app, ["topics", "tail", "srv.public.t", "--from-beginning",
                                 "--pretty", "--dir", str(root)])
    assert "create" in pretty.output and "tombstone" in pretty.output
    assert "oldkey={'id': 9}" in pretty.output
    missing = runner.invoke(app, ["topics", "tail", "nope", "--dir", str(root)])
    assert missing.exit_code == 1 and "no topic" in missing.output


def test_offsets_show(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    assert "no offsets stored yet" in runner.invoke(app, ["offsets", "show", str(cfg)]).output
    FileOffsetStore(tmp_path / "offsets.json", {"server": "srv"}).save({"lsn": 42})
    out = runner.invoke(app, ["offsets", "show", str(cfg)])
    assert out.exit_code == 0 and '"lsn": 42' in out.output


def damaged_root(tmp_path: Path) -> tuple[Path, list[Path]]:
    """Topic `srv.public.t`: 30 records in sealed segments, one line removed from the second
    segment; topic `srv.public.ok`: sound."""
    from headwater.topics.segment import list_segments

    root = tmp_path / "topics"
    with TopicLog(root, segment_bytes=300) as log:
        for i in range(30):
            log.append({"srv.public.t": [TopicRecord(b'{"id":%d}' % i, b'{"v":%d}' % i, i)]})
        log.append({"srv.public.ok": [TopicRecord(b"{}", b"{}", 1)]})
    segs = [s.path for s in list_segments(root / "srv.public.t")]
    assert len(segs) >= 3
    lines = segs[1].read_bytes().splitlines(keepends=True)
    segs[1].write_bytes(lines[0] + b"".join(lines[2:]))
    return root, segs


def test_topics_tail_of_an_unknown_topic_names_the_known_ones(tmp_path: Path) -> None:
    root = tmp_path / "topics"
    with TopicLog(root) as log:
        log.append({"srv.public.a": [TopicRecord(b"{}", b"{}", 1)]})
    for args in (["--from-beginning"], []):
        out = runner.invoke(app, ["topics", "tail", "srv.public.b", *args, "--dir", str(root)])
        assert out.exit_code == 1
        assert "no topic 'srv.public.b'" in out.output and "srv.public.a" in out.output


def test_damage_stops_list_and_tail_with_one_message(tmp_path: Path) -> None:
    root, segs = damaged_root(tmp_path)
    tail = runner.invoke(app, ["topics", "tail", "srv.public.t", "--from-beginning",
                               "--dir", str(root)])
    assert tail.exit_code == 1 and tail.exception is not None  # (typer.Exit: no traceback)
    assert "Traceback" not in tail.output
    assert "topic log damaged: topic srv.public.t" in tail.output
    assert f"offset {segs[1].name.lstrip('0').split('.')[0]}" not in tail.output  # not the base
    printed = [orjson.loads(line)["offset"] for line in tail.output.splitlines()
               if line.startswith("{")]
    assert printed == list(range(len(printed))) and printed  # the good records before it
    # a cut last line of a sealed segment stops `topics list` (its cheap check sees it)
    segs[-1].write_bytes(segs[-1].read_bytes()[:-3])
    listed = runner.invoke(app, ["topics", "list", "--dir", str(root)])
    assert listed.exit_code == 1 and "cut short" in listed.output


def test_topics_verify_and_repair(tmp_path: Path) -> None:
    root, segs = damaged_root(tmp_path)
    before = {p: p.read_bytes() for p in segs}
    ok_before = runner.invoke(app, ["topics", "verify", "--dir", str(root)])
    assert ok_before.exit_code == 1
    assert "srv.public.ok: ok, 1 records in 1 segments" in ok_before.output
    lines = before[segs[1]].splitlines(keepends=True)
    missing = orjson.loads(lines[0])["offset"] + 1
    assert (f"srv.public.t: DAMAGED: segment {segs[1]}, offset {missing}, byte {len(lines[0])}"
            in ok_before.output)
    assert {p: p.read_bytes() for p in segs} == before  # verify alone changes nothing

    fixed = runner.invoke(app, ["topics", "verify", "--repair", "--dir", str(root)])
    assert fixed.exit_code == 0, fixed.output
    cut = f"bytes {len(lines[0])}..{len(before[segs[1]]) - 1}"
    assert f"removed {cut} of {segs[1]}" in fixed.output.replace("\n", " ")
    for later in segs[2:]:
        assert f"removed the whole segment of {later}" in fixed.output
        assert not later.exists()
        assert (later.parent / f".{later.name}.damaged").read_bytes() == before[later]
    saved = segs[1].parent / f".{segs[1].name}.damaged"
    assert segs[1].read_bytes() + saved.read_bytes() == before[segs[1]]
    assert segs[1].read_bytes() == lines[0]
    again = runner.invoke(app, ["topics", "verify", "--dir", str(root)])
    assert again.exit_code == 0 and f"srv.public.t: ok, {missing} records" in again.output
    with TopicLog(root) as log:  # the writer continues at the first removed offset
        assert log.next_offset("srv.public.t") == missing


def test_topics_verify_repair_refuses_while_a_writer_runs(tmp_path: Path) -> None:
    root, _ = damaged_root(tmp_path)
    from headwater.topics.log import lock_root

    fd = lock_root(root)
    try:
        out = runner.invoke(app, ["topics", "verify", "--repair", "--dir", str(root)])
    finally:
        import os

        os.close(fd)
    assert out.exit_code == 1 and "locked" in out.output and "stop it" in out.output
