"""Headwater's MongoDB JSON strings against real Debezium's, from captured fixtures.

Each fixture (scripts/capture_mongodb_fixtures.py, see fixtures/README.md) holds what
Debezium 3.6 emitted and the raw change events a pymongo change stream saw over the same
workload, in the same order.  Every data record's `after`, `before`, key `id` and
`updateDescription` is recomputed from the raw BSON (and from the pymongo-decoded document)
and must be equal, byte for byte.  Except an update's `after` in the `*_update_full*` modes:
Debezium asks for `fullDocument: updateLookup`, the document as it is when the server builds the
batch, which races the workload; the fixtures hold post-images, so there `after` must be the
encoding of one of that document's versions (or null once deleted).

One accepted difference, only in fixtures captured on Java 17: JDK 17's `Double.toString` prints
some doubles with needless digits (JDK-4511638, fixed in JDK 19: `1e23` -> `9.999999999999999E22`);
Headwater prints JDK 19+'s shortest form.  There the strings may differ only in number tokens that
denote the same double.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import bson
import pytest
from bson.codec_options import DatetimeConversion
from bson.raw_bson import RawBSONDocument

from headwater.connectors.mongodb.extended_json import ExtendedJson

FIXTURES = Path(__file__).parent / "fixtures"
_DECODE: bson.CodecOptions[dict[str, Any]] = bson.CodecOptions(
    datetime_conversion=DatetimeConversion.DATETIME_AUTO, tz_aware=True)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:E[+-]?\d+)?")
# Decoded documents lose what pymongo's decoder merges (see extended_json's docstring).
_DECODED_LOSSY = {"deprecated"}


def _java(fixture: dict[str, Any]) -> int:
    return int(re.search(r'version "(\d+)', fixture["java"]).group(1))  # type: ignore[union-attr]


def _fixtures() -> list[Path]:
    return sorted(FIXTURES.glob("*.json"))


def _same(ours: str | None, theirs: str | None, java: int) -> bool:
    if ours == theirs or ours is None or theirs is None or java >= 19:
        return ours == theirs
    if _NUMBER.sub("#", ours) != _NUMBER.sub("#", theirs):
        return False
    return all(float(a) == float(b) and (a == b or "." in a or "E" in a)
               for a, b in zip(_NUMBER.findall(ours), _NUMBER.findall(theirs), strict=True))


def _pairs(fixture: dict[str, Any]) -> list[tuple[dict[str, Any], RawBSONDocument]]:
    """(Debezium payload record, raw change event), matched by delivery order."""
    records = [r for r in fixture["records"] if r["value"] is not None
               and not r["topic"].endswith(".transaction")
               and r["value"]["payload"]["op"] != "r"]
    events = [RawBSONDocument(base64.b64decode(e)) for e in fixture["change_events"]]
    assert len(records) == len(events)
    for record, event in zip(records, events, strict=True):
        assert record["topic"].endswith(f'.{event["ns"]["db"]}.{event["ns"]["coll"]}')
    return list(zip(records, events, strict=True))


def _decoded(raw: RawBSONDocument) -> Any:
    return bson.decode(raw.raw, _DECODE)


@pytest.mark.parametrize("path", _fixtures(), ids=lambda p: p.stem)
def test_streamed_events(path: Path) -> None:
    fixture = json.loads(path.read_text())
    java = _java(fixture)
    enc = ExtendedJson(java)
    checked = 0
    pairs = _pairs(fixture)
    versions: dict[str, set[str | None]] = {}
    for _, event in pairs:
        full = event.get("fullDocument")
        versions.setdefault(enc.id_json_raw(event["documentKey"].raw), {None}).add(
            None if full is None else enc.document_json(full))
    lookup = "update_full" in fixture["config"]["capture.mode"]
    for record, event in pairs:
        payload = record["value"]["payload"]
        key = record["key"]["payload"]["id"]
        doc_key = event["documentKey"]
        assert _same(enc.id_json_raw(doc_key.raw), key, java)
        assert _same(enc.id_json(_decoded(doc_key)["_id"]), key, java)
        for field, source in (("after", "fullDocument"), ("before", "fullDocumentBeforeChange")):
            doc = event.get(source) if event["operationType"] != "delete" or field == "before" \
                else None
            expected = payload[field]
            if lookup and field == "after" and payload["op"] == "u":
                assert any(_same(v, expected, java) for v in versions[key]), expected
                continue
            if doc is None:
                assert expected is None, (field, expected)
                continue
            assert _same(enc.document_json(doc), expected, java), (field, expected)
            if str(_decoded(doc_key)["_id"]) not in _DECODED_LOSSY:
                assert _same(enc.document_json(_decoded(doc)), expected, java), (field, expected)
            checked += 1
        desc = event.get("updateDescription")
        assert enc.update_description(desc) == payload["updateDescription"]
        if desc is not None:
            assert enc.update_description(_decoded(desc)) == payload["updateDescription"]
    assert checked or "transaction" in path.stem


@pytest.mark.parametrize("path", _fixtures(), ids=lambda p: p.stem)
def test_snapshot_documents(path: Path) -> None:
    fixture = json.loads(path.read_text())
    java = _java(fixture)
    enc = ExtendedJson(java)
    docs = [RawBSONDocument(base64.b64decode(d)) for d in fixture["snapshot_documents"]]
    by_key = {enc.id_json_raw(d.raw): d for d in docs}
    snapshot = [r for r in fixture["records"]
                if r["value"] is not None and r["value"]["payload"].get("op") == "r"
                and "headwater_oracle" not in r["topic"]]
    assert snapshot
    for record in snapshot:
        doc = by_key[record["key"]["payload"]["id"]]
        assert _same(enc.document_json(doc), record["value"]["payload"]["after"], java)
        assert record["value"]["payload"]["before"] is None


def test_every_capture_mode_and_the_java25_run_are_present() -> None:
    names = {p.stem for p in _fixtures()}
    assert {"types", "types-java25", "updates", "transaction"} <= names
    assert {f"mode-{m}" for m in ("change_streams", "change_streams_update_full",
                                  "change_streams_update_full_with_pre_image",
                                  "change_streams_with_pre_image")} <= names
