"""The exposition names Debezium's attributes as its JMX exporter example does, keeps
numbers and booleans only, and escapes label values."""

from __future__ import annotations

from headwater.ops.prometheus import Exposition, parse


def test_debezium_attributes_become_labelled_gauges() -> None:
    e = Exposition()
    labels = {"context": "streaming", "name": 'a"b', "plugin": "postgres"}
    e.add_debezium({"Connected": True, "QueueRemainingCapacity": 10, "LastEvent": "x",
                    "RowsScanned": {"public.t": 3}, "LastTransactionId": None}, labels)
    text = e.render()
    assert text.count("# TYPE debezium_metrics_Connected gauge") == 1
    assert "LastEvent" not in text and "LastTransactionId" not in text
    got = parse(text)
    key = frozenset(labels.items())
    assert got[("debezium_metrics_Connected", key)] == 1
    assert got[("debezium_metrics_QueueRemainingCapacity", key)] == 10
    assert got[("debezium_metrics_RowsScanned", key | {("table", "public.t")})] == 3
    assert 'name="a\\"b"' in text


def test_grafana_dashboard_queries_exported_metrics() -> None:
    """Every metric the dashboard queries is one `/metrics` exports."""
    import json
    import re
    from pathlib import Path

    from headwater.engine.metrics import CaptureMetrics, SchemaHistoryMetrics

    doc = json.loads((Path(__file__).resolve().parents[2] / "docs/grafana/headwater.json")
                     .read_text())
    names = set()
    for p in doc["panels"]:
        for t in p["targets"]:
            names.update(re.findall(r"debezium_metrics_(\w+)", t["expr"]))
    m = CaptureMetrics(schema_history=SchemaHistoryMetrics())
    exported = {k for ctx in m.contexts().values() for k in ctx}
    assert names and names <= exported
