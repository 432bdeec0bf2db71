"""`headwater serve`: start the service, serve HTTP(S) until Ctrl-C or SIGTERM, stop cleanly.

Why uvicorn's own signal handling: it finishes the requests in flight, then returns here,
and only then are the workers stopped (each drains and stores its offsets), so a clean stop
loses nothing and says so in one line.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any


class _Stopped(Exception):
    """SIGINT or SIGTERM, re-raised by uvicorn once it has shut down."""


def _stopped(_signum: int, _frame: Any) -> None:
    raise _Stopped


def serve(*, host: str, port: int, data_dir: Path, token: str | None = None,
          tls_cert: Path | None = None, tls_key: Path | None = None,
          log_level: str = "WARNING", log_format: str | None = None) -> int:
    import uvicorn
    from uvicorn.config import LOGGING_CONFIG

    from headwater.ops.logging import FORMAT_ENV, setup_logging
    from headwater.server.app import build_app
    from headwater.server.service import Service

    chosen = setup_logging(log_level, log_format)
    os.environ[FORMAT_ENV] = chosen  # inherited by the connector and stream workers
    worker_id = f"{socket.gethostname() if host in ('0.0.0.0', '::') else host}:{port}"
    svc = Service.open(data_dir, worker_id)
    app = build_app(svc, token=token)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level.lower(),
                            access_log=False, ssl_certfile=str(tls_cert) if tls_cert else None,
                            ssl_keyfile=str(tls_key) if tls_key else None,
                            lifespan="off", timeout_graceful_shutdown=10,
                            # json: uvicorn's loggers go through ours (one format per line)
                            log_config=None if chosen == "json" else LOGGING_CONFIG)
    server = uvicorn.Server(config)
    scheme = "https" if tls_cert else "http"
    # uvicorn handles the signals while it serves, then raises each again: here, so that a
    # SIGTERM too ends in the clean stop below rather than the default abrupt exit.
    signal.signal(signal.SIGINT, _stopped)
    signal.signal(signal.SIGTERM, _stopped)
    svc.start()
    print(f"headwater serve: {scheme}://{host}:{port}, data in {data_dir}", flush=True)
    try:
        server.run()
    except _Stopped:
        pass
    finally:
        n = len(svc.store.all())
        svc.close()
        logging.getLogger("headwater.server").info("stopped")
        print(f"headwater serve: stopped ({n} connectors stopped cleanly, offsets stored)",
              file=sys.stderr, flush=True)
    return 0 if server.started else 1
