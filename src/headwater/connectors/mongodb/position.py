"""Where a MongoDB change sits in the change stream, the offsets a restart resumes from, and the
`source` block Debezium derives from both.

A change stream event's resume token says exactly where it is: `resumeAfter` it continues with
the next event, even inside a multi-document transaction (the token carries the operation's
index in the transaction).  So the offset is the resume token of the last durable event, stored
as Debezium stores it (`resume_token`: base64 of the token document's BSON), with its cluster
time (`sec`, `ord`), the session and transaction number of a transaction (`lsid`,
`txnNumber`) and, while the initial snapshot runs, `initsync` (MongoDbOffsetContext).  Debezium
writes ``sec``/``ord`` of -1 when the offset came from a cursor's post-batch token; Headwater
decodes them from the token instead (docs/mongodb.md).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, NamedTuple

import bson
from bson.raw_bson import RawBSONDocument
from bson.timestamp import Timestamp

from headwater.connectors.mongodb.extended_json import document_json
from headwater.model.record import ChangeRecord
from headwater.model.source_block import source_fields, source_schema

RESUME_TOKEN = "resume_token"
SEC = "sec"
ORD = "ord"
INITSYNC = "initsync"
LSID = "lsid"
TXN_NUMBER = "txnNumber"
# Headwater's own: the snapshot finished (a restart streams, it does not snapshot again).
SNAPSHOT_COMPLETED = "snapshot_completed"


class MongoPosition(NamedTuple):
    """A change's place: cluster time (sec, ord), resume token, transaction, wall time."""

    sec: int
    ord: int
    resume_token: str | None  # base64 of the token's BSON (Debezium's offset form)
    lsid: str | None = None
    txn_number: int | None = None
    wall_time: int = 0  # ms since the epoch; 0 when the server does not send it

    @property
    def order_key(self) -> tuple[int, int, int]:
        """(sec, ord, operation index in its transaction): the events of one transaction share
        their cluster time, and only the resume token tells them apart (Datastream's sort_keys
        and uuid are made from this)."""
        return (self.sec, self.ord, txn_op_index(self.resume_token))

    def source_fields(self) -> dict[str, Any]:
        return {"ord": self.ord, "lsid": self.lsid, "txnNumber": self.txn_number,
                "wallTime": self.wall_time or None}

    @property
    def tx_id(self) -> str | None:
        """Debezium's transaction id: ``<lsid>:<txnNumber>`` (MongoDbEventMetadataProvider)."""
        if self.lsid is None and self.txn_number is None:
            return None
        if self.lsid is None:
            return str(self.txn_number)
        if self.txn_number is None:
            return self.lsid
        return f"{self.lsid}:{self.txn_number}"


# -- resume tokens -----------------------------------------------------------------------------

def token_to_base64(token: Mapping[str, Any]) -> str:
    """A resume token document as Debezium stores it (ResumeTokens.toBase64)."""
    raw = token.raw if isinstance(token, RawBSONDocument) else bson.encode(token)
    return base64.b64encode(raw).decode("ascii")


def token_from_offset(text: str) -> dict[str, Any]:
    """The resume token document of an offset: base64 BSON, or (Debezium's old offsets) the
    `_data` hex string itself."""
    try:
        doc = bson.decode(base64.b64decode(text, validate=True))
        if "_data" in doc:
            return dict(doc)
    except Exception:  # not base64 BSON: the old format
        pass
    return {"_data": text}


# KeyString type bytes of the numbers a resume token holds (MongoDB's key_string.cpp): zero,
# then positive integers of 1..8 bytes (the value shifted left by one bit).
_KS_ZERO = 41
_KS_POSITIVE_INT = range(43, 51)


def _ks_int(raw: bytes, at: int) -> tuple[int, int]:
    """(value, next offset) of the KeyString integer at `at`."""
    kind = raw[at]
    if kind == _KS_ZERO:
        return 0, at + 1
    if kind in _KS_POSITIVE_INT:
        size = kind - _KS_POSITIVE_INT.start + 1
        return int.from_bytes(raw[at + 1:at + 1 + size], "big") >> 1, at + 1 + size
    raise ValueError(f"byte {at} of the resume token: KeyString type {kind} is no small "
                     "non-negative integer")


def token_txn_op_index(data: bytes) -> int:
    """The `txnOpIndex` of a resume token's `_data` (ResumeTokenData: clusterTime, version,
    [tokenType,] txnOpIndex, ...): 0 outside transactions, the operation's index inside."""
    if len(data) < 9 or data[0] != 130:
        raise ValueError("the resume token does not start with a timestamp")
    version, at = _ks_int(data, 9)
    if version >= 1:
        _token_type, at = _ks_int(data, at)
    index, _ = _ks_int(data, at)
    return index


