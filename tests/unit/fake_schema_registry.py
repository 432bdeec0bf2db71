"""A small in-test schema registry following the documented Confluent Schema Registry REST API
(https://docs.confluent.io/platform/current/schema-registry/develop/api.html): register under a
subject, look up, fetch by id (with the optional `subject` parameter), list subjects, with
optional basic auth.  Other endpoints answer 404 as a registry without them does (e.g. the
subject associations that confluent-kafka 2.16's deserializer asks for first, falling back to
the topic name strategy).  Labelled as what it is:
not Confluent's server (no compatibility checks, no normalization beyond exact text)."""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


class FakeSchemaRegistry:
    def __init__(self, user_info: str | None = None) -> None:
        self.user_info = user_info
        self.schemas: list[str] = []  # id - 1 -> schema text
        self.subjects: dict[str, list[int]] = {}
        self.requests: list[tuple[str, str]] = []
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorized(self) -> bool:
                if registry.user_info is None:
                    return True
                want = "Basic " + base64.b64encode(registry.user_info.encode()).decode()
                if self.headers.get("Authorization") == want:
                    return True
                self._send(401, {"error_code": 401, "message": "Unauthorized"})
                return False

            def do_POST(self) -> None:
                registry.requests.append(("POST", self.path))
                if not self._authorized():
                    return
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                schema = body["schema"]
                parts = self.path.strip("/").split("/")
                if len(parts) == 3 and parts[0] == "subjects" and parts[2] == "versions":
                    subject = unquote(parts[1])
                    if schema not in registry.schemas:
                        registry.schemas.append(schema)
                    schema_id = registry.schemas.index(schema) + 1
                    versions = registry.subjects.setdefault(subject, [])
                    if schema_id not in versions:
                        versions.append(schema_id)
                    self._send(200, {"id": schema_id})
                elif len(parts) == 2 and parts[0] == "subjects":
                    subject = unquote(parts[1])
                    ids = registry.subjects.get(subject)
                    if ids is None:
                        self._send(404, {"error_code": 40401, "message": "Subject not found."})
                        return
                    for version, schema_id in enumerate(ids, 1):
                        if registry.schemas[schema_id - 1] == schema:
                            self._send(200, {"subject": subject, "id": schema_id,
                                             "version": version, "schema": schema})
                            return
                    self._send(404, {"error_code": 40403, "message": "Schema not found"})
                else:
                    self._send(404, {"error_code": 404, "message": "HTTP 404 Not Found"})

            def do_GET(self) -> None:
                registry.requests.append(("GET", self.path))
                if not self._authorized():
                    return
                url = urlsplit(self.path)
                parts = url.path.strip("/").split("/")
                if parts[:2] == ["schemas", "ids"] and len(parts) == 3:
                    # `subject` (the schema's subject context, which confluent-kafka's
                    # deserializer sends) selects nothing here: ids are global, as in the
                    # default context.  Anything else is not implemented: say so.
                    unknown = set(parse_qs(url.query)) - {"subject"}
                    if unknown:
                        self._send(400, {"error_code": 400, "message":
                                         f"unsupported parameters {sorted(unknown)}"})
                        return
                    schema_id = int(parts[2])
                    if 0 < schema_id <= len(registry.schemas):
                        self._send(200, {"schema": registry.schemas[schema_id - 1]})
                    else:
                        self._send(404, {"error_code": 40403, "message": "Schema not found"})
                elif parts == ["subjects"]:
                    self._send(200, sorted(registry.subjects))
                else:
                    self._send(404, {"error_code": 404, "message": "HTTP 404 Not Found"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeSchemaRegistry:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
