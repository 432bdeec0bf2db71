"""A Confluent Schema Registry client: the two calls a producer needs, cached.

`POST /subjects/{subject}/versions` registers a schema (or returns the id of the identical one
already there), `POST /subjects/{subject}` looks one up without registering
(`auto.register.schemas=false`), `GET /schemas/ids/{id}` fetches a schema by id (readers and
tests).  Results are cached per (subject, schema text): a schema is sent once per run, not once
per record.  Plain urllib, no locks, so the converter stays picklable for parallel snapshots.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class SchemaRegistryError(RuntimeError):
    """The registry refused a call (its error code and message are in the text)."""


class SchemaRegistryClient:
    def __init__(self, urls: list[str], user_info: str | None = None,
                 timeout_s: float = 30.0) -> None:
        self.urls = [u.rstrip("/") for u in urls]
        self.user_info = user_info
        self.timeout_s = timeout_s
        self._ids: dict[tuple[str, str], int] = {}
        self._schemas: dict[int, str] = {}

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        last: Exception | None = None
        for base in self.urls:
            parsed = urllib.parse.urlsplit(base)
            user_info = self.user_info
            if parsed.username is not None and user_info is None:
                user_info = f"{urllib.parse.unquote(parsed.username)}:" \
                            f"{urllib.parse.unquote(parsed.password or '')}"
            netloc = parsed.hostname or ""
            if parsed.port is not None:
                netloc += f":{parsed.port}"
            url = urllib.parse.urlunsplit((parsed.scheme, netloc, parsed.path + path, "", ""))
            request = urllib.request.Request(url, data=data, method=method, headers={
                "Content-Type": _CONTENT_TYPE, "Accept": _CONTENT_TYPE})
            if user_info:
                token = base64.b64encode(user_info.encode()).decode()
                request.add_header("Authorization", f"Basic {token}")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    return json.loads(response.read() or b"null")
            except urllib.error.HTTPError as exc:
                text = exc.read().decode(errors="replace")
                try:
                    detail = json.loads(text)
                    message = f"{detail.get('error_code')}: {detail.get('message')}"
                except ValueError:
                    message = text[:200]
                raise SchemaRegistryError(
                    f"schema registry {method} {path}: HTTP {exc.code} {message}") from None
            except OSError as exc:  # try the next URL, as Confluent's client does
                last = exc
        raise SchemaRegistryError(f"schema registry unreachable ({', '.join(self.urls)}): {last}")

    def register(self, subject: str, schema: str) -> int:
        key = (subject, schema)
        found = self._ids.get(key)
        if found is None:
            subject_path = urllib.parse.quote(subject, safe="")
            reply = self._request("POST", f"/subjects/{subject_path}/versions",
                                  {"schema": schema})
            found = self._ids[key] = int(reply["id"])
            self._schemas[found] = schema
        return found

    def lookup(self, subject: str, schema: str) -> int:
        key = (subject, schema)
        found = self._ids.get(key)
        if found is None:
            subject_path = urllib.parse.quote(subject, safe="")
            reply = self._request("POST", f"/subjects/{subject_path}", {"schema": schema})
            found = self._ids[key] = int(reply["id"])
        return found

    def schema_by_id(self, schema_id: int) -> str:
        found = self._schemas.get(schema_id)
        if found is None:
            found = self._schemas[schema_id] = str(
                self._request("GET", f"/schemas/ids/{schema_id}")["schema"])
        return found
