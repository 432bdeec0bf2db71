"""A connector running in a background thread of the calling process (tests, demos)."""

from __future__ import annotations

import threading
from pathlib import Path

from headwater.capture import load_connector_config


class Capture:
    def __init__(self, config_path: Path) -> None:
        from headwater.capture import build_runtime

        self.config = load_connector_config(config_path)
        self.runtime = build_runtime(self.config)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.runtime.run()
        except BaseException as exc:
            self.error = exc

    def start(self) -> Capture:
        self.thread.start()
        return self

    def stop(self, timeout: float = 60) -> None:
        """Stops gracefully and re-raises what the connector failed with, if anything."""
        self.runtime.stop()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "capture did not stop"
        if self.error is not None:
            raise self.error
