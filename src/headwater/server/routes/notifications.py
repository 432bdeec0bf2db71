"""`GET /connectors/{name}/notifications`: the connector's recent snapshot notifications.

Debezium's JMX notification channel keeps the notifications in a bean attribute; Headwater
has no JMX, so the `jmx`/`rest` channel keeps the last ones in the worker, which reports them
with its heartbeat (`server/worker.py`), and this route serves them in Debezium's JSON
(`{id, aggregateType, type, additionalData, timestamp}`).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from headwater.server.errors import ApiError, responses
from headwater.server.service import Service
from headwater.server.store import StoreError


def router(svc: Service) -> APIRouter:
    r = APIRouter(prefix="/connectors", tags=["connectors"])

    @r.get("/{name}/notifications", responses=responses(404))
    def notifications(name: str) -> dict[str, list[dict[str, Any]]]:
        """Newest last; empty unless `notification.enabled.channels` includes jmx or rest."""
        try:
            row = svc.store.get(name)
        except StoreError as exc:
            raise ApiError(404, str(exc)) from None
        found = (row.status or {}).get("notifications") or []
        return {"notifications": [n for n in found if isinstance(n, dict)]}

    return r
