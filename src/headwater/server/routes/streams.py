"""`/streams`: Datastream's stream resources over the streams catalog and supervisor.

Why both state PATCH and `:start`-style methods: Datastream changes a stream's state by a
PATCH of `state` (RUNNING, PAUSED); the CLI's verbs (start, pause, resume, drain, recover)
are clearer for scripts.  Both go through the supervisor, so the states' transition table
decides what is allowed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, Field

from headwater.server.errors import ApiError, responses
from headwater.server.models import Strict
from headwater.server.routes.profiles import catalog_error
from headwater.server.routes.source_settings import source_settings
from headwater.server.service import Service
from headwater.streams.catalog import Catalog, CatalogError
from headwater.streams.cli import render_stream
from headwater.streams.model import (
    BACKFILL_AUTOMATIC,
    BACKFILL_NONE,
    ObjectRef,
    StreamSpec,
    StreamSpecError,
    source_prefix,
)
from headwater.streams.profiles import ProfileError, check_name, source_kind
from headwater.streams.states import State, TransitionError
from headwater.streams.supervisor import StreamBusy

_SETTLED = frozenset(set(State) - {State.STARTING, State.DRAINING})


class SourceConfig(Strict):
    sourceConnectionProfile: str  # noqa: N815
    postgresqlSourceConfig: dict[str, Any] | None = None  # noqa: N815
    mysqlSourceConfig: dict[str, Any] | None = None  # noqa: N815
    sqlServerSourceConfig: dict[str, Any] | None = None  # noqa: N815
    mongodbSourceConfig: dict[str, Any] | None = None  # noqa: N815

    def given(self) -> tuple[str, dict[str, Any]] | None:
        """The one `<prefix>SourceConfig` given (its prefix and body), or None."""
        found = [(prefix, doc) for prefix, doc in (
            ("postgresql", self.postgresqlSourceConfig), ("mysql", self.mysqlSourceConfig),
            ("sqlServer", self.sqlServerSourceConfig), ("mongodb", self.mongodbSourceConfig))
            if doc is not None]
        if len(found) > 1:
            raise StreamSpecError("sourceConfig: give one of postgresqlSourceConfig, "
                                  "mysqlSourceConfig, sqlServerSourceConfig, "
                                  "mongodbSourceConfig")
        return found[0] if found else None


class DestinationConfig(Strict):
    destinationConnectionProfile: str  # noqa: N815
    path: str = ""


class BackfillAll(Strict):
    """Datastream's BackfillAllStrategy: its excluded objects under the source's name
    (`postgresqlExcludedObjects`, `mysqlExcludedObjects`, ...) or Headwater's
    `excludedObjects`."""

    excludedObjects: dict[str, Any] | None = None  # noqa: N815
    postgresqlExcludedObjects: dict[str, Any] | None = None  # noqa: N815
    mysqlExcludedObjects: dict[str, Any] | None = None  # noqa: N815
    sqlServerExcludedObjects: dict[str, Any] | None = None  # noqa: N815
    mongodbExcludedObjects: dict[str, Any] | None = None  # noqa: N815

    def excluded(self) -> dict[str, Any] | None:
        given = [v for v in (self.excludedObjects, self.postgresqlExcludedObjects,
                             self.mysqlExcludedObjects, self.sqlServerExcludedObjects,
                             self.mongodbExcludedObjects)
                 if v is not None]
        if len(given) > 1:
            raise StreamSpecError("backfillAll: give one of excludedObjects, "
                                  "postgresqlExcludedObjects, mysqlExcludedObjects, "
                                  "sqlServerExcludedObjects, mongodbExcludedObjects")
        return given[0] if given else None


class StreamBody(Strict):
    sourceConfig: SourceConfig  # noqa: N815
    destinationConfig: DestinationConfig  # noqa: N815
    backfillAll: BackfillAll | None = None  # noqa: N815
    backfillNone: dict[str, Any] | None = None  # noqa: N815
    properties: dict[str, str] = Field(default_factory=dict)


class RunBody(Strict):
    """Datastream's RunStreamRequest: where CDC starts (`cdcStrategy`) and `force`
    (accepted; Headwater has no separate validation to skip)."""

    cdcStrategy: dict[str, Any] | None = None  # noqa: N815
    force: bool = False


class BackfillBody(Strict):
    """StartBackfillJob's body; `filter` is Headwater's partial backfill (a SQL WHERE)."""

    filter: str | None = None


class StatePatch(Strict):
    state: Literal["RUNNING", "PAUSED"]


class Stream(BaseModel):
    name: str
    state: str
    stateTime: int  # noqa: N815
    createTime: int  # noqa: N815
    updateTime: int  # noqa: N815
    sourceConfig: dict[str, Any]  # noqa: N815
    destinationConfig: dict[str, Any]  # noqa: N815
    backfillAll: dict[str, Any] | None = None  # noqa: N815
    backfillNone: dict[str, Any] | None = None  # noqa: N815
    errors: list[dict[str, Any]]


class StreamList(BaseModel):
    streams: list[Stream]


class ErrorList(BaseModel):
    errors: list[dict[str, Any]]


def _named(entry: Any, keys: tuple[str, ...], where: str) -> str:
    name = next((entry[k] for k in keys if k in entry), None) if isinstance(
        entry, dict) else None
    if not isinstance(name, str):
        raise StreamSpecError(f"{where}: each entry needs a {' or '.join(keys)} name")
    return name


def parse_objects(doc: dict[str, Any] | None) -> tuple[ObjectRef, ...]:
    """Datastream's nested include/exclude lists (`postgresqlSchemas[].postgresqlTables[]
    .postgresqlColumns[]`, `mysqlDatabases[]...`, SQL Server's `schemas[].tables[]
    .columns[]`, MongoDB's `databases[].collections[].fields[]`) as object references."""
    refs: list[ObjectRef] = []
    for key, containers in (doc or {}).items():
        if not isinstance(containers, list):
            raise StreamSpecError(f"{key}: expected a list")
        for c in containers:
            name = _named(c, ("schema", "database"), key)
            tables = [v for k, v in c.items()
                      if k.lower().endswith("tables") or k == "collections"]
            if not tables:
                refs.append(ObjectRef(name))
            for t in (t for ts in tables for t in ts):
                table = _named(t, ("table", "collection"), f"{key}[{name}]")
                cols = [v for k, v in t.items()
                        if k.lower().endswith("columns") or k == "fields"]
                if not cols:
                    refs.append(ObjectRef(name, table))
                refs.extend(ObjectRef(name, table, _named(col, ("column", "field"),
                                                          f"{key}[{name}.{table}]"))
                            for cs in cols for col in cs)
    return tuple(refs)


def spec_of(name: str, body: StreamBody) -> StreamSpec:
    src = body.sourceConfig
    prefix, objects = src.given() or ("", {})
    properties = dict(body.properties)
    for key, value in source_settings(prefix, objects).items():
        if key in properties and properties[key] != value:
            raise StreamSpecError(f"properties.{key}={properties[key]} contradicts "
                                  f"{prefix}SourceConfig ({value})")
        properties[key] = value
    try:
        return StreamSpec(
            name, src.sourceConnectionProfile, body.destinationConfig.destinationConnectionProfile,
            parse_objects(objects.get("includeObjects")),
            parse_objects(objects.get("excludeObjects")),
            BACKFILL_NONE if body.backfillNone is not None else BACKFILL_AUTOMATIC,
            parse_objects(body.backfillAll.excluded()) if body.backfillAll else (),
            body.destinationConfig.path, properties)
    except (KeyError, TypeError, AttributeError) as exc:
        raise StreamSpecError(f"malformed object list: {exc}") from None


def check_source_config(cat: Catalog, body: StreamBody) -> None:
    """A `<prefix>SourceConfig` must be the source profile's kind's (a mongodbSourceConfig
    with a PostgreSQL profile would otherwise be read as PostgreSQL's objects)."""
    given = body.sourceConfig.given()
    if given is None:
        return
    profile = cat.profile(body.sourceConfig.sourceConnectionProfile, "source")
    wanted = source_prefix(source_kind(profile.kind).name)
    if given[0] != wanted:
        raise StreamSpecError(f"sourceConfig.{given[0]}SourceConfig: profile "
                              f"{profile.name!r} is a {profile.kind} source: give "
                              f"{wanted}SourceConfig")


def router(svc: Service) -> APIRouter:
    r = APIRouter(tags=["streams"])
    cat, sup = svc.catalog, svc.supervisor

    def view(name: str) -> Stream:
        try:
            return Stream.model_validate(render_stream(cat, sup.reconcile(name)))
        except CatalogError as exc:
            raise catalog_error(exc) from None

    def act(name: str, verb: str, wait_s: float = 0) -> Stream:
        try:
            getattr(sup, verb)(name)
            if wait_s:
                sup.wait(name, frozenset({State.PAUSED}), wait_s)
        except CatalogError as exc:
            raise catalog_error(exc) from None
        except (TransitionError, StreamBusy) as exc:
            raise ApiError(400, str(exc)) from None
        return view(name)

    @r.get("/streams", response_model=StreamList, response_model_exclude_none=True)
    def list_streams() -> StreamList:
        return StreamList(streams=[view(x.spec.name) for x in cat.streams()])

    @r.post("/streams", status_code=201, response_model=Stream,
            response_model_exclude_none=True, responses=responses(400, 404, 409))
    def create_stream(body: StreamBody, streamId: str = Query()) -> Stream:  # noqa: N803
        try:
            check_name("stream", streamId)
            spec = spec_of(streamId, body)
            check_source_config(cat, body)
            cat.create_stream(spec)
        except (StreamSpecError, ProfileError) as exc:
            raise ApiError(400, str(exc)) from None
        except CatalogError as exc:
            raise catalog_error(exc) from None
        return view(streamId)

    @r.get("/streams/{name}", response_model=Stream, response_model_exclude_none=True,
           responses=responses(404))
    def get_stream(name: str) -> Stream:
        return view(name)

    @r.patch("/streams/{name}", response_model=Stream, response_model_exclude_none=True,
             responses=responses(400, 404))
    def patch_stream(name: str, body: StatePatch) -> Stream:
        current = view(name).state
        if body.state == "PAUSED":
            return act(name, "pause")
        verb = {"NOT_STARTED": "start", "FAILED_PERMANENTLY": "recover"}.get(current, "resume")
        return act(name, verb)

    def verb_method(verb: str) -> Callable[[str], Stream]:
        def method(name: str) -> Stream:
            return act(name, verb)

        return method

    for verb in ("start", "pause", "resume", "recover"):
        r.add_api_route(f"/streams/{{name}}:{verb}", verb_method(verb), methods=["POST"],
                        response_model=Stream, response_model_exclude_none=True,
                        responses=responses(400, 404), name=f"{verb}_stream")

    @r.post("/streams/{name}:drain", response_model=Stream, response_model_exclude_none=True,
            responses=responses(400, 404))
    def drain_stream(name: str, timeout: float = Query(60, ge=0, le=600)) -> Stream:
        return act(name, "pause", max(timeout, 0.1))

    @r.post("/streams/{name}:run", response_model=Stream, response_model_exclude_none=True,
            responses=responses(400, 404))
    def run_stream(name: str, body: RunBody | None = None) -> Stream:
        """Datastream's RunStream: start (NOT_STARTED) or resume, from `cdcStrategy`'s
        position when given; an unavailable position is a 400 naming it."""
        from headwater.streams.positions import CdcStrategy, CdcStrategyError

        current = view(name).state
        verb = "start" if current == "NOT_STARTED" else "resume"
        try:
            strategy = (CdcStrategy.parse(body.cdcStrategy)
                        if body is not None and body.cdcStrategy is not None else None)
            getattr(sup, verb)(name, strategy)
        except CatalogError as exc:
            raise catalog_error(exc) from None
        except (TransitionError, CdcStrategyError) as exc:
            raise ApiError(400, str(exc)) from None
        return view(name)

    @r.get("/streams/{name}/objects", responses=responses(404))
    def stream_objects(name: str) -> dict[str, Any]:
        """Datastream's streams.objects.list: each object with its backfill job."""
        from headwater.streams.jobs import BackfillJobs, stream_tables

        view(name)
        try:
            jobs = BackfillJobs(cat).objects(name, stream_tables(cat, name))
        except CatalogError as exc:
            raise catalog_error(exc) from None
        return {"streamObjects": [j.as_json() for j in jobs]}

    def backfill(name: str, obj: str, stop: bool, where: str | None) -> dict[str, Any]:
        from headwater.streams.jobs import BackfillError, BackfillJobs

        view(name)
        try:
            ref = ObjectRef.parse(obj)
            jobs = BackfillJobs(cat)
            job = jobs.stop(name, ref) if stop else jobs.start(name, ref, where)
        except CatalogError as exc:
            raise catalog_error(exc) from None
        except (StreamSpecError, BackfillError) as exc:
            raise ApiError(400, str(exc)) from None
        return {"object": job.as_json()}

    @r.post("/streams/{name}/objects/{obj}:startBackfillJob", responses=responses(400, 404))
    def start_backfill_job(name: str, obj: str, body: BackfillBody | None = None
                           ) -> dict[str, Any]:
        return backfill(name, obj, False, body.filter if body is not None else None)

    @r.post("/streams/{name}/objects/{obj}:stopBackfillJob", responses=responses(400, 404))
    def stop_backfill_job(name: str, obj: str) -> dict[str, Any]:
        return backfill(name, obj, True, None)

    @r.get("/streams/{name}/errors", response_model=ErrorList, responses=responses(404))
    def stream_errors(name: str) -> ErrorList:
        view(name)
        return ErrorList(errors=[e.as_json() for e in cat.errors(name)])

    @r.post("/streams/{name}:fetchErrors", response_model=ErrorList, responses=responses(404))
    def fetch_errors(name: str) -> ErrorList:
        return stream_errors(name)

    @r.delete("/streams/{name}", status_code=204, responses=responses(400, 404))
    def delete_stream(name: str, force: bool = False) -> Response:
        try:
            sup.delete(name, force=force)
        except CatalogError as exc:
            raise catalog_error(exc) from None
        except StreamBusy as exc:
            raise ApiError(400, str(exc)) from None
        return Response(status_code=204)

    return r
