"""The structured path (Connect records -> transforms -> converters) against the fast path."""

from __future__ import annotations

import time

import pytest

from headwater.converters.json import JsonConverter
from headwater.formats.structured import StructuredRenderer
from headwater.transforms.chain import build_chain

from .connect_samples import debezium_format as make_format
from .connect_samples import samples


@pytest.mark.parametrize("key_schemas", [True, False])
@pytest.mark.parametrize("value_schemas", [True, False])
@pytest.mark.parametrize("tombstones", [True, False])
def test_structured_json_output_is_byte_identical_to_the_fast_path(
        key_schemas: bool, value_schemas: bool, tombstones: bool) -> None:
    kw = {"key_schemas": key_schemas, "value_schemas": value_schemas,
          "tombstones_on_delete": tombstones}
    fast = make_format(**kw).render_batch(samples())
    fmt = make_format(**kw)
    structured = StructuredRenderer(fmt, build_chain({}), JsonConverter(key_schemas),
                                    JsonConverter(value_schemas)).render_batch(samples())
    assert list(structured) == list(fast)
    for topic in fast:
        assert structured[topic] == fast[topic], topic
    assert sum(len(v) for v in fast.values()) >= 14


def test_structured_renderer_pickles() -> None:
    import pickle

    fmt = make_format()
    renderer = StructuredRenderer(fmt, build_chain({
        "transforms": "unwrap",
        "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState"}),
        JsonConverter(True), JsonConverter(True))
    again = pickle.loads(pickle.dumps(renderer))
    assert again.render_batch(samples()) == renderer.render_batch(samples())


def test_fast_path_timing_is_unchanged_by_the_structured_path() -> None:
    """The fast path does not go through Connect records: rendering stays several times
    faster than the structured path (a coarse guard, robust to a loaded machine)."""
    events = samples()[:3] * 2000
    fmt = make_format()
    fmt.render_batch(events)
    start = time.perf_counter()
    fmt.render_batch(events)
    fast = time.perf_counter() - start
    renderer = StructuredRenderer(make_format(), build_chain({}), JsonConverter(True),
                                  JsonConverter(True))
    renderer.render_batch(events)
    start = time.perf_counter()
    renderer.render_batch(events)
    slow = time.perf_counter() - start
    assert fast < slow
