"""Property-based: schemathesis drives every operation of the served /openapi.json with
generated requests; none may be answered with a server error (5xx).

The operations are driven one by one with hypothesis (not schemathesis' pytest plugin,
whose fixture support does not follow the pytest this suite runs on)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Err, Ok

from .conftest import Served


def test_no_server_errors(tmp_path: Path) -> None:
    served = Served(tmp_path / "data").start()
    failures: list[str] = []
    try:
        schema = schemathesis.openapi.from_url(f"{served.url}/openapi.json")
        results = list(schema.get_all_operations())
        invalid = [result.err() for result in results if isinstance(result, Err)]
        assert not invalid, invalid  # (an operation the schema itself makes invalid)
        operations = [result.ok() for result in results if isinstance(result, Ok)]
        assert len(operations) > 30

        for op in operations:
            @given(case=op.as_strategy())
            @settings(max_examples=6, deadline=None, database=None,
                      suppress_health_check=list(HealthCheck))
            def check(case: Any) -> None:
                case.call_and_validate(checks=[not_a_server_error], timeout=120)

            try:
                check()
            except Exception as exc:
                failures.append(f"{op.label}: {exc}")
    finally:
        served.close()
    assert not failures, "\n\n".join(failures)
