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


def test_double_fast_path_agrees_with_the_full_algorithm() -> None:
    """java_double prints repr() in [1e-3, 1e7); the digit algorithm must agree there."""
    import random

    from headwater.connectors.mongodb import _jdouble

    def full(x: float) -> str:
        sign = "-" if x < 0 else ""
        digits, exp = _jdouble._digits(abs(x))
        if len(digits) == 1:
            digits, exp = _jdouble._two_digits(abs(x))
        if exp >= 0:
            return f"{sign}{digits[:exp + 1].ljust(exp + 1, '0')}.{digits[exp + 1:] or '0'}"
        return f"{sign}0.{'0' * (-exp - 1)}{digits}"

    rng = random.Random(7)
    values = [1e-3, 0.0010000000000000002, 0.5, 2.0, 100.0, 9999999.0, 9999999.999999998]
    values += [10 ** rng.uniform(-3, 7) * rng.choice((1, -1)) for _ in range(20_000)]
    values += [round(rng.uniform(0.001, 1e7), rng.randint(0, 6)) for _ in range(20_000)]
    for x in values:
        if 1e-3 <= abs(x) < 1e7:
            assert _jdouble.java_double(x) == full(x), x
