"""Datastream events into the pipeline's changes, without Spark: sort_keys as sequences, op
and key, dedup by uuid, the net change per key whatever order and duplicates the events come
in, JSON and Avro typing, and the file log of the files source."""

from __future__ import annotations

import datetime as dt
import io
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from fastavro import parse_schema, writer

from headwater.pipeline.datastream import order
from headwater.pipeline.datastream.events import RawEvent, decode_object
from headwater.pipeline.datastream.file_source import plan_end
from headwater.pipeline.datastream.files import FileLog, list_files, read_file, read_log
from headwater.pipeline.net import dedup, net_changes


def event(key: int, sort_keys: list[int], *, ver: int | None = 0, deleted: bool = False,
          change: str = "UPDATE", backfill: bool = False, uid: str | None = None,
          extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "stream_name": "s", "read_method": "postgresql-backfill" if backfill else
        "postgres-cdc-wal", "object": "public_t", "schema_key": "k",
        "uuid": uid or f"u-{key}-{'.'.join(map(str, sort_keys))}-{deleted}",
        "read_timestamp": "2024-01-02T03:04:05.678Z",
        "source_timestamp": "2024-01-02T03:04:05.001Z", "sort_keys": sort_keys,
        "source_metadata": {"schema": "public", "table": "t", "is_deleted": deleted,
                            "change_type": "DELETE" if deleted else change, "tx_id": "7",
                            "lsn": "0/10", "primary_keys": ["id"]},
        "payload": {"id": key, "ver": ver, **(extra or {})},
    }


def test_sequence_orders_like_sort_keys_element_wise() -> None:
    rng = random.Random(3)
    keys = [[rng.choice([0, 1, 2, 255, 2**40, 2**63 - 1, -1, -(2**63)])
             for _ in range(rng.randint(1, 5))] for _ in range(400)]
    by_sequence = sorted(keys, key=order.sequence)
    assert by_sequence == sorted(keys)
    with pytest.raises(order.UnorderableEventError):
        order.sequence(["a"])
    with pytest.raises(order.UnorderableEventError):
        order.sequence([2**64])


def test_op_key_timestamps_and_lsn() -> None:
    assert order.op_of(event(1, [1], backfill=True, change="INSERT")) == "r"
    assert order.op_of(event(1, [1], change="INSERT")) == "c"
    assert order.op_of(event(1, [1], change="UPDATE-INSERT")) == "u"
    assert order.op_of(event(1, [1], deleted=True)) == "d"
    assert order.millis("2024-01-02T03:04:05.678Z") == 1704164645678
    assert order.millis(dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC)) == 1704164645678
    assert order.pg_lsn("16/B374D848") == (0x16 << 32) | 0xB374D848
    changes = decode_object("t", [RawEvent(0, event(5, [9, 9, 1, 0], ver=3))])
    (e,) = changes.events
    assert (changes.schema_name, changes.table_name, changes.key_columns) == (
        "public", "t", ("id",))
    assert (e.op, e.key, e.row, e.dedup, e.tx_id, e.lsn) == (
        "u", (5,), {"id": 5, "ver": 3}, ("u-5-9.9.1.0-False",), "7", 16)


def final_state(events: list[dict[str, Any]]) -> dict[int, int]:
    """The reference: per key the event with the greatest sort_keys, uuid duplicates dropped."""
    latest: dict[int, dict[str, Any]] = {}
    for e in {e["uuid"]: e for e in events}.values():
        k = e["payload"]["id"]
        if k not in latest or e["sort_keys"] > latest[k]["sort_keys"]:
            latest[k] = e
    return {k: e["payload"]["ver"] for k, e in latest.items()
            if not e["source_metadata"]["is_deleted"]}


def test_net_changes_whatever_the_order_and_duplicates() -> None:
    rng = random.Random(11)
    events = [event(k, [100, 100, 0, 0], ver=0, backfill=True, change="INSERT")
              for k in range(1, 30)]
    for i in range(1, 300):
        k = rng.randint(1, 40)
        deleted = rng.random() < 0.2
        # (commit lsn, lsn, rank, half): a change's lsn is below later commits' but not
        # ordered across transactions
        events.append(event(k, [100 + i, rng.randint(0, 10**6), 1, 0], ver=i, deleted=deleted))
    want = final_state(events)
    delivered = events + rng.sample(events, 80)  # re-deliveries: same uuid
    rng.shuffle(delivered)
    changes = decode_object("t", [RawEvent(i, e) for i, e in enumerate(delivered)])
    assert len(dedup(changes.events)) == len(events)
    net, truncate = net_changes(changes.events, "public.t")
    assert truncate is None
    got = {n.key[0]: n.row["ver"] for n in net if not n.delete and n.row is not None}
    assert got == want
    gone = {n.key[0] for n in net if n.delete}
    assert gone == {e["payload"]["id"] for e in events} - set(want)


