"""The test MongoDB: a one-member replica set whose change streams carry pre-images."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.testing.localmongo import LocalMongo, local_mongo

pytestmark = pytest.mark.integration


def test_replica_set_streams_changes_with_pre_images() -> None:
    with local_mongo() as server:
        client = server.client()
        try:
            db = client.get_database("inventory")
            db.create_collection("customers", changeStreamPreAndPostImages={"enabled": True})
            with db.customers.watch(full_document_before_change="required") as stream:
                db.customers.insert_one({"_id": 1, "name": "a"})
                db.customers.update_one({"_id": 1}, {"$set": {"name": "b"}})
                insert, update = stream.next(), stream.next()
            assert insert["operationType"] == "insert"
            assert update["operationType"] == "update"
            assert update["fullDocumentBeforeChange"] == {"_id": 1, "name": "a"}
            assert update["updateDescription"]["updatedFields"] == {"name": "b"}
        finally:
            client.close()


def test_auth_refuses_anonymous_and_survives_restart() -> None:
    server = LocalMongo(auth=True).start()
    try:
        import pymongo
        anonymous: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
            f"mongodb://127.0.0.1:{server.port}/?replicaSet=rs0", serverSelectionTimeoutMS=3000)
        try:
            with pytest.raises(pymongo.errors.OperationFailure):
                anonymous.inventory.c.insert_one({"x": 1})
        finally:
            anonymous.close()
        server.restart()
        client = server.client()
        try:
            client.inventory.c.insert_one({"x": 1})
            assert client.inventory.c.count_documents({}) == 1
        finally:
            client.close()
    finally:
        server.cleanup()
