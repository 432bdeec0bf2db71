"""`/metrics`: Prometheus scrape of every connector's Debezium metrics and the service's own.

Why read the store: each worker writes its metrics (all three Debezium contexts) into the
catalog once a second with its heartbeat (`server/worker.py`), so a scrape costs one SQLite
read and never waits on a busy worker.  A connector's metrics are exported only while its
worker runs, as Debezium's MBeans exist only while its task runs: a stopped connector's last
numbers would otherwise look current for ever.
"""

from __future__ import annotations

import time
from typing import Any, get_args

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse

from headwater.ops.prometheus import Exposition
from headwater.server import views
from headwater.server.models import StateName
from headwater.server.service import Service
from headwater.streams.states import State

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def collect(svc: Service) -> Exposition:
    """The exposition of one scrape."""
    out = Exposition()
    now = int(time.time() * 1000)
    by_state: dict[str, int] = dict.fromkeys(get_args(StateName), 0)
    by_state.pop("RESTARTING", None)
    for row in svc.store.all():
        running = svc.manager.running(row.name)
        state = views.state_of(row, running)
        by_state[state] = by_state.get(state, 0) + 1
        out.add("headwater_connector_state", {"connector": row.name, "state": state}, 1,
                help_text="1 for the connector's Kafka Connect state")
        doc: dict[str, Any] = row.status or {}
        if not running or not isinstance(doc.get("contexts"), dict):
            continue
        if row.heartbeat_ms is not None:
            out.add("headwater_connector_heartbeat_age_seconds", {"connector": row.name},
                    max(0, now - row.heartbeat_ms) / 1000,
                    help_text="seconds since the worker last reported its metrics")
        plugin = str(doc.get("plugin") or "unknown")
        server = str(doc.get("server_name") or row.name)
        for context, attributes in doc["contexts"].items():
            if isinstance(attributes, dict):
                out.add_debezium(attributes, {"context": str(context), "name": server,
                                              "plugin": plugin})
    for shown, n in by_state.items():
        out.add("headwater_connectors", {"state": shown}, n,
                help_text="connectors of this service by state")
    streams: dict[str, int] = {s.value: 0 for s in State}
    for rec in svc.catalog.streams():
        streams[rec.state.value] = streams.get(rec.state.value, 0) + 1
    for stream_state, n in streams.items():
        out.add("headwater_streams", {"state": stream_state}, n,
                help_text="streams of this service's catalog by state")
    add_pipelines(svc, out)
    return out


def add_pipelines(svc: Service, out: Exposition) -> None:
    """`headwater_pipeline_<name>{pipeline}` from each pipeline's status file as its worker
    last reported it.  Unlike a connector's, the numbers stay exported while the pipeline is
    stopped: they are counts of what is in its tables (kept across restarts), not of a run."""
    from headwater.pipeline.status import freshness_s

    now = int(time.time() * 1000)
    for row in svc.pipelines.all():
        state = views.state_of(row, svc.pipeline_manager.running(row.name))
        labels = {"pipeline": row.name}
        out.add("headwater_pipeline_state", {**labels, "state": state}, 1,
                help_text="1 for the pipeline's state")
        doc: dict[str, Any] = row.status or {}
        if "batches" not in doc:
            continue
        for key, (name, kind, help_text) in _PIPELINE_NUMBERS.items():
            value = doc.get(key)
            if isinstance(value, int | float):
                out.add(name, labels, value, help_text=help_text, kind=kind)
        for table, n in sorted((doc.get("rows_by_table") or {}).items()):
            out.add("headwater_pipeline_rows_applied_total", {**labels, "table": str(table)},
                    n, help_text="changes applied to each target table", kind="counter")
        for topic, n in sorted((doc.get("lag") or {}).items()):
            out.add("headwater_pipeline_lag_records", {**labels, "topic": str(topic)}, n,
                    help_text="records of the topic not yet read by the pipeline")
        fresh = freshness_s(doc, now)
        if fresh is not None:
            out.add("headwater_pipeline_freshness_seconds", labels, fresh,
                    help_text="now minus the newest source ts_ms applied")
        if isinstance(doc.get("updated_ms"), int):
            out.add("headwater_pipeline_status_age_seconds", labels,
                    max(0, now - doc["updated_ms"]) / 1000,
                    help_text="seconds since the pipeline last wrote its status")


_PIPELINE_NUMBERS = {
    "batches": ("headwater_pipeline_batches_total", "counter", "micro-batches committed"),
    "changes_applied": ("headwater_pipeline_changes_applied_total", "counter",
                        "change events applied to the targets"),
    "last_batch_duration_s": ("headwater_pipeline_last_batch_duration_seconds", "gauge",
                              "seconds the last micro-batch took"),
}


def router(svc: Service) -> APIRouter:
    r = APIRouter(tags=["metrics"])

    @r.get("/metrics", response_class=PlainTextResponse,
           responses={200: {"content": {CONTENT_TYPE: {}}}})
    def metrics() -> PlainTextResponse:
        """Prometheus text format: `debezium_metrics_<Name>{context,name,plugin}` per
        connector (as Debezium's JMX exporter example names them) and `headwater_*`."""
        return PlainTextResponse(collect(svc).render(), media_type=CONTENT_TYPE)

    return r
