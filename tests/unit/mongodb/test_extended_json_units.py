"""Cases the captured fixtures cannot produce on MongoDB 6.0, from Debezium's source."""

from __future__ import annotations

from bson import Int64

from headwater.connectors.mongodb._jdouble import java_double
from headwater.connectors.mongodb.extended_json import (
    decimal128_string,
    document_json,
    id_json,
    update_description,
)


def test_update_description_nulls_and_truncated_arrays() -> None:
    """MongoDbCollectionSchema: empty removedFields/truncatedArrays stay null; newSize -> size."""
    assert update_description(None) is None
    assert update_description({"updatedFields": {}, "removedFields": [],
                               "truncatedArrays": []}) == {
        "removedFields": None, "updatedFields": "{}", "truncatedArrays": None}
    assert update_description({"removedFields": ["a"], "truncatedArrays": [
        {"field": "arr", "newSize": 2}]}) == {
        "removedFields": ["a"], "updatedFields": None,
        "truncatedArrays": [{"field": "arr", "size": 2}]}


def test_dialects() -> None:
    doc = {"_id": Int64(1), "f": float("nan"), "l": [1, {"a": Int64(2)}]}
    assert document_json(doc) == (
        '{"_id": {"$numberLong": "1"},"f": NaN,"l": [1,{"a": {"$numberLong": "2"}}]}')
    assert id_json({"a": Int64(2), "n": float("-inf")}) == (
        '{"a": 2,"n": {"$numberDouble": "-Infinity"}}')
    assert update_description({"updatedFields": doc}) == {
        "removedFields": None, "truncatedArrays": None,
        "updatedFields": '{"_id": 1, "f": {"$numberDouble": "NaN"}, "l": [1, {"a": 2}]}'}


def test_java_double_and_decimal128() -> None:
    assert [java_double(x) for x in (1e7, 9999999.0, 1e-3, 9.99e-4, 5e-324, 1e23, -0.0)] == [
        "1.0E+7", "9999999.0", "0.001", "9.99E-4", "4.9E-324", "1.0E+23", "-0.0"]
    nan = bytes(15) + b"\x7c"
    assert decimal128_string(nan) == "NaN"
