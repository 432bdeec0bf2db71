"""Documents/s of Headwater's MongoDB JSON encoder for a typical 10-field document.

    PYTHONPATH=src python bench/mongodb_extended_json.py

Compares the raw-BSON walker (`document_json` of a RawBSONDocument, what the runtime gets from
a RawBSONDocument change stream), the decoded path (`bson.decode` + `document_json`) and
pymongo's `bson.json_util.dumps` of the decoded document (a different dialect, for scale).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import bson
from bson import Decimal128, ObjectId
from bson.datetime_ms import DatetimeMS
from bson.json_util import dumps
from bson.raw_bson import RawBSONDocument

from headwater.connectors.mongodb.extended_json import document_json, id_json_raw

DOC = {"_id": ObjectId("65a1b2c3d4e5f60718293a4b"), "name": "Ada Lovelace",
       "email": "ada@example.com", "age": 36, "score": 98.5, "active": True,
       "created": DatetimeMS(1700000000123), "tags": ["math", "poetry"],
       "address": {"city": "London", "zip": "W1"}, "balance": Decimal128("1234.56")}


def rate(fn: Callable[[], object], seconds: float = 1.5) -> float:
    n, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(1000):
            fn()
        n += 1000
    return n / elapsed


def main() -> None:
    raw = bson.encode(DOC)
    rawdoc = RawBSONDocument(raw)
    decoded = bson.decode(raw)
    results = {
        "raw walker (document_json of RawBSONDocument)": rate(lambda: document_json(rawdoc)),
        "raw walker + key id (id_json_raw)": rate(lambda: (document_json(rawdoc),
                                                            id_json_raw(raw))),
        "decoded (bson.decode + document_json)": rate(lambda: document_json(bson.decode(raw))),
        "document_json of an already decoded dict": rate(lambda: document_json(decoded)),
        "bson.json_util.dumps of a decoded dict": rate(lambda: dumps(decoded)),
        "bson.decode alone": rate(lambda: bson.decode(raw)),
    }
    for name, value in results.items():
        print(f"{value:>10,.0f} docs/s  {name}")


if __name__ == "__main__":
    main()
