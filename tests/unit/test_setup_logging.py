"""The log handler follows `sys.stderr`: commands run in-process (click's test runner swaps and
closes the stream) must not print logging's "--- Logging error ---" into a later command's
output (two MongoDB CLI tests read JSON that began with it)."""

from __future__ import annotations

import io
import logging
import sys

import pytest

from headwater.ops.logging import setup_logging


def test_records_go_to_the_stderr_of_the_moment(monkeypatch: pytest.MonkeyPatch) -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    first, second = io.StringIO(), io.StringIO()
    try:
        monkeypatch.setattr(sys, "stderr", first)
        setup_logging("INFO", "text")
        logging.getLogger("headwater.t").info("one")
        first.close()
        monkeypatch.setattr(sys, "stderr", second)
        logging.getLogger("headwater.t").info("two")
        assert "two (headwater.t)" in second.getvalue()
        assert "Logging error" not in second.getvalue()
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])


def test_an_explicit_stream_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    out = io.StringIO()
    try:
        setup_logging("INFO", "json", stream=out)
        monkeypatch.setattr(sys, "stderr", io.StringIO())
        logging.getLogger("headwater.t").warning("kept")
        assert '"message":"kept"' in out.getvalue()
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
