"""A small file system for full-disk tests: a tmpfs mounted over a test's directory (the tests
run as root), and a filler file that takes its free space.  Why a real file system: a full
disk answers writes with ENOSPC (or a short count) at any write or fsync, which no
RLIMIT_FSIZE or mock reproduces faithfully."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path


class MountRefused(RuntimeError):
    """Mounting needs root (CAP_SYS_ADMIN)."""


@contextlib.contextmanager
def small_disk(path: Path, size_kb: int) -> Iterator[Path]:
    """A tmpfs of `size_kb` at `path`, unmounted afterwards."""
    if os.geteuid() != 0:
        raise MountRefused(f"mounting a tmpfs at {path} needs root")
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(path)],
                   check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(disk: Path, leave_kb: int) -> Path:
    """A filler file that leaves about `leave_kb` free on `disk` (less when writers race it:
    it stops at a full disk rather than failing); remove it to free space."""
    filler = disk / "filler"
    st = os.statvfs(disk)
    left = max(st.f_bavail * st.f_frsize - leave_kb * 1024, 0)
    chunk = b"\0" * (1 << 16)
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        while left > 0:
            try:
                left -= os.write(fd, chunk[:min(left, len(chunk))])
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
    finally:
        os.close(fd)
    return filler


def grow(disk: Path, size_kb: int) -> None:
    """Resizes the tmpfs at `disk` (space freed by an operator, beyond removing a filler)."""
    subprocess.run(["mount", "-o", f"remount,size={size_kb}k", str(disk)], check=True)
