"""Debezium's EnforceRecordSize: the cases of Debezium 3.x's
`debezium-connect-plugins/src/test/java/io/debezium/transforms/EnforceRecordSizeTest.java`
(each test names the Java test it follows; those records have empty source partition and
offset maps, as Headwater's estimate assumes).  Where the Java test asserts only "smaller than
max.bytes", the exact lengths here are worked out from Debezium's algorithm."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.connect.props import PluginConfigError
from headwater.connect.record import ConnectRecord
from headwater.model.schema import BYTES, INT32, STRING, ConnectSchema
from headwater.transforms.chain import build_chain
from headwater.transforms.enforce_record_size import record_size

from .smt_envelopes import struct

CLS = "io.debezium.transforms.EnforceRecordSize"
SOURCE = struct(None, ("db", ConnectSchema(STRING, optional=False)), optional=False)
OPT_STRING = ConnectSchema(STRING)


def record(row_schema: ConnectSchema, after: dict[str, Any],
           before: dict[str, Any] | None = None) -> ConnectRecord:
    env = struct(None, ("before", row_schema), ("after", row_schema),
                 ("op", ConnectSchema(STRING, optional=False)), ("source", SOURCE),
                 optional=False)
    value = {"before": before, "after": after, "op": "u" if before else "c",
             "source": {"db": "test"}}
    return ConnectRecord("topic", 0, None, None, env, value, 0)


def text_record(text: str) -> ConnectRecord:
    return record(struct(None, ("text_col", OPT_STRING), optional=False), {"text_col": text})


def apply(props: dict[str, str], rec: ConnectRecord) -> ConnectRecord:
    chain = build_chain({"transforms": "e", "transforms.e.type": CLS,
                         **{f"transforms.e.{k}": v for k, v in props.items()}})
    out = chain.apply(rec)
    assert out is not None
    return out


def test_under_the_limit_unchanged() -> None:
    """shouldNotTruncateWhenMessageSizeUnderLimit."""
    rec = text_record("short")
    assert apply({"max.bytes": "10000"}, rec) is rec


def test_string_truncated_to_fit() -> None:
    """shouldTruncateStringColumnWhenMessageExceedsLimit: 5402 estimated bytes, 4802 over."""
    rec = text_record("a" * 5000)
    assert record_size(rec) == 5402
    out = apply({"max.bytes": "600", "min.field.size": "0"}, rec)
    assert out.value["after"]["text_col"] == "a" * 198
    assert record_size(out) == 600
    assert rec.value["after"]["text_col"] == "a" * 5000  # the input is not changed


def test_bytes_truncated_to_fit() -> None:
    """shouldTruncateBytesColumnWhenMessageExceedsLimit (24 bytes of overhead, not 56)."""
    rec = record(struct(None, ("blob_col", ConnectSchema(BYTES)), optional=False),
                 {"blob_col": bytes(5000)})
    out = apply({"max.bytes": "600", "min.field.size": "0"}, rec)
    assert out.value["after"]["blob_col"] == bytes(230)
    assert record_size(out) == 600


def test_proportional_truncation() -> None:
    """shouldTruncateProportionally: 2000 and 4000 characters share the excess 1:2."""
    schema = struct(None, ("small_col", OPT_STRING), ("large_col", OPT_STRING), optional=False)
    rec = record(schema, {"small_col": "a" * 2000, "large_col": "b" * 4000})
    out = apply({"max.bytes": "600", "min.field.size": "0"}, rec)
    small, large = out.value["after"]["small_col"], out.value["after"]["large_col"]
    # 6466 estimated, 5866 over: ceil(2000/6000*5866)=1956 and ceil(4000/6000*5866)=3911 cut.
    assert (len(small), len(large)) == (44, 89)
    assert record_size(out) <= 600


def test_non_string_columns_and_nulls_stay() -> None:
    """shouldNotTruncateNonStringColumns / shouldHandleNullValues."""
    schema = struct(None, ("int_col", ConnectSchema(INT32)), ("text_col", OPT_STRING),
                    optional=False)
    out = apply({"max.bytes": "600", "min.field.size": "0"},
                record(schema, {"int_col": 42, "text_col": "x" * 5000}))
    assert out.value["after"]["int_col"] == 42 and len(out.value["after"]["text_col"]) < 5000
    assert record_size(out) <= 600
    rec = record(schema, {"int_col": 1, "text_col": None})
    assert apply({"max.bytes": "100"}, rec).value["after"] == {"int_col": 1, "text_col": None}


def test_update_events_share_the_excess() -> None:
    """shouldNotOverTruncateUpdateEvents: both sides cut, the result between 70% and 100%."""
    schema = struct(None, ("text_col", OPT_STRING), optional=False)
    out = apply({"max.bytes": "2000", "min.field.size": "0"},
                record(schema, {"text_col": "y" * 5000}, {"text_col": "x" * 5000}))
    assert len(out.value["before"]["text_col"]) < 5000
    assert len(out.value["after"]["text_col"]) < 5000
    assert 1400 < record_size(out) <= 2000


def test_non_struct_values_pass() -> None:
    """shouldPassThroughNonStructRecords."""
    rec = ConnectRecord("topic", 0, None, None, ConnectSchema(STRING), "plaintext", 0)
    assert apply({"max.bytes": "200"}, rec) is rec


def test_compression_ratio() -> None:
    """shouldApplyCompressionRatioReducesEffectiveSize / ...IncreasesEffectiveSize."""
    rec = text_record("a" * 1000)
    assert apply({"max.bytes": "600", "compression.ratio": "0.1"}, rec) is rec
    out = apply({"max.bytes": "5000", "compression.ratio": "2.0", "min.field.size": "0"},
                text_record("a" * 30000))
    assert len(out.value["after"]["text_col"]) < 30000
    assert record_size(out) * 2 <= 5000


def test_multibyte_characters() -> None:
    """shouldHandleMultiByteCharacters: sizes count UTF-8 bytes, cuts count characters."""
    out = apply({"max.bytes": "600", "min.field.size": "0"}, text_record("中" * 5000))
    assert len(out.value["after"]["text_col"]) < 5000
    assert record_size(out) <= 600


def test_min_field_size() -> None:
    """shouldNotTruncateFieldsBelowMinFieldSize / shouldOnlyTruncateFieldsAboveMinFieldSize."""
    schema = struct(None, *((f"small_{i}", OPT_STRING) for i in range(1, 10)),
                    ("large", OPT_STRING), optional=False)
    row = {**{f"small_{i}": "x" * 10 for i in range(1, 10)}, "large": "y" * 5000}
    after = apply({"max.bytes": "2000", "min.field.size": "20"}, record(schema, row)).value[
        "after"]
    assert all(after[f"small_{i}"] == "x" * 10 for i in range(1, 10))
    assert len(after["large"]) < 5000
    schema = struct(None, ("small_field", OPT_STRING), ("large_field", OPT_STRING),
                    optional=False)
    after = apply({"max.bytes": "500", "min.field.size": "50"},
                  record(schema, {"small_field": "a" * 30, "large_field": "b" * 2000})).value[
        "after"]
    assert after["small_field"] == "a" * 30 and len(after["large_field"]) < 2000


@pytest.mark.parametrize(("props", "message"), [
    ({}, "transforms.e.max.bytes: missing"),
    ({"max.bytes": "0"}, "transforms.e.max.bytes: '0' must be a positive integer"),
    ({"max.bytes": "-1"}, "transforms.e.max.bytes: '-1' must be a positive integer"),
    ({"max.bytes": "x"}, "transforms.e.max.bytes: 'x' is not an integer"),
    ({"max.bytes": "200", "compression.ratio": "0"},
     "transforms.e.compression.ratio: '0' must be a positive number"),
    ({"max.bytes": "200", "compression.ratio": "half"},
     "transforms.e.compression.ratio: 'half' is not a number"),
    ({"max.bytes": "200", "min.field.size": "-1"},
     "transforms.e.min.field.size: '-1' must be non-negative"),
])
def test_config_errors(props: dict[str, str], message: str) -> None:
    """shouldRejectInvalidMaxMessageSize / shouldRejectNegativeMaxMessageSize /
    shouldRejectInvalidCompressionRatio / shouldRejectNegativeMinFieldSize."""
    with pytest.raises(PluginConfigError) as info:
        build_chain({"transforms": "e", "transforms.e.type": CLS,
                     **{f"transforms.e.{k}": v for k, v in props.items()}})
    assert message in str(info.value)
