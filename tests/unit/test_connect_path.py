"""The structured path (Connect records -> transforms -> converters) against the fast path."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.connect.record import ConnectRecord
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


def test_the_fast_path_builds_no_connect_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path renders bytes straight from change records: a Connect record built on
    it (the structured path's cost per event) would be a regression, whatever the timing."""
    built: list[int] = []
    original = ConnectRecord.__init__

    def counting(self: ConnectRecord, *args: Any, **kwargs: Any) -> None:
        built.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(ConnectRecord, "__init__", counting)
    events = samples()
    rendered = make_format().render_batch(events)
    assert sum(len(v) for v in rendered.values()) >= len(events) and not built
    StructuredRenderer(make_format(), build_chain({}), JsonConverter(True),
                       JsonConverter(True)).render_batch(events)
    assert built  # (the count sees the structured path's records: the check can fail)
