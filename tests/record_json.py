"""The JSON document in a record's key, value or header bytes, for tests that expect one there."""

from __future__ import annotations

from typing import Any

import orjson


def json_of(data: bytes | None) -> Any:
    """`data` parsed as JSON; fails the test (rather than passing None to the parser) when the
    key, value or header is null, e.g. a tombstone where an event was expected."""
    assert data is not None, "expected JSON bytes, found a null (tombstone / absent header)"
    return orjson.loads(data)
