"""Header bytes against Kafka Connect's own converters: every case of
tests/fixtures/connect/HeaderBytes.java is written by Kafka Connect 4.1's SimpleHeaderConverter
(a worker's default `header.converter`) and JsonConverter (schemas enabled) in a JVM, and the
same (schema, value) by Headwater's; the bytes must be equal.  The cases cover what Debezium
puts in headers (strings, key structs) and every value kind `Values.convertToString` knows."""

from __future__ import annotations

import base64
import datetime as dt
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from headwater.connect.logical import DATE, DECIMAL, TIME, TIMESTAMP
from headwater.converters.factory import JSON, SIMPLE_HEADER, build_header_converter
from headwater.jvm import artifacts
from headwater.model.schema import (
    ARRAY,
    BOOLEAN,
    BYTES,
    FLOAT32,
    FLOAT64,
    INT8,
    INT32,
    INT64,
    MAP,
    STRING,
    STRUCT,
    ConnectField,
    ConnectSchema,
)

pytestmark = pytest.mark.integration

PROGRAM = Path(__file__).parent.parent / "fixtures" / "connect" / "HeaderBytes.java"
DOUBLES = [1.0E10, 0.1, 100.0, 1.5E-5, 1234567.0, 12345678.9, -0.0, 0.001, 9999999.0, 1.0E7,
           float("nan"), float("-inf"), 123.456]
# JsonConverter cases compared too (Headwater's JsonConverter writes doubles with Python's
# digits, Jackson `1.0E10`: a value-converter matter outside headers).
JSON_CASES = {"string", "string_escapes", "string_null", "int8", "int32", "int64", "boolean",
              "decimal_0", "decimal_1", "decimal_2", "bytes", "date", "time", "timestamp",
              "timestamp_midnight", "key", "map_int_keys"}


def s(kind: str, optional: bool = False, **kw: Any) -> ConnectSchema:
    return ConnectSchema(kind, optional=optional, **kw)


def decimal(scale: int) -> ConnectSchema:
    return s(BYTES, name=DECIMAL, version=1, parameters={"scale": str(scale)})


def cases() -> dict[str, tuple[ConnectSchema, Any]]:
    out: dict[str, tuple[ConnectSchema, Any]] = {
        "string": (s(STRING), "kb"),
        "string_escapes": (s(STRING), 'a"b\\c\nd é'),
        "string_null": (s(STRING, True), None),
        "int8": (s(INT8), -3),
        "int32": (s(INT32), 5),
        "int64": (s(INT64), -9007199254740993),
        "boolean": (s(BOOLEAN), True),
    }
    out.update({f"float64_{i}": (s(FLOAT64), v) for i, v in enumerate(DOUBLES)})
    out.update({
        "float32_0": (s(FLOAT32), 0.1),
        "float32_1": (s(FLOAT32), 3.4028235E38),
        "float32_2": (s(FLOAT32), 1.0E-5),
        "decimal_0": (decimal(2), Decimal("12.34")),
        "decimal_1": (decimal(8), Decimal("0.00000001")),
        "decimal_2": (decimal(0), Decimal("-123456789012345678901234567890")),
        "bytes": (s(BYTES), b"\x00\x01\x02\xff"),
        "date": (s(INT32, name=DATE, version=1), dt.date(2022, 1, 8)),
        "time": (s(INT32, name=TIME, version=1), dt.time(12, 34, 56, 789000)),
        "timestamp": (s(INT64, name=TIMESTAMP, version=1),
                      dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.UTC)),
        "timestamp_midnight": (s(INT64, name=TIMESTAMP, version=1),
                               dt.datetime(2022, 1, 8, tzinfo=dt.UTC)),
    })
    key = s(STRUCT, name="srv.public.t.Key", fields=(ConnectField("id", s(INT32)),))
    out["key"] = (key, {"id": 2})
    inner = s(STRUCT, name="inner", fields=(
        ConnectField("d", s(INT32, name=DATE, version=1)), ConnectField("f", s(FLOAT64))))
    wide = s(STRUCT, name="srv.public.w.Key", fields=(
        ConnectField("name", s(STRING)),
        ConnectField("note", s(STRING, True)),
        ConnectField("price", decimal(2)),
        ConnectField("raw", s(BYTES)),
        ConnectField("tags", s(ARRAY, items=s(STRING))),
        ConnectField("counts", s(MAP, keys=s(STRING), values=s(INT64))),
        ConnectField("inner", inner),
    ))
    out["wide"] = (wide, {"name": 'O"Brien \\ x', "note": None, "price": Decimal("-0.50"),
                          "raw": b"hi", "tags": ["x", "y,z"], "counts": {"a": 1, 'b"': -2},
                          "inner": {"d": dt.date(2022, 1, 8), "f": 2.5}})
    out["map_int_keys"] = (s(MAP, keys=s(INT32), values=s(STRING, True)), {1: "x", -7: None})
    return out


@pytest.fixture(scope="module")
def connect_bytes() -> dict[str, tuple[bytes | None, bytes | None]]:
    if shutil.which("java") is None:
        pytest.fail("java is needed (OpenJDK 17, scripts/setup.sh)")
    artifacts.fetch("connect")
    done = subprocess.run(
        ["java", "-Duser.timezone=UTC", "-cp", artifacts.classpath("connect"), str(PROGRAM)],
        capture_output=True, text=True, timeout=300, check=True)
    out: dict[str, tuple[bytes | None, bytes | None]] = {}
    for line in done.stdout.splitlines():
        name, simple, json = line.split("\t")
        out[name] = tuple(  # type: ignore[assignment]
            None if v == "-" else base64.b64decode(v) for v in (simple, json))
    return out


def test_simple_header_converter_bytes_equal_kafka_connects(
        connect_bytes: dict[str, tuple[bytes | None, bytes | None]]) -> None:
    ours = build_header_converter(SIMPLE_HEADER, {})
    all_cases = cases()
    assert set(connect_bytes) == set(all_cases)
    got = {name: ours.from_connect("t", schema, value)
           for name, (schema, value) in all_cases.items()}
    assert got == {name: pair[0] for name, pair in connect_bytes.items()}
    assert got["key"] == b'{"id":2}' and got["string"] == b"kb"


def test_json_header_converter_bytes_equal_kafka_connects(
        connect_bytes: dict[str, tuple[bytes | None, bytes | None]]) -> None:
    ours = build_header_converter(JSON, {"header.converter.schemas.enable": "true"})
    all_cases = cases()
    got = {name: ours.from_connect("t", *all_cases[name]) for name in JSON_CASES}
    assert got == {name: connect_bytes[name][1] for name in JSON_CASES}