def test_backfill_row_below_log_events_at_its_position() -> None:
    backfill = event(1, [50, 50, 0, 0], ver=0, backfill=True, change="INSERT")
    update = event(1, [50, 60, 1, 0], ver=1)
    older_update = event(1, [40, 90, 1, 0], ver=9)  # committed before the snapshot point
    changes = decode_object("t", [RawEvent(0, update), RawEvent(1, backfill),
                                  RawEvent(2, older_update)])
    (n,), _ = net_changes(changes.events, "t")
    assert n.row is not None and n.row["ver"] == 1


def test_primary_key_change_is_a_delete_and_an_insert() -> None:
    old = event(2, [70, 70, 1, 0], deleted=True, change="UPDATE-DELETE")
    new = event(3, [70, 70, 1, 1], ver=5, change="UPDATE-INSERT")
    changes = decode_object("t", [RawEvent(0, new), RawEvent(1, old)])
    net, _ = net_changes(changes.events, "t")
    assert {(n.key, n.delete) for n in net} == {((2,), True), ((3,), False)}


def test_json_types_from_values_and_from_the_target() -> None:
    items = [RawEvent(0, event(1, [1], extra={"price": 2, "note": None, "doc": {"a": 1},
                                               "ok": True, "lost": None})),
             RawEvent(1, event(2, [2], extra={"price": 2.5, "note": "x", "doc": "s",
                                               "ok": None, "lost": None}))]
    changes = decode_object("t", items, {"lost": pa.int32()})
    types = {n: c.type.arrow for n, c in changes.columns.items()}
    assert types == {"id": pa.int64(), "ver": pa.int64(), "price": pa.float64(),
                     "note": pa.string(), "doc": pa.string(), "ok": pa.bool_(),
                     "lost": pa.int32()}
    rows = [e.row for e in changes.events]
    assert rows[0] is not None and rows[0]["price"] == 2.0 and rows[0]["doc"] == '{"a":1}'
    # a double column keeps its type when a batch has integral values only
    again = decode_object("t", [items[0]], {"price": pa.float64()})
    assert again.columns["price"].type.arrow == pa.float64()
    # a column only ever null, unknown to the target: left out until it has a value
    assert "lost" not in decode_object("t", items).columns


def test_unchanged_toast_placeholder_is_unavailable() -> None:
    e = event(1, [1], extra={"note": "__debezium_unavailable_value"})
    (ce,) = decode_object("t", [RawEvent(0, e)]).events
    assert ce.unavailable == frozenset({"note"}) and ce.row is not None
    assert ce.row["note"] is None


AVRO_SCHEMA = {
    "type": "record", "name": "datastream_event", "namespace": "headwater", "fields": [
        {"name": "uuid", "type": "string"}, {"name": "object", "type": "string"},
        {"name": "read_method", "type": "string"},
        {"name": "source_timestamp", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "read_timestamp", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "sort_keys", "type": {"type": "array", "items": ["string", "long"]}},
        {"name": "source_metadata", "type": {"type": "record", "name": "source_metadata",
         "fields": [{"name": "schema", "type": "string"}, {"name": "table", "type": "string"},
                    {"name": "is_deleted", "type": "boolean"},
                    {"name": "change_type", "type": "string"},
                    {"name": "primary_keys", "type": {"type": "array", "items": "string"}}]}},
        {"name": "payload", "type": {"type": "record", "name": "payload", "fields": [
            {"name": "id", "type": ["null", "int"], "sourceName": "id"},
            {"name": "a_b", "type": ["null", {"type": "bytes", "logicalType": "decimal",
                                              "precision": 10, "scale": 2}],
             "sourceName": "a b"},
            {"name": "placed", "type": ["null", {"type": "record", "name": "datetime", "fields": [
                {"name": "date", "type": {"type": "int", "logicalType": "date"}},
                {"name": "time", "type": {"type": "long", "logicalType": "time-micros"}}]}]},
            {"name": "again", "type": ["null", "datetime"]},
            {"name": "paid", "type": ["null", {"type": "long",
                                               "logicalType": "timestamp-micros"}]},
            {"name": "at", "type": ["null", {"type": "long", "logicalType": "time-micros"}]},
            {"name": "tags", "type": ["null", {"type": "array", "items": ["null", "string"]}]},
        ]}},
    ]}


