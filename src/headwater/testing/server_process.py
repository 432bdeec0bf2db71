"""The life cycle a throwaway test database server run as a child process shares
(localmariadb.LocalMariaDB, localmongo.LocalMongo): stop cleanly, kill -9 as a crash would,
restart, and remove its directory.  The server class starts the process (`start`, setting
`_proc`) and names its directory (`base`) and log file (`log_file`).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
from pathlib import Path


class ServerProcess:
    base: Path
    log_file: Path
    _proc: subprocess.Popen[bytes] | None

    def start(self, timeout: float = 60.0) -> object:
        raise NotImplementedError

    def _log_tail(self) -> str:
        return self.log_file.read_text()[-3000:] if self.log_file.exists() else ""

    def stop(self, timeout: float = 60.0) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)  # a clean shutdown
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def kill(self) -> None:
        """Stops the server abruptly (kill -9), as a crash would."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def restart(self) -> None:
        self.stop()
        self.start()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)
