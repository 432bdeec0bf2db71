"""`/admin/loggers`: Kafka Connect's API to read and change logger levels while running.

PUT applies at once in the service, and is stored (service meta `log_levels`) so each worker
applies it on its next heartbeat, and a worker started later applies it at start: the levels
hold for the whole service until it stops (as in Kafka Connect, they are not persisted across
restarts: the meta is cleared at start).
"""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Body, Query, Response

from headwater.ops import loglevels
from headwater.server.errors import ApiError, responses
from headwater.server.service import Service

META_KEY = "log_levels"


def wanted(svc: Service) -> list[tuple[str, str]]:
    raw = svc.store.meta(META_KEY)
    return [(str(n), str(v)) for n, v in orjson.loads(raw)] if raw else []


def router(svc: Service) -> APIRouter:
    r = APIRouter(prefix="/admin/loggers", tags=["admin"])
    svc.store.set_meta(META_KEY, "[]")

    @r.get("")
    def all_loggers() -> dict[str, dict[str, Any]]:
        return loglevels.levels()

    @r.get("/{logger}", responses=responses(404))
    def one(logger: str) -> dict[str, Any]:
        found = loglevels.level_of(logger)
        if found is None:
            raise ApiError(404, f"Logger {logger} not found.")
        return found

    @r.put("/{logger}", responses=responses(400))
    def put(logger: str, body: Annotated[dict[str, Any], Body()],
            scope: Annotated[str | None, Query()] = None) -> Any:
        level = body.get("level")
        if not isinstance(level, str):
            raise ApiError(400, "The request body must contain a 'level' field")
        try:
            changed = loglevels.set_level(logger, level)
        except ValueError as exc:
            raise ApiError(400, str(exc)) from None
        svc.store.set_meta(META_KEY, orjson.dumps([*wanted(svc), (logger, level)]).decode())
        if scope is not None and scope.lower() == "cluster":
            return Response(status_code=204)
        return changed

    return r
