"""Format versions of Headwater's state (issue 28, must show 3): state written the way the
release before stamps wrote it is read and stamped; state stamped by an unknown newer
Headwater is refused with one line naming the file, the format found and the format read.

The "release before stamps" is simulated with today's writers and the stamp taken away:
they write the same layout plus the stamp, nothing else.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from headwater.connectors.mysql.schema_history import FileSchemaHistory
from headwater.engine.offsets import (
    FileOffsetStore,
    OffsetFormatError,
    OffsetStoreError,
    read_offset_file,
)
from headwater.model.topic import TopicRecord
from headwater.ops.cli_errors import describe
from headwater.ops.progress import write_status
from headwater.ops.store_views import existing_topics_dir, remove_if_unused
from headwater.pipeline.checkpoint import check_checkpoint, open_checkpoint
from headwater.pipeline.status import pipeline_status_path
from headwater.server.store import ConnectorStore, Target
from headwater.state_format import (
    CATALOG,
    CHECKPOINT,
    OFFSETS,
    SCHEMA_HISTORY,
    STAMP_FILE,
    TOPIC_LOG,
    Kind,
    StateFormatError,
    check_version,
    file_stamp_path,
    offsets_document,
    open_state_dir,
    read_stamp,
    read_stamp_at,
    write_stamp,
)
from headwater.streams.catalog import CATALOG_FILE, Catalog
from headwater.streams.profiles import destination_profile
from headwater.topics import reader
from headwater.topics.check import check_topic
from headwater.topics.log import TopicLog
from headwater.topics.retention import write_consumer
from headwater.topics.segment import inprogress_name

PARTITION = {"server": "srv"}
TOPIC = "srv.public.t"
NEWER = "headwater 9.0.0"


def newer(label: str, path: Path, by: str | None = NEWER) -> str:
    """The refusal every kind must give for format 3 (the issue's wording)."""
    who = f" ({by})" if by else ""
    reads = 2 if label == "topic log" else 1
    return (f"{label} {path} was written by a newer Headwater{who} (format 3); this release "
            f"reads format {reads}: upgrade Headwater or restore a backup")


def restamp(directory: Path, kind: Kind, version: int) -> Path:
    """What a newer release would leave: its stamp, its version."""
    path = directory / STAMP_FILE
    path.write_bytes(orjson.dumps({"kind": kind.key, "format": version, "written_by": NEWER}))
    return path


# -- what the current release writes ------------------------------------------------------

def write_topic_log(root: Path) -> None:
    with TopicLog(root, segment_bytes=60) as log:  # small segments: several files
        for i in range(5):
            log.append({TOPIC: [TopicRecord(b'{"id":%d}' % i, b'{"op":"c"}', 1000 + i)]})
    write_consumer(root, "pipeline-abc", {TOPIC: 3})  # a consumer marker, as a pipeline's


def write_catalog(root: Path) -> None:
    catalog = Catalog(root)
    catalog.add_profile(destination_profile("lake", "topics", str(root / "streams")))
    catalog.close()
    store = ConnectorStore(root)
    store.create("pg", {"connector.class": "postgres", "topic.prefix": "srv"}, Target.RUNNING)
    store.close()


def write_checkpoint(checkpoint: Path) -> None:
    open_checkpoint(checkpoint)
    # Spark's own files, which are Spark's to version, and Headwater's beside them.
    (checkpoint / "offsets").mkdir()
    (checkpoint / "offsets" / "0").write_text('v1\n{}\n{"srv.public.t":5}\n')
    (checkpoint / "metadata").write_text('{"id":"q"}\n')
    write_status(pipeline_status_path(checkpoint), {"pipeline": "p", "state": "RUNNING"})


def user_version(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("PRAGMA user_version").fetchone()[0])


def set_user_version(path: Path, version: int) -> None:
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {version:d}")
    db.close()


# -- upgrade: today's state is read and stamped ---------------------------------------------

def test_offsets_written_by_the_current_release_are_read(tmp_path: Path) -> None:
    # The offset file has carried its format ("version": 1) since the first release.
    path = tmp_path / "offsets.json"
    FileOffsetStore(path, PARTITION).save({"lsn": 42})
    doc = read_offset_file(path)
    assert doc is not None and doc["version"] == OFFSETS.current == 1
    assert FileOffsetStore(path, PARTITION).load() == {"lsn": 42}


def test_an_unstamped_topic_log_is_read_then_stamped_by_its_writer(tmp_path: Path) -> None:
    root = tmp_path / "topics"
    write_topic_log(root)
    assert read_stamp(root, TOPIC_LOG) == 2  # the writer stamps a new root
    (root / STAMP_FILE).unlink()  # ... which the release before stamps did not
    before = reader.list_topics(root)
    assert [(t.name, t.start_offset, t.end_offset) for t in before] == [(TOPIC, 0, 5)]
    assert check_topic(root, TOPIC).damages == []
    assert existing_topics_dir(root, "--dir") == root
    assert not (root / STAMP_FILE).exists()  # the readers only look
    with TopicLog(root) as log:  # the writer takes it over, stamped, and appends on
        assert log.next_offset(TOPIC) == 5
        log.append({TOPIC: [TopicRecord(b'{"id":5}', b'{"op":"c"}', 2000)]})
    stamp = orjson.loads((root / STAMP_FILE).read_bytes())
    # stamped 2 (checksums, which the format 1 records before do not carry)
    assert stamp["kind"] == "topic-log" and stamp["format"] == 2
    assert stamp["written_by"].startswith("headwater ")
    assert [r.offset for r in reader.read(root, TOPIC)] == [0, 1, 2, 3, 4, 5]


def test_an_unstamped_catalog_is_read_and_stamped(tmp_path: Path) -> None:
    write_catalog(tmp_path)
    path = tmp_path / CATALOG_FILE
    assert user_version(path) == 1
    set_user_version(path, 0)  # SQLite's default: the release before stamps
    catalog = Catalog(tmp_path)
    assert [p.name for p in catalog.profiles()] == ["lake"]
    catalog.close()
    assert user_version(path) == 1
    set_user_version(path, 0)
    store = ConnectorStore(tmp_path)  # the service opens it first
    assert [r.name for r in store.all()] == ["pg"]
    store.close()
    assert user_version(path) == CATALOG.current == 1


def test_an_unstamped_checkpoint_is_read_and_stamped(tmp_path: Path) -> None:
    checkpoint = tmp_path / "ck"
    write_checkpoint(checkpoint)
    (checkpoint / STAMP_FILE).unlink()
    spark_files = {p: p.read_bytes() for p in checkpoint.rglob("*") if p.is_file()}
    check_checkpoint(checkpoint)  # `headwater status` only looks
    assert not (checkpoint / STAMP_FILE).exists()
    assert open_checkpoint(checkpoint) == checkpoint
    assert read_stamp(checkpoint, CHECKPOINT) == 1
    # Spark's files and Headwater's status are untouched: only the stamp was added.
    assert {p: p.read_bytes() for p in spark_files} == spark_files
    assert sorted(p.name for p in checkpoint.iterdir()) == sorted(
        [STAMP_FILE, "metadata", "offsets", "status.json"])


def test_open_checkpoint_creates_and_stamps_a_new_directory(tmp_path: Path) -> None:
    checkpoint = tmp_path / "a" / "ck"
    open_checkpoint(checkpoint)
    doc = orjson.loads((checkpoint / STAMP_FILE).read_bytes())
    assert doc["kind"] == "checkpoint" and doc["format"] == 1
    assert [p.name for p in checkpoint.iterdir()] == [STAMP_FILE]  # no temporary left


def test_a_failed_run_still_leaves_no_topics_directory(tmp_path: Path) -> None:
    # The stamp must not make a root the writer opened and never wrote look used.
    root = tmp_path / "topics"
    TopicLog(root).close()
    assert (root / STAMP_FILE).exists()
    assert remove_if_unused(root)
    assert not root.exists()


def write_history(path: Path) -> bytes:
    """A MySQL schema history file of two records, as the connector writes them; its bytes."""
    history = FileSchemaHistory(path)
    for n, ddl in enumerate(("CREATE TABLE t (id INT PRIMARY KEY)",
                             "ALTER TABLE t ADD COLUMN v INT"), start=1):
        history.record({"server": "srv"}, {"file": "bin.000001", "pos": 100 * n}, "db", ddl,
                       [])
    return path.read_bytes()


def test_an_unstamped_schema_history_is_read_and_stamped(tmp_path: Path) -> None:
    path = tmp_path / "history" / "srv.jsonl"
    content = write_history(path)
    stamp = file_stamp_path(path)
    assert stamp == tmp_path / "history" / ".srv.jsonl.headwater-format.json"
    assert read_stamp_at(stamp, SCHEMA_HISTORY) == 1  # the writer stamps a new file
    stamp.unlink()  # ... which the release before stamps did not
    history = FileSchemaHistory(path)
    assert history.last_position() == {"file": "bin.000001", "pos": 200}
    assert [r["ddl"] for _, r in history.records()] == [
        "CREATE TABLE t (id INT PRIMARY KEY)", "ALTER TABLE t ADD COLUMN v INT"]
    doc = orjson.loads(stamp.read_bytes())
    assert doc["kind"] == "schema-history" and doc["format"] == 1
    assert path.read_bytes() == content  # Debezium's layout, line for line: only stamped
    # A history not there yet is not stamped by a look, only by its first record.
    fresh = FileSchemaHistory(tmp_path / "none" / "h.jsonl")
    assert fresh.records() == [] and fresh.last_position() is None
    assert not (tmp_path / "none").exists()


# -- a newer format is refused, by name ---------------------------------------------------

def test_a_newer_schema_history_is_refused_before_it_is_touched(tmp_path: Path) -> None:
    path = tmp_path / "srv.jsonl"
    content = write_history(path) + b'{"source":{},"position":{"fi'  # and a torn tail
    path.write_bytes(content)
    stamp = file_stamp_path(path)
    stamp.write_bytes(orjson.dumps({"kind": "schema-history", "format": 3,
                                    "written_by": NEWER}))
    message = newer("schema history file", stamp)
    touches: tuple[Callable[[FileSchemaHistory], object], ...] = (
        lambda h: h.last_position(), lambda h: h.records(),
        lambda h: h.record({}, {"file": "bin.000001", "pos": 300}, "db", "DROP TABLE t", []),
        lambda h: h.clear())
    for touch in touches:
        with pytest.raises(StateFormatError) as info:
            touch(FileSchemaHistory(path))
        assert str(info.value) == message and info.value.path == stamp
        assert describe(info.value) == (f"error: {message}", 1)
    assert path.read_bytes() == content  # neither cut, nor appended to, nor cleared
    assert orjson.loads(stamp.read_bytes())["format"] == 3



def test_newer_offsets_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    FileOffsetStore(path, PARTITION).save({"lsn": 42})
    doc = orjson.loads(path.read_bytes())
    path.write_bytes(orjson.dumps({**doc, "version": 3}))
    with pytest.raises(OffsetFormatError) as info:
        FileOffsetStore(path, PARTITION).load()
    assert str(info.value) == newer("offset file", path, None)
    # Both kinds of catcher see it: the store's (run, the service) and the CLI's.
    assert isinstance(info.value, OffsetStoreError)
    assert describe(info.value) == (f"error: {newer('offset file', path, None)}", 1)
    assert orjson.loads(path.read_bytes())["version"] == 3  # left as it was


def test_the_rest_offsets_view_refuses_newer_offsets(tmp_path: Path) -> None:
    # GET/PATCH /connectors/{name}/offsets read the file through the same check.
    from headwater.server import views

    store = ConnectorStore(tmp_path)
    row = store.create("pg", {"connector.class": "io.debezium.connector.postgresql."
                              "PostgresConnector", "topic.prefix": "srv"}, Target.STOPPED)
    path = views.offsets_path(row, tmp_path)
    FileOffsetStore(path, PARTITION).save({"lsn": 42})
    assert views.read_offsets(row, tmp_path).offsets[0].offset == {"lsn": 42}
    path.write_bytes(orjson.dumps({**orjson.loads(path.read_bytes()), "version": 3}))
    with pytest.raises(OffsetFormatError, match="newer Headwater"):
        views.read_offsets(row, tmp_path)
    store.close()


def test_a_newer_topic_log_is_refused_by_its_writer_and_every_reader(tmp_path: Path) -> None:
    root = tmp_path / "topics"
    write_topic_log(root)
    stamp = restamp(root, TOPIC_LOG, 3)
    # A crashed writer's torn tail: recovery would truncate and seal it; the refusal comes
    # before recovery, so a newer layout is never rewritten.
    torn = root / TOPIC / inprogress_name(5)
    torn.write_bytes(b'{"offset":5,"timestamp":1,"key":{"id":5},"va')
    message = newer("topic log", stamp)
    with pytest.raises(StateFormatError) as info:
        TopicLog(root)
    assert str(info.value) == message and info.value.path == stamp
    assert torn.read_bytes().endswith(b'"va')
    assert not (root / TOPIC / "00000000000000000005.jsonl").exists()
    # The lock was released: a later writer is refused for the format, not for the lock.
    with pytest.raises(StateFormatError):
        TopicLog(root)
    for read in (lambda: reader.list_topics(root), lambda: list(reader.read(root, TOPIC)),
                 lambda: next(reader.follow(root, TOPIC, timeout=0)),
                 lambda: check_topic(root, TOPIC),
                 lambda: existing_topics_dir(root, "--dir")):
        with pytest.raises(StateFormatError) as info:
            read()
        assert str(info.value) == message


def test_a_newer_catalog_is_refused_before_any_table_is_touched(tmp_path: Path) -> None:
    write_catalog(tmp_path)
    path = tmp_path / CATALOG_FILE
    set_user_version(path, 3)
    for opener in (Catalog, ConnectorStore):
        with pytest.raises(StateFormatError) as info:
            opener(tmp_path)
        assert str(info.value) == newer("catalog", path, None)
    assert user_version(path) == 3
    # A newer catalog with tables this release does not know: none of ours is created.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    db = sqlite3.connect(fresh / CATALOG_FILE)
    db.execute("CREATE TABLE things (id INTEGER)")
    db.execute("PRAGMA user_version = 3")
    db.close()
    with pytest.raises(StateFormatError):
        Catalog(fresh)
    with sqlite3.connect(fresh / CATALOG_FILE) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    assert tables == ["things"]


def test_a_newer_checkpoint_is_refused(tmp_path: Path) -> None:
    checkpoint = tmp_path / "ck"
    write_checkpoint(checkpoint)
    stamp = restamp(checkpoint, CHECKPOINT, 3)
    for opener in (open_checkpoint, check_checkpoint):
        with pytest.raises(StateFormatError) as info:
            opener(checkpoint)
        assert str(info.value) == newer("pipeline checkpoint", stamp)
    assert orjson.loads(stamp.read_bytes())["format"] == 3


# -- the rules themselves -----------------------------------------------------------------

def test_every_kind_is_at_its_documented_format() -> None:
    # Bumping one is a decision the docs (docs/operations.md, Upgrading) must follow.  The
    # topic log is at 2 (per-record checksums) and still reads 1.
    from headwater.state_format import KINDS

    assert [(k.key, k.current, k.oldest) for k in KINDS] == [
        ("offsets", 1, 1), ("topic-log", 2, 1), ("catalog", 1, 1), ("checkpoint", 1, 1),
        ("schema-history", 1, 1)]


def test_an_older_format_this_release_cannot_upgrade_is_refused(tmp_path: Path) -> None:
    later = Kind("topic log", "topic-log", 4, 2)  # a release that dropped format 1
    with pytest.raises(StateFormatError) as info:
        check_version(later, tmp_path / STAMP_FILE, 1)
    assert str(info.value) == (
        f"topic log {tmp_path / STAMP_FILE} was written by an older Headwater (format 1) that "
        "this release cannot upgrade (it reads formats 2 to 4): upgrade through an "
        "intermediate release or restore a backup")
    assert check_version(later, tmp_path, 2) == 2
    with pytest.raises(StateFormatError, match="older Headwater"):
        open_state_dir(tmp_path, later, stamp=True)  # unstamped means format 1
    assert not (tmp_path / STAMP_FILE).exists()


@pytest.mark.parametrize(("content", "problem"), [
    (b"{", "is not JSON"),
    (b"[]", 'has no "format"'),
    (b'{"kind": "topic-log", "format": "1"}', "has format '1', which is not a format version"),
    (b'{"kind": "topic-log", "format": 0}', "has format 0, which is not a format version"),
    (b'{"kind": "checkpoint", "format": 1}', "stamps a 'checkpoint' directory, not a topic log"),
])
def test_a_damaged_or_foreign_stamp_is_refused(tmp_path: Path, content: bytes,
                                               problem: str) -> None:
    (tmp_path / STAMP_FILE).write_bytes(content)
    with pytest.raises(StateFormatError) as info:
        open_state_dir(tmp_path, TOPIC_LOG, stamp=True)
    assert problem in str(info.value) and str(tmp_path / STAMP_FILE) in str(info.value)
    assert "\n" not in str(info.value)
    assert (tmp_path / STAMP_FILE).read_bytes() == content  # not "repaired" by overwriting


@pytest.mark.parametrize(("raw", "problem"), [
    (b"{", "the value for k is not valid JSON ("),
    (b"[1]", "the value for k holds list, not an offsets document"),
    (b"null", "the value for k holds NoneType, not an offsets document"),
])
def test_a_damaged_offset_is_refused_by_the_error_the_reader_names(raw: bytes,
                                                                  problem: str) -> None:
    """The file store, the Kafka offsets store and `offsets show` read a stored offset through
    offsets_document: each gets its own error class, naming where the value was."""

    class ReaderError(Exception):
        pass

    with pytest.raises(ReaderError) as info:
        offsets_document(raw, "the value for k", ReaderError)
    assert problem in str(info.value) and "refusing to guess a position" in str(info.value)
    assert offsets_document(b'{"version": 2}', "the value for k", ReaderError) == {"version": 2}


def test_write_stamp_replaces_atomically(tmp_path: Path) -> None:
    path = write_stamp(tmp_path, CHECKPOINT)
    assert read_stamp(tmp_path, CHECKPOINT) == 1
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
