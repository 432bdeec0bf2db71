"""The compiled Kafka range reader's set-up (`headwater.kafka.columns`): librdkafka found where
confluent-kafka loaded it, and, where it is not found, a WARNING and no reader (the callers
read with confluent-kafka then), never a silent change."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.kafka import columns

pytest.importorskip("confluent_kafka")


@pytest.fixture
def fresh() -> Iterator[None]:
    columns._module.cache_clear()
    yield
    columns._module.cache_clear()


def test_librdkafka_is_the_one_confluent_kafka_loaded(fresh: None) -> None:
    import confluent_kafka

    path = columns.librdkafka_path()
    assert path is not None and Path(path).is_file() and "librdkafka" in Path(path).name
    assert columns.available()
    with open("/proc/self/maps") as maps:  # (mapped once: the same library as confluent-kafka's)
        mapped = {line.split()[-1] for line in maps if "librdkafka" in line}
    assert mapped == {path}
    assert confluent_kafka.libversion()[0]


def test_no_librdkafka_is_said_and_nothing_is_read(fresh: None, monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(columns, "librdkafka_path", lambda: None)
    with caplog.at_level(logging.WARNING, "headwater.kafka.columns"):
        assert not columns.available()
    assert "librdkafka's shared library was not found" in caplog.text
    with pytest.raises(RuntimeError, match="not available"):
        columns.RangeRead({"bootstrap.servers": "127.0.0.1:1"}, "t", 0, 0, 10)


def test_settings_that_are_not_strings_are_refused(fresh: None) -> None:
    settings: dict[str, Any] = {"bootstrap.servers": "127.0.0.1:1", "error_cb": print}
    with pytest.raises(ValueError, match="error_cb"):
        columns.RangeRead(settings, "t", 0, 0, 1)