@lru_cache(maxsize=256)  # a snapshot's records all share one token
def txn_op_index(resume_token: str | None) -> int:
    """`token_txn_op_index` of a position's resume token (base64 BSON); 0 without one."""
    if resume_token is None:
        return 0
    data = token_from_offset(resume_token).get("_data")
    raw = bytes.fromhex(data) if isinstance(data, str) else bytes(data or b"")
    return token_txn_op_index(raw)


def token_time(token: Mapping[str, Any]) -> tuple[int, int]:
    """The cluster time (seconds, increment) a resume token is at (ResumeTokens.getTimestamp):
    its `_data` starts with the canonical type 130 and the 8-byte timestamp."""
    data = token.get("_data")
    raw = bytes.fromhex(data) if isinstance(data, str) else bytes(data or b"")
    if len(raw) < 9 or raw[0] != 130:
        raise ValueError(f"resume token {dict(token)!r} does not start with a timestamp")
    return int.from_bytes(raw[1:5], "big"), int.from_bytes(raw[5:9], "big")


def lsid_json(lsid: Mapping[str, Any]) -> str:
    """A session id as Debezium writes `source.lsid` (and the transaction id's first part):
    the dialect of `before`/`after` (Extended JSON v1 strict, `,` between elements, binary as
    ``{"$binary": <base64>,"$type": "04"}``), as the differential test against Debezium 3.6
    shows.  A RawBSONDocument is encoded from its bytes."""
    return document_json(lsid)


# -- offsets -------------------------------------------------------------------------------------

def stream_offset(position: MongoPosition, *, snapshot_completed: bool = True) -> dict[str, Any]:
    """The offset that resumes after `position` (MongoDbOffsetContext.getOffset)."""
    offset: dict[str, Any] = {SEC: position.sec, ORD: position.ord}
    if position.lsid is not None or position.txn_number is not None:
        offset[LSID] = position.lsid
        offset[TXN_NUMBER] = position.txn_number
    if position.resume_token is not None:
        offset[RESUME_TOKEN] = position.resume_token
    if snapshot_completed:
        offset[SNAPSHOT_COMPLETED] = True
    return offset


def offset_time(offset: Mapping[str, Any] | None) -> Timestamp | None:
    """The operation time an offset without a resume token starts at: its `sec`/`ord`
    (Debezium's MongoDbStreamingChangeEventSource resumes after the token, else starts at the
    offset's timestamp, else at capture.start.op.time).  Headwater writes such an offset for
    a stream's start position (streams/positions.py); None when there is a token or no time."""
    if not offset or offset.get(RESUME_TOKEN):
        return None
    sec, inc = offset.get(SEC), offset.get(ORD)
    if isinstance(sec, int) and isinstance(inc, int) and sec >= 0 and inc >= 0:
        return Timestamp(sec, inc)
    return None


def token_position(token: Mapping[str, Any]) -> MongoPosition:
    """The position of a resume token without an event (a cursor's post-batch token)."""
    sec, inc = token_time(token)
    return MongoPosition(sec, inc, token_to_base64(token))


# -- the source block --------------------------------------------------------------------------

MONGODB_SOURCE_SCHEMA = source_schema(
    "io.debezium.connector.mongo.Source",
    *source_fields("collection: string, ord: int32, lsid: string?, txnNumber: int64?, "
                   "wallTime: int64?"),
    version=1,
)


class MongoDbSourceBlock:
    """`io.debezium.connector.mongo.Source` for a record with a MongoPosition
    (MongoDbSourceInfoStructMaker)."""

    def __init__(self, kind: str = "mongodb") -> None:
        self.kind = kind
        self.schema = MONGODB_SOURCE_SCHEMA

    def payload(self, record: ChangeRecord) -> dict[str, Any]:
        pos: MongoPosition = record.position
        table = record.table.id
        ts = record.source_ts_ms
        return {
            "version": record.context.connector_version,
            "connector": record.context.kind,
            "name": record.context.server_name,
            "ts_ms": ts,
            "snapshot": record.snapshot,
            "db": table.database,
            "sequence": None,
            "ts_us": ts * 1000,
            "ts_ns": ts * 1_000_000,
            "collection": table.table,
            "ord": pos.ord,
            "lsid": pos.lsid,
            "txnNumber": pos.txn_number,
            "wallTime": pos.wall_time or None,
        }
