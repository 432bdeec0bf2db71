"""The MongoDB driver: a fresh database per test on a shared one-member replica set.

The suite speaks a small portable SQL; this driver translates the statements the workloads use
(``INSERT INTO t VALUES (...), ...``, ``UPDATE t SET c = v[, c = c + 1] WHERE id = v``,
``DELETE FROM t WHERE id = v | id IN (...)``) into document writes, a statement list being one
multi-document transaction.  The key column `id` is the document's `_id`.

Events are made relational-shaped for the harness (`normalize`): the key's `id` and the
`before`/`after` JSON texts parsed, `_id` named `id`.  Collections have pre- and post-images
enabled and the connector reads them (`change_streams_update_full_with_pre_image`,
`post_image`): an update's `after` is the document as that change left it, not a later lookup.

`snapshot_overlap`: the change stream resumes from the point taken *before* the snapshot, so a
change the snapshot already saw may come again from the stream (Debezium's MongoDB hand-over
does the same); the histories check accepts that repeat, never a gap.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from headwater.testing.localmongo import LocalMongo

from ..driver import Column, Statement, TypeCase, debezium_topic

_counter = itertools.count()
_INSERT = re.compile(r"INSERT INTO (\S+) VALUES\s*(.+)$", re.I | re.S)
_UPDATE = re.compile(r"UPDATE (\S+) SET (.+?) WHERE (\w+)\s*=\s*(.+)$", re.I | re.S)
_DELETE = re.compile(r"DELETE FROM (\S+) WHERE (\w+)\s*(=|IN)\s*(.+)$", re.I | re.S)


def _literal(value: Any) -> str:
    if value is None:
        return "None"
    return repr(value)


def _bind(sql: str, params: Sequence[Any] | None) -> str:
    if not params:
        return sql
    parts = sql.split("%s")
    assert len(parts) == len(params) + 1, sql
    return "".join(p + (_literal(params[i]) if i < len(params) else "")
                   for i, p in enumerate(parts))


def _value(text: str) -> Any:
    return ast.literal_eval(re.sub(r"\bNULL\b", "None", text.strip(), flags=re.I))


class MongoDriver:
    name = "mongodb"
    key_change_headers = False  # _id is immutable: no key changes
    prefix = "conf"
    snapshot_overlap = True

    def __init__(self, server: LocalMongo) -> None:
        self.server = server
        self.db_name = f"conf_{next(_counter)}"
        self.client = server.client()
        self.db = self.client[self.db_name]
        self.columns: dict[str, list[str]] = {}

    def properties(self, topics: Path, offsets: Path, tables: Sequence[str] | None = None,
                   extra: Mapping[str, object] | None = None) -> dict[str, str]:
        props = {
            "name": "conformance-mongodb",
            "connector.class": "io.debezium.connector.mongodb.MongoDbConnector",
            "mongodb.connection.string": self.server.connection_string,
            "database.include.list": self.db_name,
            "topic.prefix": self.prefix,
            "capture.mode": "change_streams_update_full_with_pre_image",
            "capture.mode.full.update.type": "post_image",
            "offset.storage.file.filename": str(offsets),
            "headwater.topics.dir": str(topics),
            "headwater.topics.segment.ms": "200",
            "poll.interval.ms": "100",
            "cursor.max.await.time.ms": "100",
        }
        if tables is not None:
            props["collection.include.list"] = ",".join(
                f"{re.escape(self.db_name)}\\.{re.escape(t)}" for t in tables)
        props.update({k: str(v) for k, v in (extra or {}).items()})
        return props

    def create_table(self, name: str, columns: Sequence[Column], key: Sequence[str]) -> None:
        assert list(key) == ["id"], "documents are keyed by _id"
        self.db.create_collection(name, changeStreamPreAndPostImages={"enabled": True})
        self.columns[name] = [c.name for c in columns]

    # -- the SQL subset ---------------------------------------------------------------------------
    def _operations(self, sql: str) -> list[tuple[str, str, Any, Any]]:
        sql = sql.strip()
        m = _INSERT.match(sql)
        if m:
            table = self._table(m[1])
            rows = _value("[" + m[2] + "]")
            names = self.columns[table]
            return [("insert", table, dict(zip(["_id" if n == "id" else n for n in names],
                                               row if isinstance(row, tuple) else (row,),
                                               strict=True)), None) for row in rows]
        m = _UPDATE.match(sql)
        if m:
            table, sets, incs = self._table(m[1]), {}, {}
            for assignment in m[2].split(","):
                column, _, expr = assignment.partition("=")
                column, expr = column.strip(), expr.strip()
                inc = re.fullmatch(rf"{re.escape(column)}\s*\+\s*(\d+)", expr)
                if inc:
                    incs[column] = int(inc[1])
                else:
                    sets[column] = _value(expr)
            update: dict[str, Any] = {}
            if sets:
                update["$set"] = sets
            if incs:
                update["$inc"] = incs
            return [("update", table, {"_id": _value(m[4])}, update)]
        m = _DELETE.match(sql)
        if m:
            value = _value(m[4])
            query = {"_id": {"$in": list(value)}} if m[3].upper() == "IN" else {"_id": value}
            return [("delete", self._table(m[1]), query, None)]
        raise NotImplementedError(f"the MongoDB driver does not translate: {sql}")

    def _table(self, quoted: str) -> str:
        return quoted.strip("`\"")

    def _apply(self, operations: list[tuple[str, str, Any, Any]], session: Any) -> None:
        for kind, table, doc, update in operations:
            coll = self.db[table]
            if kind == "insert":
                coll.insert_one(doc, session=session)
            elif kind == "update":
                coll.update_many(doc, update, session=session)
            else:
                coll.delete_many(doc, session=session)

    def execute(self, *statements: Statement) -> None:
        operations = []
        for s in statements:
            sql, params = (s, None) if isinstance(s, str) else s
            operations.extend(self._operations(_bind(sql, params)))
        if len(operations) == 1:
            self._apply(operations, None)
            return
        with self.client.start_session() as session:
            session.with_transaction(lambda s: self._apply(operations, s))

    def connect(self) -> Any:
        return _Connection(self)

    def quote(self, name: str) -> str:
        return "`" + name + "`"

    def topic(self, table: str) -> str:
        return debezium_topic(self.prefix, self.db_name, table)

    def collection(self, table: str) -> str:
        return f"{self.db_name}.{table}"

    def rows(self, table: str) -> list[dict[str, Any]]:
        return [_relational(d) for d in self.db[table].find()]

    def restart_server(self) -> None:
        self.client.close()
        self.server.restart()
        self.client = self.server.client()
        self.db = self.client[self.db_name]

    def types_table(self) -> list[TypeCase]:
        return []

    def normalize(self, key: Any, value: Any) -> tuple[Any, Any]:
        """A MongoDB event as the suite reads relational ones (see the module doc)."""
        if isinstance(key, dict) and isinstance(key.get("id"), str):
            key = {"id": json.loads(key["id"])}
        if isinstance(value, dict):
            value = dict(value)
            for image in ("before", "after"):
                if isinstance(value.get(image), str):
                    value[image] = _relational(json.loads(value[image]))
        return key, value

    def close(self) -> None:
        try:
            self.client.drop_database(self.db_name)
        finally:
            self.client.close()


def _relational(doc: dict[str, Any]) -> dict[str, Any]:
    return {("id" if k == "_id" else k): v for k, v in doc.items()}


class _Cursor:
    def __init__(self, conn: _Connection) -> None:
        self.conn = conn

    def __enter__(self) -> _Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        self.conn.pending.extend(self.conn.driver._operations(_bind(sql, params)))


class _Connection:
    """DB-API-shaped: statements gather until `commit`, which runs them as one transaction.

    No retried writes and no transaction retry: like a DB-API connection, it fails while the
    server is away (the reconnect scenario counts those failures)."""

    def __init__(self, driver: MongoDriver) -> None:
        self.driver = driver
        self.client = driver.server.client(retryWrites=False, serverSelectionTimeoutMS=100)
        self.pending: list[tuple[str, str, Any, Any]] = []

    def cursor(self) -> _Cursor:
        return _Cursor(self)

    def commit(self) -> None:
        operations, self.pending = self.pending, []
        db = self.client[self.driver.db_name]
        with self.client.start_session() as session, session.start_transaction():
            for kind, table, doc, update in operations:
                coll = db[table]
                if kind == "insert":
                    coll.insert_one(doc, session=session)
                elif kind == "update":
                    coll.update_many(doc, update, session=session)
                else:
                    coll.delete_many(doc, session=session)

    def close(self) -> None:
        self.client.close()