def test_avro_file_types_from_its_schema(tmp_path: Path) -> None:
    when = dt.datetime(2024, 1, 2, 3, 4, 5, 123456)
    datum = {"uuid": "u1", "object": "public_t", "read_method": "postgres-cdc-wal",
             "source_timestamp": 1, "read_timestamp": 2, "sort_keys": [5, 1, 0],
             "source_metadata": {"schema": "public", "table": "t", "is_deleted": False,
                                 "change_type": "INSERT", "primary_keys": ["id"]},
             "payload": {"id": 7, "a_b": Decimal("12.30"),
                         "placed": {"date": when.date(), "time": when.time()},
                         "again": None, "paid": when.replace(tzinfo=dt.UTC),
                         "at": dt.time(1, 2, 3), "tags": ["x", None]}}
    buffer = io.BytesIO()
    writer(buffer, parse_schema(AVRO_SCHEMA), [datum])
    (tmp_path / "f.avro").write_bytes(buffer.getvalue())
    items = list(read_file(tmp_path / "f.avro", 0))
    changes = decode_object("t", items)
    assert {n: c.type.arrow for n, c in changes.columns.items()} == {
        "id": pa.int32(), "a b": pa.decimal128(10, 2), "placed": pa.timestamp("us"),
        "again": pa.timestamp("us"), "paid": pa.timestamp("us", tz="UTC"),
        "at": pa.string(), "tags": pa.list_(pa.string())}
    (e,) = changes.events
    assert e.row == {"id": 7, "a b": Decimal("12.30"), "placed": when, "again": None,
                     "paid": when.replace(tzinfo=dt.UTC), "at": "01:02:03",
                     "tags": ["x", None]}
    assert e.op == "c" and e.key == (7,) and e.source_ts_ms == 1


def test_file_log_takes_each_file_once_in_any_folder(tmp_path: Path) -> None:
    root = tmp_path / "files"
    minute = root / "s" / "public_t" / "2024" / "01" / "02" / "03" / "04"
    minute.mkdir(parents=True)
    (minute / "b.jsonl").write_bytes(orjson.dumps(event(1, [1])) + b"\n")
    (root / ".inflight").mkdir()
    (root / ".inflight" / "x.jsonl").write_text("partial")
    (minute / ".hidden.jsonl").write_text("partial")
    (minute / "c.avro").write_bytes(b"")
    log = FileLog(tmp_path / "ck" / "files.log")
    assert log.add(list_files(root, "json")) == 1
    assert log.add(list_files(root, "json")) == 1  # nothing new
    old = root / "s" / "public_t" / "2023" / "12" / "31" / "23" / "59"
    old.mkdir(parents=True)
    (old / "a.jsonl").write_bytes(orjson.dumps(event(1, [0])) + b"\n")
    assert log.add(list_files(root, "auto")) == 3  # a late file in an old folder, and the avro
    assert read_log(log.path, 1, 3) == [
        "s/public_t/2023/12/31/23/59/a.jsonl", "s/public_t/2024/01/02/03/04/c.avro"]
    with log.path.open("ab") as fh:
        fh.write(b"s/torn")  # a crash while appending: never covered by an offset
    again = FileLog(log.path)
    assert again.lines == log.lines and log.path.read_bytes().endswith(b".avro\n")
    with pytest.raises(ValueError, match="past the file log"):
        read_log(log.path, 0, 4)
    assert plan_end(1, 3, None) == 3 and plan_end(1, 3, 1) == 2 and plan_end(3, 3, 5) == 3


def test_pipeline_config_for_datastream_files(tmp_path: Path) -> None:
    from headwater.config import ConfigError
    from headwater.pipeline.config import load_pipeline_config

    path = tmp_path / "c.properties"
    path.write_text("topic.prefix=p\nheadwater.destination.files.dir=out/files\n"
                    "headwater.pipeline.source=datastream-files\n"
                    "headwater.pipeline.datastream.files.format=avro\n")
    cfg = load_pipeline_config(path)
    assert (cfg.source, cfg.files_dir, cfg.files_format, cfg.max_files_per_trigger) == (
        "datastream-files", tmp_path / "out" / "files", "avro", 1000)
    path.write_text("topic.prefix=p\nheadwater.pipeline.source=files\n"
                    "headwater.pipeline.datastream.files.format=parquet\n")
    with pytest.raises(ConfigError, match="parquet") as info:
        load_pipeline_config(path)
    assert "headwater.pipeline.source" in str(info.value)
