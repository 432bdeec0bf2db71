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
    return out


def router(svc: Service) -> APIRouter:
    r = APIRouter(tags=["metrics"])

    @r.get("/metrics", response_class=PlainTextResponse,
           responses={200: {"content": {CONTENT_TYPE: {}}}})
    def metrics() -> PlainTextResponse:
        """Prometheus text format: `debezium_metrics_<Name>{context,name,plugin}` per
        connector (as Debezium's JMX exporter example names them) and `headwater_*`."""
        return PlainTextResponse(collect(svc).render(), media_type=CONTENT_TYPE)

    return r
