"""Issue 30, Must show 1 (MongoDB): a collection holding each BSON type of Google's MongoDB
table (reference §B, "BSON → BigQuery JSON"), captured on a real replica set into Datastream
files and discovered; every type compared with its row (tests/datastream_reference.py): 0
differences.

Google's MongoDB table is not a type mapping like the relational ones: every BSON type lands
in one BigQuery JSON column, and the table's rows are how each type is written there (Extended
JSON v1 strict mode, plus four examples of the canonical mode that became the default).  So a
row is held to:

* events: the column holding the field (`payload`) has unified type JSON, which is BigQuery
  JSON, with §A's Avro type (string, logicalType json) and JSON form (nested JSON);
* discover: the same unified type for that column, and the field sampled with the row's BSON
  type;
* strict mode (`headwater.datastream.mongodb.json.mode=strict`, written into Avro files): the
  field's value matches the row's strict example ("…" matching any string; rows without an
  example, STRING "as is", ARRAY "as JSON array", BOOLEAN and NULL, are written as JSON writes
  them);
* canonical mode (the default, written into JSON files): the field's value matches the page's
  canonical example where it gives one (INT32, DOUBLE's NaN, DATE, BINARY), and for every row
  the canonical form of MongoDB's Extended JSON v2 specification, written out below by hand.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

import orjson
import pytest
from bson import Binary, Code, Decimal128, Int64, ObjectId, Regex, Timestamp
from fastavro import reader

from headwater.streams.discover import discover_mongodb
from tests import datastream_reference as ref

from .conftest import MongoEnv, wait

pytestmark = pytest.mark.integration

STREAM = "projects/p/locations/l/streams/mongo-types"
OID = ObjectId("65f1a2b3c4d5e6f708192a3b")
WHEN = dt.datetime(2024, 12, 25, 10, 30, tzinfo=dt.UTC)  # the page's DATE example, 1735122600000

# reference type name -> (the value stored, its canonical Extended JSON v2 form by the spec)
VALUES: dict[str, tuple[Any, Any]] = {
    "DOUBLE": (3.1415926535, {"$numberDouble": "3.1415926535"}),
    "STRING": ("text", "text"),
    "ARRAY": ([1, "two"], [{"$numberInt": "1"}, "two"]),
    "BINARY": (Binary(b"\x01\x02", 0), {"$binary": {"base64": "AQI=", "subType": "00"}}),
    "BOOLEAN": (True, True),
    "DATE": (WHEN, {"$date": {"$numberLong": "1735122600000"}}),
    "NULL": (None, None),
    "REGEX": (Regex("^a", "i"), {"$regularExpression": {"pattern": "^a", "options": "i"}}),
    "JAVASCRIPT": (Code("function () { return 1; }"), {"$code": "function () { return 1; }"}),
    "DECIMAL128": (Decimal128("1.10"), {"$numberDecimal": "1.10"}),
    "OBJECTID": (OID, {"$oid": str(OID)}),
    "INT64": (Int64(2**40), {"$numberLong": str(2**40)}),
    "INT32": (42, {"$numberInt": "42"}),
    "TIMESTAMP": (Timestamp(1747888877, 1), {"$timestamp": {"t": 1747888877, "i": 1}}),
}
ALIASES = {"LONG": "INT64"}  # the page's "LONG/INT64" row
# rows the page writes without an example: what JSON writes for them in strict mode
PLAIN = {"STRING": "text", "ARRAY": [1, "two"], "BOOLEAN": True, "NULL": None}


def _field(row: str) -> str:
    return "f_" + row.lower()


def _props(env: MongoEnv, root: Path, fmt: str, mode: str, name: str) -> dict[str, Any]:
    return {"headwater.event.format": "datastream", "headwater.datastream.stream.name": STREAM,
            "headwater.destination": "files", "headwater.destination.files.dir": str(root),
            "headwater.destination.files.format": fmt,
            "headwater.destination.files.max.ms": 200,
            "headwater.datastream.mongodb.json.mode": mode,
            "offset.storage.file.filename": str(env.tmp / f"offsets-{name}.json"),
            "collection.include.list": f"{env.db_name}\\.(types|nan)"}


def _events(root: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted(root.rglob("*")) if root.exists() else []:
        if not path.is_file() or ".inflight" in path.parts or path.name.startswith("."):
            continue
        if path.suffix == ".avro":
            with path.open("rb") as fh:
                out.extend(reader(fh))  # type: ignore[arg-type]
        elif path.suffix == ".jsonl":
            out.extend(orjson.loads(line) for line in path.read_bytes().splitlines() if line)
    return out


def _avro_schema(root: Path) -> dict[str, Any]:
    path = next(p for p in sorted(root.rglob("*.avro")) if ".inflight" not in p.parts)
    with path.open("rb") as fh:
        schema: dict[str, Any] = reader(fh).writer_schema  # type: ignore[assignment]
    return schema


def _capture(env: MongoEnv, props: dict[str, Any], root: Path, count: int) -> None:
    cap = env.capture(props)
    try:
        wait(lambda: len(_events(root)) >= count, "the backfill's files", 60, cap)
    finally:
        cap.stop()


def _document(event: dict[str, Any]) -> dict[str, Any]:
    payload = event["payload"]["payload"]
    doc: dict[str, Any] = json.loads(payload) if isinstance(payload, str) else payload
    return doc


def test_every_bson_type_of_googles_mongodb_table(env: MongoEnv) -> None:
    strict_examples, canonical_examples = ref.mongodb_examples()
    rows = {ALIASES.get(name, name) for name in strict_examples}
    assert rows == set(VALUES), "a reference row without a field here, or the reverse"
    assert set(canonical_examples) <= rows
    env.db.types.insert_one({"_id": OID, **{_field(r): v for r, (v, _) in VALUES.items()}})
    env.db.nan.insert_one({"_id": 1, _field("DOUBLE"): math.nan})  # canonical mode keeps NaN

    canonical_root, strict_root = env.tmp / "canonical", env.tmp / "strict"
    _capture(env, _props(env, canonical_root, "json", "canonical", "canonical"),
             canonical_root, 2)
    env.db.nan.drop()  # strict JSON cannot write NaN (the codec's unit test covers the error)
    _capture(env, _props(env, strict_root, "avro", "strict", "strict"), strict_root, 1)

    canonical = {e["source_metadata"]["collection"]: e for e in _events(canonical_root)}
    (strict_event,) = _events(strict_root)
    strict_doc = _document(strict_event)
    canonical_doc = _document(canonical["types"])
    payload = next(f for f in _avro_schema(strict_root)["fields"]
                   if f["name"] == "payload")["type"]
    avro_fields = {f["sourceName"]: f for f in payload["fields"]}
    (collection,) = discover_mongodb(env.client, 3, env.db_name, "types")["mongodbCluster"][
        "databases"][0]["collections"]
    discovered_columns = {c["column"]: c["unifiedType"] for c in collection["columns"]}
    discovered_fields = {f["field"]: f["dataTypes"] for f in collection["fields"]}
    forms = ref.unified_forms()

    differences: list[str] = []
    for name, example in sorted(strict_examples.items()):
        row = ALIASES.get(name, name)
        field = _field(row)
        found = ref.compare(avro_fields["payload"]["unifiedType"], avro_fields["payload"]["type"],
                            canonical["types"]["payload"]["payload"],
                            discovered_columns["payload"], "JSON", None, forms)
        if discovered_fields.get(field) != [row]:
            found.append(f"discover samples {field} as {discovered_fields.get(field)}")
        want = PLAIN[row] if example is None else example
        if not ref.matches_example(strict_doc[field], want):
            found.append(f"strict {strict_doc[field]!r}, the page shows {want!r}")
        if row in canonical_examples and not ref.matches_example(
                canonical_doc[field] if row != "DOUBLE" else _document(canonical["nan"])[field],
                canonical_examples[row]):
            found.append(f"canonical differs from the page's example {canonical_examples[row]}")
        if canonical_doc[field] != VALUES[row][1]:
            found.append(f"canonical {canonical_doc[field]!r}, the spec's {VALUES[row][1]!r}")
        print(f"{name}: strict {json.dumps(strict_doc[field])}, canonical "
              f"{json.dumps(canonical_doc[field])} ({'differs' if found else 'agrees'})")
        differences += [f"{name}: {d}" for d in found]
    # the key column: the document's _id as Extended JSON text, unified STRING
    assert avro_fields["_id"]["unifiedType"] == discovered_columns["_id"] == "STRING"
    assert json.loads(strict_event["payload"]["_id"]) == {"$oid": str(OID)}
    assert differences == [], "\n".join(differences)


def test_strict_mode_stops_on_nan_naming_the_document(env: MongoEnv) -> None:
    """Datastream's strict mode drops a document holding NaN; Headwater stops with an error
    naming the collection and the document, and publishes no file holding it."""
    env.db.nan.insert_one({"_id": 7, "x": [math.inf]})
    root = env.tmp / "strict"
    cap = env.capture(_props(env, root, "json", "strict", "strict"))
    try:
        wait(lambda: cap.error is not None, "the capture's error", 60)
    finally:
        with contextlib.suppress(Exception):  # stop re-raises the error asserted below
            cap.stop()
    assert "nan: a document holds NaN or an infinity" in str(cap.error)
    assert '"$numberInt": "7"' in str(cap.error)
    assert _events(root) == []
