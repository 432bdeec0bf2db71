"""The web console (`/console`): a static page and a small script over the REST API.

Why static files and no build step: the console is a view of the API (connectors, streams,
metrics, errors) plus its buttons; anything it shows can be had with curl.  The page and its
script carry no data, so they are served without the Bearer token; every call the script makes
goes through the same authentication as any other client (it asks for the token on a 401).
"""

from __future__ import annotations

from importlib import resources
from typing import Final

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from headwater.server.service import Service

PUBLIC_PREFIX: Final = "/console"
_TYPES: Final = {"console.js": "text/javascript; charset=utf-8",
                 "console.css": "text/css; charset=utf-8"}


def _asset(name: str) -> str:
    return resources.files("headwater.server").joinpath("console", name).read_text("utf-8")


def router(_svc: Service) -> APIRouter:
    r = APIRouter(tags=["console"], include_in_schema=False)

    @r.get("/console")
    def page() -> HTMLResponse:
        return HTMLResponse(_asset("index.html"))

    @r.get("/console/")
    def slash() -> RedirectResponse:
        return RedirectResponse("/console")

    @r.get("/console/{asset}")
    def asset(asset: str) -> Response:
        if asset not in _TYPES:
            return Response(status_code=404)
        return Response(_asset(asset), media_type=_TYPES[asset])

    return r
