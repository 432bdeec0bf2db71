"""One process per directory: an exclusive `flock` on a lock file that names its holder.

Why flock: the kernel releases it when the holder dies (kill -9 included), so a crashed
writer never leaves a stale lock to clean up by hand, and the pid written into the file lets
the refusal say who holds it.  The topic log's writer and `headwater serve`'s data directory
both use it.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path


class LockHeld(OSError):
    """Another process holds the lock; `holder` is the pid it wrote (may be empty)."""

    def __init__(self, path: Path, holder: str) -> None:
        super().__init__(errno.EWOULDBLOCK, f"{path} is held"
                         + (f" by pid {holder}" if holder else ""))
        self.path = path
        self.holder = holder


def hold(path: Path) -> int:
    """Take the lock file `path` (created if missing) and write our pid into it; the locked
    fd, whose closing releases the lock.  LockHeld if another process has it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = b""
        try:
            holder = os.pread(fd, 64, 0).strip()
        finally:
            os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise
        raise LockHeld(path, holder.decode(errors="replace")) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd
