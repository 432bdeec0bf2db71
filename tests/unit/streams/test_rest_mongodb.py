"""The service's Datastream routes for MongoDB without a server: `mongodbProfile` (Datastream's
MongodbProfile into the connector's properties, Debezium's names as they are, unknown fields
refused naming them, a connection string's password hidden), `mongodbSourceConfig`, and a
backfill job refused for an object the stream does not capture (checked before the source is
asked, so no database is needed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pymongo.uri_parser import parse_uri

from headwater.server.app import build_app
from headwater.server.service import Service
from headwater.streams.jobs import BackfillJobs
from headwater.streams.model import ObjectRef, StreamSpec, StreamSpecError
from headwater.streams.profiles import source_profile
from headwater.streams.translate import SIGNAL_FILE, stream_dir


@pytest.fixture()
def api(tmp_path: Path) -> Iterator[tuple[TestClient, Service]]:
    svc = Service.open(tmp_path / "svc", "127.0.0.1:0")
    try:
        yield TestClient(build_app(svc)), svc
    finally:
        svc.close()


def _create(c: TestClient, name: str, body: dict[str, Any]) -> Any:
    return c.post("/connectionProfiles", params={"connectionProfileId": name}, json=body)


def test_mongodb_profile_datastream_fields(api: tuple[TestClient, Service]) -> None:
    c, svc = api
    r = _create(c, "m", {"mongodbProfile": {
        "hostAddresses": [{"hostname": "db1", "port": 27017}, {"hostname": "db2", "port": 27018},
                          {"hostname": "::1"}],
        "replicaSet": "rs0", "username": "reader", "password": "pw-secret",
        "standardConnectionFormat": {"directConnection": False},
        "additionalOptions": {"serverSelectionTimeoutMS": 5000, "tls": True}}})
    assert r.status_code == 201, r.text
    shown = r.json()["mongodbProfile"]
    uri = ("mongodb://db1:27017,db2:27018,[::1]:27017/?replicaSet=rs0&directConnection=false"
           "&serverSelectionTimeoutMS=5000&tls=true")
    assert shown == {"mongodb.connection.string": uri, "mongodb.user": "reader",
                     "mongodb.password": "[hidden]"}
    assert "pw-secret" not in r.text and r.json()["kind"] == "mongodb"
    parsed = parse_uri(uri)  # the driver reads it as meant
    assert parsed["nodelist"] == [("db1", 27017), ("db2", 27018), ("::1", 27017)]
    assert parsed["options"]["replicaSet"] == "rs0"
    assert parsed["options"]["directConnection"] is False
    assert svc.catalog.profile("m").properties["mongodb.password"] == "pw-secret"

    r = _create(c, "srv", {"mongodbProfile": {
        "hostAddresses": [{"hostname": "cluster0.example.net"}], "srvConnectionFormat": {},
        "username": "u", "sslConfig": {}}})
    assert r.status_code == 201, r.text
    assert r.json()["mongodbProfile"] == {
        "mongodb.connection.string": "mongodb+srv://cluster0.example.net/",
        "mongodb.user": "u", "mongodb.ssl.enabled": "true"}
    # One host when no format is named: the standard format with the default port.
    r = _create(c, "one", {"mongodbProfile": {"hostAddresses": [{"hostname": "h"}]}})
    assert r.json()["mongodbProfile"] == {"mongodb.connection.string": "mongodb://h:27017/"}


@pytest.mark.parametrize(("profile", "message"), [
    ({"hostAddresses": [{"hostname": "h"}], "hostAdress": "x"},
     "unknown property 'hostAdress'"),
    ({"hostAddresses": [{"hostname": "h"}], "sslConfg": {}},
     "mongodbProfile.sslConfg: unknown field"),
    ({"hostAddresses": [{"hostname": "h", "prt": 1}]},
     "mongodbProfile.hostAddresses[0].prt: unknown field"),
    ({"hostAddresses": [{"hostname": "h", "port": 70000}]},
     "mongodbProfile.hostAddresses[0].port: 70000 is not a port"),
    ({"hostAddresses": [{"hostname": "a,b"}]}, "mongodbProfile.hostAddresses[0].hostname"),
    ({"hostAddresses": []}, "mongodbProfile.hostAddresses: a list"),
    ({"replicaSet": "rs0"}, "mongodbProfile.hostAddresses: a list"),
    ({"hostAddresses": [{"hostname": "h", "port": 1}], "srvConnectionFormat": {}},
     "hostAddresses[0].port: srvConnectionFormat takes a DNS name without a port"),
    ({"hostAddresses": [{"hostname": "h"}], "srvConnectionFormat": {}, "replicaSet": "r"},
     "mongodbProfile.replicaSet: must be empty with srvConnectionFormat"),
    ({"hostAddresses": [{"hostname": "a"}, {"hostname": "b"}], "srvConnectionFormat": {}},
     "srvConnectionFormat takes exactly one DNS name"),
    ({"hostAddresses": [{"hostname": "h"}], "srvConnectionFormat": {},
      "standardConnectionFormat": {}}, "not both"),
    ({"hostAddresses": [{"hostname": "a"}, {"hostname": "b"}],
      "standardConnectionFormat": {"directConnection": True}},
     "a direct connection takes one host, not 2"),
    ({"hostAddresses": [{"hostname": "h"}], "standardConnectionFormat": {"direct": True}},
     "mongodbProfile.standardConnectionFormat.direct: unknown field"),
    ({"hostAddresses": [{"hostname": "h"}], "replicaSet": "r",
      "additionalOptions": {"replicaset": "s"}},
     "mongodbProfile.additionalOptions.replicaset: already set"),
    ({"hostAddresses": [{"hostname": "h"}], "sslConfig": {"caCertificate": "PEM"}},
     "mongodbProfile.sslConfig.caCertificate: certificates and keys are not stored"),
    ({"hostAddresses": [{"hostname": "h"}], "username": "a", "mongodb.user": "b"},
     "mongodbProfile.mongodb.user: given twice: as mongodb.user and as Datastream's username"),
    ({"hostAddresses": [{"hostname": "h"}], "mongodb.connection.string": "mongodb://x/"},
     "given twice"),
    ({"hostAddresses": [{"hostname": "h"}], "secretManagerStoredPassword": "projects/p"},
     "mongodbProfile.secretManagerStoredPassword: Secret Manager is not available"),
    ({"username": "u"}, "missing mongodb.connection.string"),
])
def test_mongodb_profile_refused(api: tuple[TestClient, Service], profile: dict[str, Any],
                                 message: str) -> None:
    c, svc = api
    r = _create(c, "m", {"mongodbProfile": profile})
    assert r.status_code == 400, r.text
    assert message in r.json()["message"], r.text
    assert svc.catalog.profiles() == []


def test_mongodb_profile_debezium_names_and_catalog_rendering(
        api: tuple[TestClient, Service]) -> None:
    """Debezium's names as given; a connection string's password is hidden and kept by a
    PATCH that gives it back as shown; a profile created through the catalog (the CLI's way)
    renders its properties under mongodbProfile (they were dropped before)."""
    c, svc = api
    uri = "mongodb://app:s3cret@h1:27017,h2:27017/?replicaSet=rs0"
    r = _create(c, "m", {"mongodbProfile": {"mongodb.connection.string": uri,
                                            "mongodb.authsource": "users"}})
    assert r.status_code == 201, r.text
    shown = r.json()["mongodbProfile"]
    assert shown == {"mongodb.connection.string":
                     "mongodb://app:[hidden]@h1:27017,h2:27017/?replicaSet=rs0",
                     "mongodb.authsource": "users"}
    assert "s3cret" not in c.get("/connectionProfiles").text
    r = c.patch("/connectionProfiles/m", json={"mongodbProfile": {
        **shown, "mongodb.authsource": "admin"}})
    assert r.status_code == 200, r.text
    stored = svc.catalog.profile("m").properties
    assert stored["mongodb.connection.string"] == uri and stored["mongodb.authsource"] == "admin"

    svc.catalog.add_profile(source_profile("cli", "mongo", {
        "mongodb.connection.string": "mongodb://127.0.0.1:1/?replicaSet=rs0",
        "mongodb.password": "pw"}))
    got = c.get("/connectionProfiles/cli").json()
    assert got["mongodbProfile"] == {
        "mongodb.connection.string": "mongodb://127.0.0.1:1/?replicaSet=rs0",
        "mongodb.password": "[hidden]"}


def _stream(c: TestClient, name: str, source_config: dict[str, Any], profile: str = "m",
            **extra: Any) -> Any:
    return c.post("/streams", params={"streamId": name}, json={
        "sourceConfig": {"sourceConnectionProfile": profile, **source_config},
        "destinationConfig": {"destinationConnectionProfile": "out"}, **extra})


def test_mongodb_source_config(api: tuple[TestClient, Service], tmp_path: Path) -> None:
    c, svc = api
    assert _create(c, "m", {"mongodbProfile": {"hostAddresses": [{"hostname": "h"}]}}
                   ).status_code == 201
    assert _create(c, "pg", {"postgresqlProfile": {"hostname": "h", "username": "u",
                                                   "database": "d"}}).status_code == 201
    assert _create(c, "out", {"destinationProfile": {"directory": str(tmp_path / "o")}}
                   ).status_code == 201
    include = {"databases": [{"database": "shop", "collections": [{"collection": "orders"}]},
                             {"database": "crm"}]}
    exclude = {"databases": [{"database": "crm", "collections": [
        {"collection": "people", "fields": [{"field": "ssn"}]}, {"collection": "audit"}]}]}
    config = {"includeObjects": include, "excludeObjects": exclude,
              "maxConcurrentBackfillTasks": 4, "jsonMode": "STRICT"}
    r = _stream(c, "s", {"mongodbSourceConfig": config},
                backfillAll={"mongodbExcludedObjects": {"databases": [
                    {"database": "shop", "collections": [{"collection": "orders"}]}]}})
    assert r.status_code == 201, r.text
    assert r.json()["sourceConfig"]["mongodbSourceConfig"] == config
    assert r.json()["backfillAll"] == {"mongodbExcludedObjects": {"databases": [
        {"database": "shop", "collections": [{"collection": "orders"}]}]}}
    spec = svc.catalog.stream("s").spec
    assert [str(x) for x in spec.exclude] == ["crm.people.ssn", "crm.audit"]
    assert spec.properties == {"snapshot.max.threads": "4",
                               "headwater.datastream.mongodb.json.mode": "strict"}

    refused: list[tuple[dict[str, Any], str]] = [
        ({"mongodbSourceConfig": {"includeObjects": include, "maxConcurrentCdcTasks": 2}},
         "mongodbSourceConfig.maxConcurrentCdcTasks: unknown field"),
        ({"mongodbSourceConfig": {"maxConcurrentBackfillTasks": 51}},
         "maxConcurrentBackfillTasks: 51 is not 0 to 50"),
        ({"mongodbSourceConfig": {"jsonMode": "RELAXED"}}, "'RELAXED' is not STRICT or"),
        ({"mongodbSourceConfig": {"includeObjects": {"databases": [{"db": "x"}]}}},
         "databases: each entry needs a schema or database name"),
        ({"postgresqlSourceConfig": {}}, "profile 'm' is a mongodb source: give "
                                         "mongodbSourceConfig"),
        ({"postgresqlSourceConfig": {}, "mongodbSourceConfig": {}}, "give one of"),
    ]
    for source_config, message in refused:
        r = _stream(c, "bad", source_config)
        assert r.status_code == 400 and message in r.json()["message"], r.text
    r = _stream(c, "bad", {"mongodbSourceConfig": {}}, profile="pg")
    assert r.status_code == 400 and "give postgresqlSourceConfig" in r.text, r.text
    assert [x.spec.name for x in svc.catalog.streams()] == ["s"]


@pytest.mark.parametrize("kind", ["mongodb", "postgresql"])
def test_backfill_of_an_object_the_stream_does_not_capture(
        api: tuple[TestClient, Service], tmp_path: Path, kind: str) -> None:
    """startBackfillJob of an object outside the include list, or excluded, is a 400 naming
    the object and the stream; nothing is queued or recorded (before the fix an object
    outside the include list was checked on the source and queued: a PostgreSQL stream then
    backfilled it into a topic of its own)."""
    c, svc = api
    profile = ({"mongodbProfile": {"hostAddresses": [{"hostname": "127.0.0.1", "port": 1}]}}
               if kind == "mongodb" else {"postgresqlProfile": {
                   "hostname": "127.0.0.1", "port": 1, "username": "u", "database": "d"}})
    assert _create(c, "src", profile).status_code == 201
    assert _create(c, "out", {"destinationProfile": {"directory": str(tmp_path / "o")}}
                   ).status_code == 201
    svc.catalog.create_stream(StreamSpec(
        "s", "src", "out", include=(ObjectRef("shop"), ObjectRef("crm", "People")),
        exclude=(ObjectRef("shop", "audit"),)))
    for obj, message in [
        ("crm.other", "backfill of crm.other: the object is not part of stream 's' (its "
                      "include list: shop, crm.People)"),
        ("other.t", "backfill of other.t: the object is not part of stream 's'"),
        ("shop.audit", "backfill of shop.audit: the object is excluded from stream 's'"),
        ("shop.AUDIT", "backfill of shop.AUDIT: the object is excluded from stream 's'"),
    ]:
        r = c.post(f"/streams/s/objects/{obj}:startBackfillJob")
        assert r.status_code == 400 and message in r.json()["message"], r.text
    # An included object gets past this check to the next: MongoDB's watermark collection
    # (said before connecting), PostgreSQL's source (unreachable here).
    for obj in ("shop.orders", "crm.people"):
        r = c.post(f"/streams/s/objects/{obj}:startBackfillJob")
        assert r.status_code == 400, r.text
        assert ("needs signal.data.collection=<db>.<collection>" if kind == "mongodb"
                else "cannot check the object on the source") in r.json()["message"], r.text
    assert not (stream_dir(svc.catalog.root, "s") / SIGNAL_FILE).exists()
    assert BackfillJobs(svc.catalog).jobs("s") == []
    if kind == "mongodb":  # lists the connector refuses: refused when the stream is created
        with pytest.raises(StreamSpecError, match="stream 'f': a MongoDB stream includes "
                           "databases and collections, not fields"):
            svc.catalog.create_stream(StreamSpec("f", "src", "out", include=(
                ObjectRef("shop", "orders", "total"),)))


def test_a_mongodb_stream_including_a_field_is_refused_at_creation(
    api: tuple[TestClient, Service], tmp_path: Path
) -> None:
    """Datastream's MongoDB source excludes fields only: a stream including one is refused
    when created (it used to be stored, then fail with a 500 when its objects were listed)."""
    c, svc = api
    assert _create(c, "m", {"mongodbProfile": {"hostAddresses": [{"hostname": "h"}]}}
                   ).status_code == 201
    assert _create(c, "out", {"destinationProfile": {"directory": str(tmp_path / "o")}}
                   ).status_code == 201
    include = {"databases": [{"database": "crm", "collections": [
        {"collection": "people", "fields": [{"field": "name"}]}]}]}
    r = _stream(c, "s", {"mongodbSourceConfig": {"includeObjects": include}})
    assert r.status_code == 400, r.text
    assert "stream 's': a MongoDB stream includes databases and collections, not fields" in \
        r.json()["message"]
    assert svc.catalog.streams() == []


def test_relational_source_config_fields_take_effect_or_are_refused(
    api: tuple[TestClient, Service], tmp_path: Path
) -> None:
    """Datastream's PostgresqlSourceConfig, MysqlSourceConfig and SqlServerSourceConfig
    fields beyond the object lists become the connector's properties, or are refused naming
    the field (they used to be dropped without a word)."""
    c, svc = api
    assert _create(c, "pg", {"postgresqlProfile": {"hostname": "h", "username": "u",
                                                   "database": "d"}}).status_code == 201
    assert _create(c, "my", {"mysqlProfile": {"hostname": "h", "username": "u"}}
                   ).status_code == 201
    assert _create(c, "out", {"destinationProfile": {"directory": str(tmp_path / "o")}}
                   ).status_code == 201
    config = {"includeObjects": {"postgresqlSchemas": [{"schema": "public"}]},
              "replicationSlot": "ds_slot", "publication": "ds_pub",
              "maxConcurrentBackfillTasks": 3}
    r = _stream(c, "p", {"postgresqlSourceConfig": config}, profile="pg")
    assert r.status_code == 201, r.text
    assert r.json()["sourceConfig"]["postgresqlSourceConfig"] == {
        **config, "excludeObjects": {"postgresqlSchemas": []}}
    assert svc.catalog.stream("p").spec.properties == {
        "slot.name": "ds_slot", "publication.name": "ds_pub",
        "publication.autocreate.mode": "disabled", "snapshot.max.threads": "3"}
    r = _stream(c, "m", {"mysqlSourceConfig": {"maxConcurrentCdcTasks": 5, "gtid": {}}},
                profile="my")
    assert r.status_code == 201, r.text
    assert svc.catalog.stream("m").spec.properties == {}

    refused: list[tuple[str, dict[str, Any], str]] = [
        ("pg", {"postgresqlSourceConfig": {"replicationSlot": ""}},
         "postgresqlSourceConfig.replicationSlot: '' is not a name"),
        ("pg", {"postgresqlSourceConfig": {"slot": "x"}},
         "postgresqlSourceConfig.slot: unknown field (postgresqlSourceConfig has "
         "includeObjects, excludeObjects, replicationSlot, publication, "
         "maxConcurrentBackfillTasks)"),
        ("my", {"mysqlSourceConfig": {"maxConcurrentCdcTasks": 99}},
         "mysqlSourceConfig.maxConcurrentCdcTasks: 99 is not 0 to 50"),
        ("my", {"mysqlSourceConfig": {"gtid": {"x": 1}}},
         "mysqlSourceConfig.gtid: expected an empty object"),
    ]
    for profile, source_config, message in refused:
        r = _stream(c, "bad", source_config, profile=profile)
        assert r.status_code == 400 and message in r.json()["message"], r.text
    r = _stream(c, "bad", {"postgresqlSourceConfig": {"replicationSlot": "a"}}, profile="pg",
                properties={"slot.name": "b"})
    assert r.status_code == 400 and "properties.slot.name=b contradicts" in r.text, r.text
    assert sorted(x.spec.name for x in svc.catalog.streams()) == ["m", "p"]
