"""SQL Server log sequence numbers: 10 bytes (VLF:block:slot), written "xxxxxxxx:xxxxxxxx:xxxx".

Why a module: CDC hands LSNs over as `binary(10)`; Debezium writes them in offsets and in the
`source` block as lower-case hex in three groups (its `Lsn.toString`), and the poller compares
them as bytes.  Both forms sort the same, so the text is also a valid ordering key.
"""

from __future__ import annotations

from typing import Final

LSN_BYTES: Final = 10
ZERO: Final = bytes(LSN_BYTES)


def lsn_text(lsn: bytes | None) -> str | None:
    """`binary(10)` -> "00000027:00000758:0003" (None stays None)."""
    if lsn is None:
        return None
    raw = bytes(lsn).rjust(LSN_BYTES, b"\0")
    return f"{raw[:4].hex()}:{raw[4:8].hex()}:{raw[8:10].hex()}"


def lsn_bytes(text: str | None) -> bytes | None:
    """"00000027:00000758:0003" -> `binary(10)`; None and "NULL" are None."""
    if text is None or text.upper() == "NULL":
        return None
    digits = text.replace(":", "")
    if len(digits) != 2 * LSN_BYTES:
        raise ValueError(f"not an SQL Server LSN: {text!r}")
    return bytes.fromhex(digits)


def increment(lsn: bytes) -> bytes:
    """The next LSN (sys.fn_cdc_increment_lsn), for a caller that has no server at hand."""
    value = int.from_bytes(lsn, "big") + 1
    return value.to_bytes(LSN_BYTES, "big")
