"""The offsets file on a full disk: a write that takes part of the document and then fails
(or answers with a short count) never replaces the last good offsets."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from headwater.engine.offsets import FileOffsetStore


def test_a_short_write_keeps_the_last_offsets_and_names_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileOffsetStore(tmp_path / "offsets.json", {"server": "s"})
    store.save({"lsn": 1})
    real_write = os.write
    calls = []

    def full(fd: int, data: bytes) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))  # a short count first
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)  # (the os module the offsets module writes with)
    with pytest.raises(OSError) as caught:
        store.save({"lsn": 2})
    monkeypatch.undo()
    assert caught.value.errno == errno.ENOSPC
    assert str(tmp_path / "offsets.json") in str(caught.value)
    assert len(calls) == 2  # the rest of the document was tried, not dropped
    assert store.load() == {"lsn": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["offsets.json"]
