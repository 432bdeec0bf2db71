"""`/connectionProfiles` and `/connectionProfiles:discover`: Datastream's connection
profiles over the streams catalog.

Why both field spellings: a Datastream user writes `hostname`, `port`, `username`,
`password`, `database`; a Debezium user writes `database.hostname`, ...; the catalog keeps
Debezium's names (a profile is the connection part of a connector configuration).
"""

from __future__ import annotations

from typing import Any, Final, Literal

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel

from headwater.server.connectors import HIDDEN
from headwater.server.errors import ApiError, responses
from headwater.server.models import ConfigScalar, Strict, flat_config
from headwater.server.service import Service
from headwater.streams.catalog import CatalogError
from headwater.streams.profiles import (
    MASK,
    Profile,
    ProfileError,
    destination_profile,
    source_profile,
)

_DATASTREAM_NAMES: Final = {"hostname": "database.hostname", "port": "database.port",
                            "username": "database.user", "password": "database.password"}


class DestinationBody(Strict):
    kind: Literal["topics", "files"] = "topics"
    directory: str
    format: Literal["json", "avro"] = "json"


class ProfileBody(Strict):
    postgresqlProfile: dict[str, ConfigScalar] | None = None  # noqa: N815
    mysqlProfile: dict[str, ConfigScalar] | None = None  # noqa: N815
    sqlServerProfile: dict[str, ConfigScalar] | None = None  # noqa: N815
    destinationProfile: DestinationBody | None = None  # noqa: N815


class ConnectionProfile(BaseModel):
    name: str
    role: str
    kind: str
    createTime: int  # noqa: N815
    updateTime: int  # noqa: N815
    postgresqlProfile: dict[str, str] | None = None  # noqa: N815
    mysqlProfile: dict[str, str] | None = None  # noqa: N815
    sqlServerProfile: dict[str, str] | None = None  # noqa: N815
    destinationProfile: dict[str, str] | None = None  # noqa: N815


class ProfileList(BaseModel):
    connectionProfiles: list[ConnectionProfile]  # noqa: N815


class DiscoverRequest(BaseModel):
    connectionProfileName: str  # noqa: N815
    hierarchyDepth: int | None = None  # noqa: N815
    fullHierarchy: bool = False  # noqa: N815


def rendered(profile: Profile) -> ConnectionProfile:
    doc: dict[str, Any] = profile.rendered()
    for key, value in doc.items():
        if isinstance(value, dict):
            doc[key] = {k: (HIDDEN if v == MASK else v) for k, v in value.items()}
    return ConnectionProfile.model_validate(doc)


def build(name: str, body: ProfileBody) -> Profile:
    if body.destinationProfile is not None:
        d = body.destinationProfile
        return destination_profile(name, d.kind, d.directory, d.format)
    given = [(k, p) for k, p in (("postgresql", body.postgresqlProfile),
                                 ("mysql", body.mysqlProfile),
                                 ("sqlserver", body.sqlServerProfile)) if p is not None]
    if len(given) != 1:
        raise ProfileError("give one of postgresqlProfile, mysqlProfile, sqlServerProfile, "
                           "destinationProfile")
    kind, props = given[0]
    flat = flat_config(props)
    if kind == "postgresql" and "database" in flat:
        flat["database.dbname"] = flat.pop("database")
    if kind == "sqlserver" and "database" in flat:  # Datastream's SqlServerProfile.database
        flat["database.names"] = flat.pop("database")
    return source_profile(name, kind, {_DATASTREAM_NAMES.get(k, k): v for k, v in flat.items()})


def catalog_error(exc: CatalogError) -> ApiError:
    text = str(exc)
    return ApiError(404 if text.startswith("no ") else 409, text)


def router(svc: Service) -> APIRouter:
    r = APIRouter(tags=["connectionProfiles"])
    cat = svc.catalog

    @r.get("/connectionProfiles", response_model=ProfileList)
    def list_profiles() -> ProfileList:
        return ProfileList(connectionProfiles=[rendered(p) for p in cat.profiles()])

    @r.post("/connectionProfiles", status_code=201, response_model=ConnectionProfile,
            responses=responses(400, 409))
    def create_profile(body: ProfileBody, connectionProfileId: str = Query()  # noqa: N803
                       ) -> ConnectionProfile:
        try:
            return rendered(cat.add_profile(build(connectionProfileId, body)))
        except ProfileError as exc:
            raise ApiError(400, str(exc)) from None
        except CatalogError as exc:
            raise catalog_error(exc) from None

    @r.get("/connectionProfiles/{name}", response_model=ConnectionProfile,
           responses=responses(404))
    def get_profile(name: str) -> ConnectionProfile:
        try:
            return rendered(cat.profile(name))
        except CatalogError as exc:
            raise catalog_error(exc) from None

    @r.patch("/connectionProfiles/{name}", response_model=ConnectionProfile,
             responses=responses(400, 404))
    def update_profile(name: str, body: ProfileBody) -> ConnectionProfile:
        try:
            old = cat.profile(name)
            new = build(name, body)
            props = {k: (old.properties.get(k, v) if v == HIDDEN else v)
                     for k, v in new.properties.items()}
            return rendered(cat.add_profile(Profile(name, new.role, new.kind, props),
                                            replace=True))
        except ProfileError as exc:
            raise ApiError(400, str(exc)) from None
        except CatalogError as exc:
            raise catalog_error(exc) from None

    @r.delete("/connectionProfiles/{name}", status_code=204, responses=responses(404, 409))
    def delete_profile(name: str) -> Response:
        try:
            cat.delete_profile(name)
        except CatalogError as exc:
            raise catalog_error(exc) from None
        return Response(status_code=204)

    @r.post("/connectionProfiles:discover", response_model=dict[str, Any],
            responses=responses(400, 404, 502))
    def discover(body: DiscoverRequest) -> dict[str, Any]:
        from headwater.streams.discover import FULL_DEPTH
        from headwater.streams.discover import discover as run

        try:
            profile = cat.profile(body.connectionProfileName, "source")
        except CatalogError as exc:
            raise catalog_error(exc) from None
        depth = FULL_DEPTH if body.fullHierarchy else (body.hierarchyDepth or 1)
        if not 1 <= depth <= FULL_DEPTH:
            raise ApiError(400, f"hierarchyDepth {depth}: 1 to {FULL_DEPTH}")
        try:
            found: dict[str, Any] = run(profile, depth, None, None)
        except Exception as exc:  # the database refused or is unreachable: say so
            raise ApiError(502, f"discover failed: {type(exc).__name__}: {exc}") from None
        return found

    return r
