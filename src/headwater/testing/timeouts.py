"""One setting for every wait of the tests: `HEADWATER_TEST_TIMEOUT_SCALE` multiplies the
tests' waits (`wait_for`, the hand-written deadlines) and pytest-timeout's limits, so that a
slower or busier machine than the ones the limits were measured on can run the suite without
editing numbers in a hundred places.  The default is 1: the limits as written."""

from __future__ import annotations

import math
import os

ENV = "HEADWATER_TEST_TIMEOUT_SCALE"


def timeout_scale() -> float:
    """The factor from the environment; a value that is not a positive number stops the test
    naming the variable and the value, rather than waiting forever or not at all."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return 1.0
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{ENV}={text!r}: expected a positive number (1 = the limits as written)")
    return value


def scaled(seconds: float) -> float:
    """`seconds` times the scale."""
    return seconds * timeout_scale()
