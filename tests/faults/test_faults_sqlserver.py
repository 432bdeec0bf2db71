"""The fault harness's short form on SQL Server's EMULATION (change tables on PostgreSQL, not a live
server: `EmulatedSource` in sources.py): one trial per fault kind (`Source.ci_faults`), in a
file of its own so that it runs beside the other sources' trials (see test_faults.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .harness import Harness
from .test_faults import cases, one_fault

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(("source", "fault", "seed"), cases("sqlserver-emulation"))
def test_one_fault(harness_for: Callable[[str], Harness], source: str, fault: str,
                   seed: int) -> None:
    one_fault(harness_for, source, fault, seed)
