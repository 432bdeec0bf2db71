"""Db2 SQL Replication sequence values (IBMSNAP_COMMITSEQ, IBMSNAP_INTENTSEQ, SYNCHPOINT).

Why a module: Db2 hands them over as `FOR BIT DATA` bytes (10 bytes on the tables this
connector was written against, 16 on Debezium's own test setup); Debezium writes them in the
`source` block and the offsets as lower-case hex with a colon after bytes 4 and 8 (its
`Lsn.toString`), and compares them as unsigned bytes.  Both forms sort the same for one width.
"""

from __future__ import annotations


def lsn_text(lsn: bytes | None) -> str | None:
    """b"\\x00...\\x2a" -> "00000000:00000000:002a" (None stays None)."""
    if lsn is None:
        return None
    raw = bytes(lsn).hex()
    parts = [raw[:8], raw[8:16], raw[16:]]
    return ":".join(p for p in parts if p)


def lsn_bytes(text: str | None) -> bytes | None:
    """"00000000:00000000:002a" -> bytes; None and "NULL" are None (Debezium's Lsn.valueOf)."""
    if text is None or text.upper() == "NULL":
        return None
    return bytes.fromhex(text.replace(":", ""))


def increment(lsn: bytes) -> bytes:
    """The next value of the same width (Debezium's Lsn.increment, which widens the result to
    16 bytes; keeping the width compares correctly with CD tables of either width)."""
    value = int.from_bytes(lsn, "big") + 1
    return value.to_bytes(len(lsn), "big")
