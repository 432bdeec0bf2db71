"""The connector's codec on raw change events gives real Debezium's strings.

The golden test checks the encoder; this one checks what the runtime calls with what the
change stream hands it (RawBSONDocument events and documents): key `id`, `before`, `after`
and `updateDescription` of every data record of the Java 25 fixtures (their string escaping
is the encoder's default), and the snapshot reads.  An update's `after` in the
`*_update_full` modes is Debezium's lookup, racing the workload (see the golden test): skipped.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from bson.raw_bson import RawBSONDocument

from headwater.connectors.mongodb.documents import CollectionCodec, collection_schema
from headwater.connectors.mongodb.fields import FieldSelector
from headwater.model.record import Op

FIXTURES = Path(__file__).parent / "fixtures"
_OP = {Op.CREATE: "c", Op.UPDATE: "u", Op.DELETE: "d"}


@pytest.mark.parametrize("name", ["types-java25", "updates-java25"])
def test_codec_on_raw_events(name: str) -> None:
    fixture = json.loads((FIXTURES / f"{name}.json").read_text())
    records = [r for r in fixture["records"] if r["value"] is not None
               and not r["topic"].endswith(".transaction") and r["value"]["payload"]["op"] != "r"]
    events = [RawBSONDocument(base64.b64decode(e)) for e in fixture["change_events"]]
    assert len(records) == len(events) > 10
    codec = CollectionCodec(collection_schema("db", "c"), FieldSelector(None, None)
                            .for_collection("db", "c"))
    for record, event in zip(records, events, strict=True):
        payload = record["value"]["payload"]
        op, before, after = codec.change(event)
        assert _OP[op] == payload["op"]
        image = after or before
        assert image is not None and image[0] == record["key"]["payload"]["id"]
        assert (before[1] if before else None) == payload["before"]
        if op is not Op.UPDATE:
            assert (after[1] if after else None) == payload["after"]
        assert (after[2] if after else None) == payload.get("updateDescription")


def test_codec_on_raw_snapshot_documents() -> None:
    fixture = json.loads((FIXTURES / "types-java25.json").read_text())
    codec = CollectionCodec(collection_schema("db", "c"), FieldSelector(None, None)
                            .for_collection("db", "c"))
    reads = {}
    for text in fixture["snapshot_documents"]:
        key, doc, update = codec.read(RawBSONDocument(base64.b64decode(text)))
        reads[key] = (doc, update)
    snapshot = [r for r in fixture["records"] if r["value"] is not None
                and r["value"]["payload"].get("op") == "r" and "oracle" not in r["topic"]]
    assert snapshot
    for record in snapshot:
        assert reads[record["key"]["payload"]["id"]] == (record["value"]["payload"]["after"], None)
