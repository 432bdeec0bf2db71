"""A connector's metrics as JSON and its signals: what the console (and scripts) use.

`GET /connectors/{name}/metrics` is the worker's last report: Debezium's three contexts with
their attribute names, the plugin, the row estimates of a running snapshot.
`POST /connectors/{name}/signals` appends a Debezium signal (`{"type", "data"}`, e.g.
execute-snapshot) to the connector's file signal channel; the source channel (a signal table)
is written by the database's own clients, so a connector without the file channel answers 409.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Body, Response

from headwater.server.connectors import connector_dir, effective
from headwater.server.errors import ApiError, responses
from headwater.server.service import Service
from headwater.server.store import ConnectorRow, StoreError


def _row(svc: Service, name: str) -> ConnectorRow:
    try:
        return svc.store.get(name)
    except StoreError as exc:
        raise ApiError(404, str(exc)) from None


def signal_file(svc: Service, row: ConnectorRow) -> Path | None:
    """The connector's signal file when its file channel is enabled."""
    props = effective(svc.data_dir, row.name, row.config)
    channels = [c.strip().lower() for c in props.get("signal.enabled.channels", "").split(",")]
    if "file" not in channels:
        return None
    path = Path(props.get("signal.file") or "file-signals.txt")
    return path if path.is_absolute() else connector_dir(svc.data_dir, row.name) / path


def router(svc: Service) -> APIRouter:
    r = APIRouter(prefix="/connectors", tags=["connectors"])

    @r.get("/{name}/metrics", responses=responses(404))
    def metrics(name: str) -> dict[str, Any]:
        doc = dict(_row(svc, name).status or {})
        doc.pop("notifications", None)
        return doc

    @r.post("/{name}/signals", status_code=202, responses=responses(400, 404, 409))
    def signal(name: str, body: Annotated[dict[str, Any], Body()]) -> Response:
        row = _row(svc, name)
        kind = body.get("type")
        if not isinstance(kind, str) or not kind:
            raise ApiError(400, "a signal needs a 'type' (e.g. execute-snapshot)")
        path = signal_file(svc, row)
        if path is None:
            raise ApiError(409, f"connector {name} has no file signal channel: add file to "
                                "signal.enabled.channels (or insert the signal into its "
                                "signal.data.collection table)")
        line = {"id": str(body.get("id") or uuid.uuid4()), "type": kind,
                "data": body.get("data") or {}}
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab") as f:
            f.write(orjson.dumps(line) + b"\n")
        return Response(status_code=202)

    return r
