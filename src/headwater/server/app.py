"""The FastAPI application: routers from a registry, Bearer-token authentication, errors in
Kafka Connect's shape, and an OpenAPI document that says what is really answered.

Why a router registry: later additions (Prometheus `/metrics`, a web console, log levels)
register a factory in `ROUTERS` (or call `register_router`) and get the same service object,
authentication and error handling, without touching this module.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

from headwater import __version__
from headwater.server.errors import ApiError
from headwater.server.models import ServerInfo
from headwater.server.service import Service

RouterFactory = Callable[[Service], APIRouter]


def _root(svc: Service) -> APIRouter:
    r = APIRouter(tags=["root"])
    cluster = svc.store.service_id()

    @r.get("/", response_model=ServerInfo)
    def root() -> ServerInfo:
        return ServerInfo(version=__version__, commit="", kafka_cluster_id=cluster)

    return r


def _builtin_routers() -> list[RouterFactory]:
    from headwater.server.routes import (
        connectors,
        console,
        loggers,
        metrics,
        notifications,
        observe,
        pipelines,
        plugins,
        profiles,
        streams,
    )

    return [_root, connectors.router, plugins.router, streams.router, profiles.router,
            metrics.router, notifications.router, loggers.router, observe.router,
            console.router, pipelines.router]


ROUTERS: list[RouterFactory] = []


def register_router(factory: RouterFactory) -> None:
    """Add a router to every app built from now on."""
    ROUTERS.append(factory)


def _auth(token: str | None) -> list[Any]:
    if token is None:
        return []
    bearer = HTTPBearer(auto_error=False)
    expected = token.encode()

    def check(request: Request,
              creds: HTTPAuthorizationCredentials | None = Depends(bearer)) -> None:  # noqa: B008
        if request.url.path == "/console" or request.url.path.startswith("/console/"):
            return  # the console's static page and script: no data (routes/console.py)
        if creds is None or creds.scheme.lower() != "bearer" or not hmac.compare_digest(
                creds.credentials.encode(), expected):
            raise ApiError(401, "Unauthorized: a valid Bearer token is required")

    return [Depends(check)]


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error_code": status, "message": message}, status_code=status,
                        headers=headers)


def _documents(app: FastAPI) -> APIRouter:
    """`/openapi.json` and `/docs` as routes of the app, so that the token that guards every
    route guards them too (FastAPI's own are added outside its dependencies)."""
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.responses import HTMLResponse

    r = APIRouter(include_in_schema=False)

    @r.get("/openapi.json")
    def openapi_document() -> JSONResponse:
        return JSONResponse(app.openapi())

    @r.get("/docs")
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title=f"{app.title} - docs")

    return r


def build_app(svc: Service, *, token: str | None = None) -> FastAPI:
    # With a token the documents are the guarded routes of `_documents`, not FastAPI's own.
    app = FastAPI(title="Headwater", version=__version__, dependencies=_auth(token),
                  description="Kafka Connect-compatible REST API of `headwater serve` "
                              "(docs/server.md), plus Datastream-style streams and "
                              "connection profiles.",
                  openapi_url=None if token else "/openapi.json",
                  docs_url=None if token else "/docs", redoc_url=None if token else "/redoc")
    for factory in [*_builtin_routers(), *ROUTERS]:
        app.include_router(factory(svc))
    if token is not None:
        app.include_router(_documents(app))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else None
        return _error(exc.status_code, str(exc.detail), headers)

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                             for e in exc.errors())
        return _error(400, f"invalid request: {problems}")

    @app.exception_handler(Exception)
    async def server_error(_request: Request, exc: Exception) -> JSONResponse:
        return _error(500, f"{type(exc).__name__}: {exc}")

    default_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        """FastAPI documents request validation failures as 422; they are answered 400 in
        Kafka Connect's error shape, so the document says so."""
        if app.openapi_schema is not None:
            return app.openapi_schema
        doc = default_openapi()
        for path in doc.get("paths", {}).values():
            for op in path.values():
                answers = op.get("responses", {})
                if answers.pop("422", None) is not None:
                    answers.setdefault("400", {
                        "description": "Bad Request",
                        "content": {"application/json": {"schema": {
                            "$ref": "#/components/schemas/ErrorMessage"}}}})
                if token is not None:
                    answers.setdefault("401", {
                        "description": "Unauthorized",
                        "content": {"application/json": {"schema": {
                            "$ref": "#/components/schemas/ErrorMessage"}}}})
        schemas = doc.get("components", {}).get("schemas", {})
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]
    return app
