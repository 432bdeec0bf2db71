"""The MongoDB side of `headwater validate`: one canonical text for what the connector sends
(Debezium's strict Extended JSON), what the pipeline stores after a patch (relaxed fields
mixed in), and field-level differences."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
from bson import Binary, Decimal128, Int64, ObjectId, Regex, Timestamp
from typer.testing import CliRunner

from headwater.cli import app
from headwater.connectors.mongodb.extended_json import document_json
from headwater.validate.model import RowDiff
from headwater.validate.mongodb_side import canonical, chunk_of, field_diffs

OID = ObjectId("65a1b2c3d4e5f60718293a4b")
DOC = {
    "_id": OID, "long": Int64(5), "int": 7, "double": 2.0, "neg": -0.5,
    "date": datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC), "dec": Decimal128("12.50"),
    "bin": Binary(b"\x00\x01\xff", 0), "re": Regex("^a.*", "i"), "ts": Timestamp(1700000000, 3),
    "nested": {"b": [1, Int64(2), {"c": None}], "a": True}, "s": "é\"\n",
}


def _stored(text: str) -> str:
    """What the pipeline keeps in `__hw_doc`: the event's JSON parsed and written by orjson."""
    return orjson.dumps(orjson.loads(text)).decode()


def test_strict_and_stored_forms_are_one_canonical_text() -> None:
    sent = document_json(DOC)
    assert '"$numberLong"' in sent  # the connector's strict form, not the relaxed one
    assert canonical(sent) == canonical(_stored(sent))


def test_relaxed_patch_fields_and_key_order_do_not_differ() -> None:
    strict = '{"_id": {"$oid": "65a1b2c3d4e5f60718293a4b"}, "n": {"$numberLong": "5"}, ' \
        '"d": {"$date": 1704164645678}}'
    relaxed = '{"d": {"$date": "2024-01-02T03:04:05.678Z"}, "n": 5, ' \
        '"_id": {"$oid": "65a1b2c3d4e5f60718293a4b"}}'
    assert canonical(strict) == canonical(relaxed)


def test_types_and_values_still_differ() -> None:
    base = canonical('{"_id": 1, "v": 1}')
    assert canonical('{"_id": 1, "v": "1"}') != base
    assert canonical('{"_id": 1, "v": 1.5}') != base
    assert canonical('{"_id": 1, "v": {"$oid": "65a1b2c3d4e5f60718293a4b"}}') != canonical(
        '{"_id": 1, "v": "65a1b2c3d4e5f60718293a4b"}')
    assert canonical('{"_id": 1, "v": 1, "w": null}') != base


def test_field_diffs_name_changed_added_and_removed_fields() -> None:
    row = RowDiff({"_id": "1"}, "changed", {"document": {
        "source": canonical('{"_id": 1, "a": 1, "b": "x", "c": [1]}'),
        "target": canonical('{"_id": 1, "a": 2, "b": "x", "d": null}')}})
    out = field_diffs(row)
    assert out.key == {"_id": "1"}
    assert out.columns == {
        "a": {"source": "1", "target": "2"},
        "c": {"source": "[1]", "target": "(absent)"},
        "d": {"source": "(absent)", "target": "null"},
    }
    assert field_diffs(RowDiff({"_id": "2"}, "missing")).kind == "missing"


def test_chunks_are_stable_buckets_of_the_id_text() -> None:
    assert chunk_of('{"$oid":"65a1b2c3d4e5f60718293a4b"}', 7) == chunk_of(
        '{"$oid":"65a1b2c3d4e5f60718293a4b"}', 7)
    assert {chunk_of(str(i), 4) for i in range(100)} == {0, 1, 2, 3}


def test_the_changelog_mode_is_refused_by_property(tmp_path: Path) -> None:
    """A document changelog's patch rows hold no document: nothing to compare them with."""
    (tmp_path / "delta").mkdir()
    config = tmp_path / "mongo.properties"
    config.write_text(
        "connector.class=io.debezium.connector.mongodb.MongoDbConnector\n"
        "mongodb.connection.string=mongodb://127.0.0.1:1/?replicaSet=rs0\n"
        "topic.prefix=mg\n"
        f"offset.storage.file.filename={tmp_path / 'offsets.json'}\n"
        f"headwater.pipeline.delta.path={tmp_path / 'delta'}\n"
        "headwater.pipeline.mode=changelog\n")
    out = CliRunner().invoke(app, ["validate", str(config)])
    assert out.exit_code == 2, out.output
    assert "headwater.pipeline.mode: validate compares MongoDB collections with scd1 and scd2 " \
        "targets, not 'changelog'" in out.output


def test_fast_wrappers_agree_with_json_util() -> None:
    """`$numberLong`/`$numberInt` become numbers as json_util's relaxed form writes them;
    other wrappers (dates, doubles that are not numbers) still go through json_util."""
    assert canonical('{"a": {"$numberLong": "-9223372036854775808"}, "b": {"$numberInt": "7"}}'
                     ) == '{"a":-9223372036854775808,"b":7}'
    assert canonical('{"d": {"$date": {"$numberLong": "-62135596800001"}}}') == (
        '{"d":{"$date":{"$numberLong":"-62135596800001"}}}')  # before year 1: no ISO form
    assert canonical('{"d": {"$date": 0}, "x": {"$numberDouble": "NaN"}}') == (
        '{"d":{"$date":"1970-01-01T00:00:00Z"},"x":{"$numberDouble":"NaN"}}')
