"""`source_fields`: a connector's own source fields from Debezium's field list."""

from __future__ import annotations

import pytest

from headwater.model.schema import INT32, STRING, ConnectField, ConnectSchema
from headwater.model.source_block import source_fields


def test_names_types_and_optional_marks() -> None:
    assert source_fields("table: string?, row: int32") == (
        ConnectField("table", ConnectSchema(STRING, optional=True)),
        ConnectField("row", ConnectSchema(INT32, optional=False)),
    )


@pytest.mark.parametrize("spec", ["table: text", "table string", ": int32", "a b: int32",
                                  "table: string,"])
def test_a_malformed_spec_fails(spec: str) -> None:
    with pytest.raises(ValueError, match="source field"):
        source_fields(spec)
