"""The structured output path: Connect records, through the transform chain, then converters.

Used only when transforms or a converter other than JsonConverter are configured; otherwise
`DebeziumJsonFormat.render_batch` (the fast path) renders directly to JSON bytes.  Headers are
written with the format's `header.converter`, as the fast path writes them.
"""

from __future__ import annotations

from collections.abc import Sequence

from headwater.connect.record import ConnectRecord, Header
from headwater.converters.base import Converter
from headwater.formats.debezium_json import DebeziumJsonFormat
from headwater.model.record import SourceEvent
from headwater.model.topic import TopicBatch, TopicRecord
from headwater.transforms.chain import TransformChain


class StructuredRenderer:
    """A `RecordRenderer` over the format's Connect records; picklable for parallel snapshots."""

    def __init__(self, fmt: DebeziumJsonFormat, chain: TransformChain, key_converter: Converter,
                 value_converter: Converter) -> None:
        self.format = fmt
        self.chain = chain
        self.key_converter = key_converter
        self.value_converter = value_converter
        self.header_converter = fmt.header_converter

    def transformed(self, records: Sequence[SourceEvent]) -> list[ConnectRecord]:
        """The Connect records after the chain (dropped ones left out)."""
        chain = self.chain
        out = []
        for rec in self.format.render_connect(records):
            result = chain.apply(rec) if chain else rec
            if result is not None:
                out.append(result)
        return out

    def render_batch(self, records: Sequence[SourceEvent]) -> TopicBatch:
        out: TopicBatch = {}
        key_conv = self.key_converter.from_connect
        value_conv = self.value_converter.from_connect
        header_conv = self.header_converter.from_connect
        # Headers repeated as the same object (Debezium's context headers) are serialized once.
        header_bytes: dict[int, tuple[Header, bytes | None]] = {}

        def header(topic: str, h: Header) -> tuple[str, bytes | None]:
            cached = header_bytes.get(id(h))
            if cached is None or cached[0] is not h:
                cached = header_bytes[id(h)] = (h, header_conv(topic, h.schema, h.value))
            return h.key, cached[1]

        for r in self.transformed(records):
            headers = tuple(header(r.topic, h) for h in r.headers)
            out.setdefault(r.topic, []).append(TopicRecord(
                key_conv(r.topic, r.key_schema, r.key),
                value_conv(r.topic, r.value_schema, r.value),
                r.timestamp, headers, r.partition))
        return out
