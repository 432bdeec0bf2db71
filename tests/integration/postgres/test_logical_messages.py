"""Logical decoding messages (``pg_logical_emit_message``) against a real PostgreSQL 14+.

What Debezium 3.x writes (LogicalDecodingMessageMonitor, PostgresSchemaFactory and
LogicalDecodingMessageIT): topic ``<topic.prefix>.message``, key ``MessageKey {prefix}``, value
``MessageValue {op: m, ts_ms, source, transaction, message {prefix, content}}`` with an empty
``schema``/``table`` in the source block; a transactional message carries its transaction's
xid, commit time and (with ``provide.transaction.metadata``) a transaction block counted under
``LOGICAL_DECODING_MESSAGE``; a non-transactional one has none of them.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import orjson
import pytest

from headwater.testing.replay import events
from headwater.topics import reader
from tests.record_json import json_of

from .conftest import Env, wait_for

pytestmark = pytest.mark.integration


def _messages(env: Env) -> list[tuple[Any, Any]]:
    if not env.topics.exists():
        return []
    return [(k, v) for _, k, v in events(env.topics, f"{env.prefix}.message")]


def _require_14(env: Env) -> None:
    version = int(env.sql("SHOW server_version_num")[0][0])
    if version < 140000:
        pytest.skip("pgoutput sends logical decoding messages from PostgreSQL 14 on")


def _started(cap: Any) -> None:
    wait_for(lambda: cap.runtime.metrics.snapshot_completed or cap.error, what="snapshot")
    assert cap.error is None


def test_transactional_and_non_transactional_events(env: Env) -> None:
    _require_14(env)
    env.sql("CREATE TABLE t (id int PRIMARY KEY)")
    cap = env.capture({"provide.transaction.metadata": "true"})
    try:
        _started(cap)
        conn = env.pg.connect(env.db, autocommit=False)
        with conn.cursor() as cur:
            cur.execute("INSERT INTO t VALUES (1)")
            cur.execute("SELECT pg_logical_emit_message(true, 'tx.prefix', 'in tx')")
            cur.execute("SELECT txid_current()")
            xid = int(cur.fetchone()[0])
        conn.commit()
        conn.close()
        env.sql("SELECT pg_logical_emit_message(false, 'alone', '\\x00ff'::bytea)")
        wait_for(lambda: len(_messages(env)) == 2, what="two message events")
    finally:
        cap.stop()
    (k1, v1), (k2, v2) = _messages(env)
    assert k1 == {"prefix": "tx.prefix"} and k2 == {"prefix": "alone"}
    assert v1["op"] == "m" and v2["op"] == "m"
    assert v1["message"] == {"prefix": "tx.prefix",
                             "content": base64.b64encode(b"in tx").decode()}
    assert v2["message"] == {"prefix": "alone", "content": base64.b64encode(b"\0\xff").decode()}
    assert set(v1) == {"op", "ts_ms", "source", "transaction", "message"}
    for value in (v1, v2):
        src = value["source"]
        assert (src["schema"], src["table"], src["db"]) == ("", "", env.db)
        assert src["connector"] == "postgresql" and src["name"] == env.prefix
        assert src["snapshot"] == "false" and isinstance(src["lsn"], int)
    assert v1["source"]["txId"] == xid
    assert v2["source"]["txId"] is None
    tx = v1["transaction"]
    # Debezium 3.x: `<txId>:<the event's LSN>`
    assert tx is not None and tx["id"] == f"{xid}:{v1['source']['lsn']}"
    assert (tx["total_order"], tx["data_collection_order"]) == (2, 1)
    assert v2["transaction"] is None
    ends = [v for _, _, v in events(env.topics, f"{env.prefix}.transaction")
            if v["status"] == "END"]
    end = next(v for v in ends if v["id"].split(":")[0] == str(xid))
    assert end["event_count"] == 2
    assert {c["data_collection"]: c["event_count"] for c in end["data_collections"]} == {
        "public.t": 1, "LOGICAL_DECODING_MESSAGE": 1}
    # The BEGIN/END pairs are those of the one transaction: the non-transactional message
    # opens none.
    assert [v["id"].split(":")[0] for v in ends] == [str(xid)]
    # The schemas Debezium names.
    rec = next(reader.read(env.topics, f"{env.prefix}.message", from_offset=0))
    assert rec.key is not None and rec.value is not None
    key_schema = orjson.loads(rec.key)["schema"]
    value_schema = orjson.loads(rec.value)["schema"]
    assert (key_schema["name"], key_schema["version"]) == (
        "io.debezium.connector.postgresql.MessageKey", 1)
    assert value_schema["name"] == "io.debezium.connector.postgresql.MessageValue"
    block = next(f for f in value_schema["fields"] if f["field"] == "message")
    assert block["name"] == "io.debezium.connector.postgresql.Message"
    assert [(f["field"], f["type"], f["optional"]) for f in block["fields"]] == [
        ("prefix", "string", True), ("content", "bytes", True)]


def test_prefix_filters_and_binary_mode(env: Env) -> None:
    _require_14(env)
    cap = env.capture({"message.prefix.include.list": "keep\\..*",
                       "binary.handling.mode": "hex"})
    try:
        _started(cap)
        for prefix in ("drop.me", "keep.one", "KEEP.two", "keep"):
            env.sql("SELECT pg_logical_emit_message(false, %s, 'ab')", (prefix,))
        wait_for(lambda: len(_messages(env)) == 2, what="the admitted messages")
        # "keep" (no dot) and "drop.me" are left out: give a stray event the time to show up.
        env.sql("SELECT pg_logical_emit_message(false, 'keep.last', 'z')")
        wait_for(lambda: len(_messages(env)) == 3, what="the last message")
    finally:
        cap.stop()
    got = [(v["message"]["prefix"], v["message"]["content"]) for _, v in _messages(env)]
    assert got == [("keep.one", "6162"), ("KEEP.two", "6162"), ("keep.last", "7a")]


def test_exclude_list(env: Env) -> None:
    _require_14(env)
    cap = env.capture({"message.prefix.exclude.list": "secret.*"})
    try:
        _started(cap)
        env.sql("SELECT pg_logical_emit_message(true, 'secret', 'x')")
        env.sql("SELECT pg_logical_emit_message(true, 'public', 'y')")
        wait_for(lambda: len(_messages(env)) == 1, what="the admitted message")
    finally:
        cap.stop()
    assert [k for k, _ in _messages(env)] == [{"prefix": "public"}]


def test_a_restart_does_not_send_a_durable_message_again(env: Env) -> None:
    _require_14(env)
    cap = env.capture()
    try:
        _started(cap)
        env.sql("SELECT pg_logical_emit_message(false, 'p', 'first')")
        env.sql("SELECT pg_logical_emit_message(true, 'p', 'second')")
        wait_for(lambda: len(_messages(env)) == 2, what="two messages")
        wait_for(lambda: cap.runtime.queue.size == 0, what="queue drained")
    finally:
        cap.stop()
    stored = json.loads(env.offsets.read_text())
    assert stored  # an offset past both messages was stored
    cap = env.capture()
    try:
        wait_for(lambda: cap.runtime.metrics.connected or cap.error, what="streaming again")
        env.sql("SELECT pg_logical_emit_message(false, 'p', 'third')")
        wait_for(lambda: len(_messages(env)) >= 3, what="the third message")
    finally:
        cap.stop()
    contents = [base64.b64decode(v["message"]["content"]) for _, v in _messages(env)]
    assert contents == [b"first", b"second", b"third"]


def test_a_message_in_a_streamed_transaction(env: Env) -> None:
    """A transactional message inside a transaction the server streams (protocol 2) goes
    through the spill file and comes out once, at its place, after the commit."""
    _require_14(env)
    env.sql("CREATE TABLE big (id int PRIMARY KEY, pad text)")
    admin = env.pg.connect()
    with admin.cursor() as cur:
        cur.execute("ALTER SYSTEM SET logical_decoding_work_mem = '64kB'")
        cur.execute("SELECT pg_reload_conf()")
    cap = env.capture({"provide.transaction.metadata": "true"})
    try:
        _started(cap)
        conn = env.pg.connect(env.db, autocommit=False)
        cur = conn.cursor()
        cur.execute("INSERT INTO big SELECT g, repeat('x', 40) FROM generate_series(1, 3000) g")
        cur.execute("SELECT pg_logical_emit_message(true, 'mid', 'between')")
        cur.execute("INSERT INTO big SELECT g, 'y' FROM generate_series(3001, 6000) g")
        cur.execute("SELECT txid_current()")
        xid = int(cur.fetchone()[0])
        wait_for(lambda: int(env.sql(
            "SELECT coalesce(max(stream_txns), 0) FROM pg_stat_replication_slots "
            "WHERE slot_name = %s", (env.slot,))[0][0]) > 0, what="the server streaming")
        assert _messages(env) == []  # nothing before the commit
        conn.commit()
        conn.close()
        wait_for(lambda: len(_messages(env)) >= 1, timeout=120, what="the message")
        wait_for(lambda: cap.runtime.queue.size == 0, what="queue drained")
    finally:
        cap.stop()
        with admin.cursor() as cur:
            cur.execute("ALTER SYSTEM RESET logical_decoding_work_mem")
            cur.execute("SELECT pg_reload_conf()")
        admin.close()
    [(key, value)] = _messages(env)
    assert key == {"prefix": "mid"}
    assert value["source"]["txId"] == xid
    assert value["transaction"]["total_order"] == 3001


# -- DecodeLogicalDecodingMessageContent (Debezium's DecodeLogicalDecodingMessageContentTest) --

DECODE = {
    "transforms": "decode",
    "transforms.decode.type":
        "io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent",
}


def _raw(env: Env) -> list[tuple[Any, Any]]:
    return [(json_of(r.key) if r.key is not None else None, json_of(r.value))
            for r in reader.read(env.topics, f"{env.prefix}.message", from_offset=0)]


@pytest.mark.parametrize("null_include", [False, True])
def test_decode_transform_makes_an_insert_of_the_content(env: Env, null_include: bool) -> None:
    _require_14(env)
    env.sql("CREATE TABLE t (id int PRIMARY KEY)")
    cap = env.capture({**DECODE, "transforms.decode.fields.null.include": str(null_include)})
    try:
        _started(cap)
        env.sql("""SELECT pg_logical_emit_message(true, 'foo',
                   '{"bar": "baz", "qux": 9703, "quux": null}')""")
        env.sql("SELECT pg_logical_emit_message(false, 'foo', '{}')")
        env.sql("INSERT INTO t VALUES (1)")  # other events pass unchanged
        wait_for(lambda: env.topics.exists() and len(list(events(
            env.topics, f"{env.prefix}.public.t"))) == 1, what="the row")
    finally:
        cap.stop()
    assert cap.error is None
    (k1, v1), (k2, v2) = _raw(env)
    assert k1 is None and k2 is None  # key and key schema cleared
    for value in (v1, v2):
        schema, payload = value["schema"], value["payload"]
        assert schema["name"] == "io.debezium.connector.postgresql.MessageValue.Envelope"
        assert [f["field"] for f in schema["fields"]] == [
            "op", "ts_ms", "source", "transaction", "after"]
        assert payload["op"] == "c" and "message" not in payload
        assert (payload["source"]["schema"], payload["source"]["table"]) == ("", "")
        assert payload["source"]["ts_ms"] is not None
    assert v1["payload"]["source"]["txId"] is not None
    assert v2["payload"]["source"]["txId"] is None
    after_schema = v1["schema"]["fields"][-1]
    if null_include:
        assert v1["payload"]["after"] == {"bar": "baz", "qux": 9703, "quux": None}
        assert [(f["field"], f["type"]) for f in after_schema["fields"]] == [
            ("bar", "string"), ("qux", "int32"), ("quux", "bytes")]
    else:
        assert v1["payload"]["after"] == {"bar": "baz", "qux": 9703}
        assert [(f["field"], f["type"]) for f in after_schema["fields"]] == [
            ("bar", "string"), ("qux", "int32")]
    assert v2["payload"]["after"] == {}
    rows = [v for _, _, v in events(env.topics, f"{env.prefix}.public.t")]
    assert rows[0]["op"] == "c" and rows[0]["after"] == {"id": 1}


def test_decode_transform_fails_on_content_that_is_no_json(env: Env) -> None:
    _require_14(env)
    cap = env.capture(DECODE)
    try:
        _started(cap)
        env.sql("SELECT pg_logical_emit_message(false, 'foo', '')")
        wait_for(lambda: cap.error is not None, what="the transform to fail")
    finally:
        with pytest.raises(Exception,
                           match="Unable to parse logical decoding message content JSON string ''"):
            cap.stop()


def test_decode_transform_needs_bytes_content(env: Env) -> None:
    _require_14(env)
    cap = env.capture({**DECODE, "binary.handling.mode": "base64"})
    try:
        _started(cap)
        env.sql("SELECT pg_logical_emit_message(false, 'foo', '{}')")
        wait_for(lambda: cap.error is not None, what="the transform to fail")
    finally:
        with pytest.raises(Exception,
                           match="The content of a logical decoding message is non-binary"):
            cap.stop()
