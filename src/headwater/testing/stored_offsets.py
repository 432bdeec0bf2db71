"""What a connector's offsets file (`offset.storage.file.filename`) says, for tests that wait
on it from outside the capture (another thread or process).

Why not "the file exists": a data snapshot stores an offset before its first read, with
`snapshot_completed` false and `snapshot_started` (engine/supersede.py), so a row written
once the file appears may still be read by the snapshot.  Wait on what the offset says.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson


def stored_offset(path: Path) -> dict[str, Any]:
    """The stored offset ({} while none is stored).  The file is replaced by rename, never
    seen half-written."""
    try:
        doc = orjson.loads(Path(path).read_bytes())
    except FileNotFoundError:
        return {}
    offset = doc.get("offset") if isinstance(doc, dict) else None
    return dict(offset) if isinstance(offset, dict) else {}


def snapshot_completed(path: Path) -> bool:
    """The stored offset is past the snapshot: its completing offset (`snapshot_completed`
    true) or a streaming one after it, not the marker stored before the first read."""
    offset = stored_offset(path)
    return bool(offset) and offset.get("snapshot_completed") is not False
