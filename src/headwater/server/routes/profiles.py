"""`/connectionProfiles` and `/connectionProfiles:discover`: Datastream's connection
profiles over the streams catalog.

Why both field spellings: a Datastream user writes `hostname`, `port`, `username`,
`password`, `database`; a Debezium user writes `database.hostname`, ...; the catalog keeps
Debezium's names (a profile is the connection part of a connector configuration).  MongoDB's
profile is Datastream's MongodbProfile (`hostAddresses`, `replicaSet`, a connection format,
...), which becomes the connector's `mongodb.connection.string`, `mongodb.user`, ... .
"""

from __future__ import annotations

from typing import Any, Final, Literal
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel

from headwater.server.connectors import HIDDEN
from headwater.server.errors import ApiError, responses
from headwater.server.models import ConfigScalar, Strict, flat_config
from headwater.server.service import Service
from headwater.streams.catalog import CatalogError
from headwater.streams.profiles import (
    Profile,
    ProfileError,
    destination_profile,
    masked_value,
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
    # Datastream's MongodbProfile has nested fields (hostAddresses, sslConfig, ...).
    mongodbProfile: dict[str, Any] | None = None  # noqa: N815
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
    mongodbProfile: dict[str, str] | None = None  # noqa: N815
    destinationProfile: dict[str, str] | None = None  # noqa: N815


class ProfileList(BaseModel):
    connectionProfiles: list[ConnectionProfile]  # noqa: N815


class DiscoverRequest(BaseModel):
    connectionProfileName: str  # noqa: N815
    hierarchyDepth: int | None = None  # noqa: N815
    fullHierarchy: bool = False  # noqa: N815


def rendered(profile: Profile) -> ConnectionProfile:
    return ConnectionProfile.model_validate(profile.rendered(HIDDEN))


_MONGODB_FIELDS: Final = ("hostAddresses", "replicaSet", "username", "password",
                          "srvConnectionFormat", "standardConnectionFormat", "sslConfig",
                          "additionalOptions")
_MONGODB_DEFAULT_PORT: Final = 27017


def _fail(field: str, problem: str) -> ProfileError:
    return ProfileError(f"mongodbProfile.{field}: {problem}")


def _scalar(field: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise _fail(field, "expected a string, number or boolean")


def _host(i: int, address: Any, srv: bool) -> str:
    field = f"hostAddresses[{i}]"
    if not isinstance(address, dict):
        raise _fail(field, "expected {hostname, port}")
    for key in address:
        if key not in ("hostname", "port"):
            raise _fail(f"{field}.{key}", "unknown field (HostAddress has hostname, port)")
    hostname, port = address.get("hostname"), address.get("port")
    if not isinstance(hostname, str) or not hostname.strip() or any(
            c in hostname for c in ",/?#@ "):
        raise _fail(f"{field}.hostname", f"{hostname!r} is not a host name")
    host = f"[{hostname}]" if ":" in hostname else hostname  # an IPv6 address
    if srv:  # Datastream: one DNS name without a port
        if port not in (None, 0):
            raise _fail(f"{field}.port", "srvConnectionFormat takes a DNS name without a port")
        return host
    if port in (None, 0):
        port = _MONGODB_DEFAULT_PORT
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise _fail(f"{field}.port", f"{port!r} is not a port (1 to 65535)")
    return f"{host}:{port}"


def _connection_string(doc: dict[str, Any]) -> str:
    """Datastream's hosts, replica set, connection format and additional options as a
    `mongodb://` (standard) or `mongodb+srv://` (SRV) connection string."""
    srv, standard = doc.get("srvConnectionFormat"), doc.get("standardConnectionFormat")
    if srv is not None and standard is not None:
        raise ProfileError("mongodbProfile: give srvConnectionFormat or "
                           "standardConnectionFormat, not both")
    hosts = doc.get("hostAddresses")
    if not isinstance(hosts, list) or not hosts:
        raise _fail("hostAddresses", "a list of {hostname, port}, at least one")
    query: list[tuple[str, str]] = []
    replica_set = doc.get("replicaSet")
    if replica_set not in (None, ""):
        query.append(("replicaSet", _scalar("replicaSet", replica_set)))
    if srv is not None:
        if not isinstance(srv, dict) or srv:
            raise _fail("srvConnectionFormat", "expected {} (SrvConnectionFormat has no "
                        "fields)")
        if len(hosts) != 1:
            raise _fail("hostAddresses", "srvConnectionFormat takes exactly one DNS name")
        if query:
            raise _fail("replicaSet", "must be empty with srvConnectionFormat (the DNS "
                        "records name the replica set)")
    elif standard is not None:
        if not isinstance(standard, dict):
            raise _fail("standardConnectionFormat", "expected {directConnection}")
        for key in standard:
            if key != "directConnection":
                raise _fail(f"standardConnectionFormat.{key}", "unknown field "
                            "(StandardConnectionFormat has directConnection)")
        direct = standard.get("directConnection")
        if direct is not None:
            if not isinstance(direct, bool):
                raise _fail("standardConnectionFormat.directConnection",
                            "expected true or false")
            if direct and len(hosts) > 1:
                raise _fail("standardConnectionFormat.directConnection",
                            "a direct connection takes one host, not "
                            f"{len(hosts)}")
            query.append(("directConnection", "true" if direct else "false"))
    addresses = [_host(i, a, srv is not None) for i, a in enumerate(hosts)]
    options = doc.get("additionalOptions")
    if options is not None:
        if not isinstance(options, dict):
            raise _fail("additionalOptions", "expected a map of connection string options")
        set_by_fields = {k.lower() for k, _ in query}
        for key, value in options.items():
            if key.lower() in set_by_fields:
                raise _fail(f"additionalOptions.{key}", "already set by the profile's "
                            "fields (replicaSet, standardConnectionFormat)")
            query.append((key, _scalar(f"additionalOptions.{key}", value)))
    scheme = "mongodb+srv" if srv is not None else "mongodb"
    tail = f"?{urlencode(query, quote_via=quote)}" if query else ""
    return f"{scheme}://{','.join(addresses)}/{tail}"


def mongodb_properties(given: dict[str, Any]) -> dict[str, str]:
    """Datastream's MongodbProfile as the MongoDB connector's properties:
    `hostAddresses`, `replicaSet`, `srvConnectionFormat`/`standardConnectionFormat`
    (`directConnection`) and `additionalOptions` -> `mongodb.connection.string`;
    `username` -> `mongodb.user`, `password` -> `mongodb.password`; an empty `sslConfig`
    -> `mongodb.ssl.enabled=true`.  Debezium's names are taken as they are; a property given
    both ways, or a field neither knows, is refused naming it."""
    props: dict[str, str] = {}
    datastream = {k: v for k, v in given.items() if k in _MONGODB_FIELDS}
    for key, value in given.items():
        if key in _MONGODB_FIELDS:
            continue
        if key == "secretManagerStoredPassword":
            raise _fail(key, "Secret Manager is not available here: give password, e.g. as "
                        "a ${env:NAME} or ${file:PATH:KEY} placeholder")
        if isinstance(value, dict | list) or value is None:
            raise _fail(key, "unknown field (Datastream's MongodbProfile has "
                        + ", ".join(_MONGODB_FIELDS) + "; other keys are the MongoDB "
                        "connector's properties)")
        props[key] = _scalar(key, value)
    mapped: dict[str, str] = {}
    if "username" in datastream:
        mapped["mongodb.user"] = _scalar("username", datastream["username"])
    if "password" in datastream:
        mapped["mongodb.password"] = _scalar("password", datastream["password"])
    ssl = datastream.get("sslConfig")
    if ssl is not None:
        if not isinstance(ssl, dict):
            raise _fail("sslConfig", "expected an object")
        for key in ssl:
            raise _fail(f"sslConfig.{key}", "certificates and keys are not stored in a "
                        "profile: give their files as additionalOptions (tlsCAFile, "
                        "tlsCertificateKeyFile); an empty sslConfig turns TLS on")
        mapped["mongodb.ssl.enabled"] = "true"
    if {"hostAddresses", "replicaSet", "srvConnectionFormat", "standardConnectionFormat",
            "additionalOptions"} & datastream.keys():
        mapped["mongodb.connection.string"] = _connection_string(datastream)
    for key in mapped:
        if key in props:
            field = next(f for f, k in (("username", "mongodb.user"),
                                        ("password", "mongodb.password"),
                                        ("sslConfig", "mongodb.ssl.enabled"),
                                        ("hostAddresses", "mongodb.connection.string"))
                         if k == key)
            raise _fail(key, f"given twice: as {key} and as Datastream's {field}")
    return {**props, **mapped}


def build(name: str, body: ProfileBody) -> Profile:
    if body.destinationProfile is not None:
        d = body.destinationProfile
        return destination_profile(name, d.kind, d.directory, d.format)
    given = [(k, p) for k, p in (("postgresql", body.postgresqlProfile),
                                 ("mysql", body.mysqlProfile),
                                 ("sqlserver", body.sqlServerProfile),
                                 ("mongodb", body.mongodbProfile)) if p is not None]
    if len(given) != 1:
        raise ProfileError("give one of postgresqlProfile, mysqlProfile, sqlServerProfile, "
                           "mongodbProfile, destinationProfile")
    kind, props = given[0]
    if kind == "mongodb":
        return source_profile(name, kind, mongodb_properties(props))
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
            # A secret given back as it was shown (`[hidden]`, or a connection string with
            # `:[hidden]@`) keeps its stored value.
            props = {k: (old.properties[k] if k in old.properties and v == masked_value(
                k, old.properties[k], HIDDEN) else v) for k, v in new.properties.items()}
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
