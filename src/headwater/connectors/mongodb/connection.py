"""The pymongo client of a configuration, and which of its errors a reconnect can fix.

Why here: the connection string is a secret; this is the one place that reveals it (to
pymongo), and every message about the connection names the server by the masked string.
"""

from __future__ import annotations

from typing import Any, Final

import pymongo
from bson.codec_options import DatetimeConversion
from pymongo import errors

from headwater.connectors.mongodb.config import MongoDbConnectorConfig, credentials
from headwater.connectors.mongodb.rawdoc import FastRawDocument

# Errors of a server or network that is away for now: the runtime reconnects.
TRANSIENT_ERRORS: Final = (errors.AutoReconnect, errors.ConnectionFailure,
                           errors.ServerSelectionTimeoutError, errors.NetworkTimeout,
                           errors.NotPrimaryError, errors.ExecutionTimeout)
# ChangeStreamHistoryLost: the resume point is no longer in the oplog.
HISTORY_LOST: Final = 286
# The server ended the reader's cursor or operation (killCursors, killOp, an idle cursor's
# timeout): CursorNotFound, Interrupted, CursorKilled.  They carry no retriable label, but
# reopening the stream after the stored token loses nothing (the fault harness's
# change-stream-kill trials stopped the capture with exit 1 on CursorKilled before).
ENDED_BY_SERVER: Final = (43, 11601, 237)
# The server's own retriable labels on a failed command.
RETRIABLE_LABELS: Final = ("ResumableChangeStreamError", "RetryableWriteError",
                           "TransientTransactionError")

# The client options of the change stream reader: documents stay BSON bytes, which the encoder
# walks exactly and without building Python objects (extended_json), in the cheaper
# RawBSONDocument of rawdoc.py; the event's own top-level dates (wallTime) come as DatetimeMS.
RAW_DOCUMENTS: Final = {"document_class": FastRawDocument,
                        "datetime_conversion": DatetimeConversion.DATETIME_MS}


def uri_options(uri: str) -> set[str]:
    """The option names given in a connection string's query (lower case, as MongoDB's URI
    options are case-insensitive); parsed by hand: pymongo's parser resolves `mongodb+srv`
    names through DNS."""
    query = uri.partition("?")[2].partition("#")[0]
    return {part.partition("=")[0].strip().lower()
            for part in query.replace(";", "&").split("&") if part.strip()}


# Each client option set from a property, and the URI options that set it too.
_URI_NAMES: Final = {
    "connectTimeoutMS": ("connecttimeoutms",),
    "serverSelectionTimeoutMS": ("serverselectiontimeoutms",),
    "heartbeatFrequencyMS": ("heartbeatfrequencyms",),
    "socketTimeoutMS": ("sockettimeoutms",),
    "appname": ("appname",),
    "tls": ("tls", "ssl"),
    "tlsAllowInvalidHostnames": ("tlsallowinvalidhostnames", "tlsinsecure"),
}


def client(cfg: MongoDbConnectorConfig, **extra: Any) -> Any:
    """A client of the configured deployment (not yet connected: pymongo connects lazily).

    Options the connection string sets win over the properties, as in Debezium (its client
    factory applies the properties, then the connection string): pymongo does the opposite
    with keyword arguments, so a property's option is left out where the URI has it."""
    options: dict[str, Any] = {
        "connectTimeoutMS": cfg.mongodb_connect_timeout_ms,
        "serverSelectionTimeoutMS": cfg.mongodb_server_selection_timeout_ms,
        "heartbeatFrequencyMS": cfg.mongodb_heartbeat_frequency_ms,
        "appname": f"headwater-{cfg.topic_prefix}",
        # A date outside datetime's range (years before 1 or after 9999, legal in BSON) comes
        # as DatetimeMS wherever a document is decoded, never as an error: a change event
        # decoded on any path (the resume token probe's first batch too) must not stop capture.
        "datetime_conversion": DatetimeConversion.DATETIME_AUTO,
        **credentials(cfg),
        **extra,
    }
    if cfg.mongodb_socket_timeout_ms:
        options["socketTimeoutMS"] = cfg.mongodb_socket_timeout_ms
    if cfg.mongodb_ssl_enabled:
        options["tls"] = True
        if cfg.mongodb_ssl_invalid_hostname_allowed:
            options["tlsAllowInvalidHostnames"] = True
    uri = cfg.mongodb_connection_string.reveal()
    given = uri_options(uri)
    for option, names in _URI_NAMES.items():
        if option not in extra and given.intersection(names):
            options.pop(option, None)
    return pymongo.MongoClient(uri, **options)


def transient(exc: BaseException) -> bool:
    """Whether a pymongo error is one a reconnect can fix."""
    if isinstance(exc, TRANSIENT_ERRORS):
        return True
    if isinstance(exc, errors.OperationFailure):
        if exc.code == HISTORY_LOST:
            return False
        if exc.code in ENDED_BY_SERVER:
            return True
        return any(exc.has_error_label(label) for label in RETRIABLE_LABELS)
    return False


def scrub(text: str, cfg: MongoDbConnectorConfig) -> str:
    """`text` with the connection string and passwords replaced (error messages may quote
    the URI)."""
    secret = cfg.mongodb_connection_string.reveal()
    text = text.replace(secret, cfg.masked_connection_string())
    for value in (cfg.mongodb_password.reveal() if cfg.mongodb_password else None,):
        if value:
            text = text.replace(value, "********")
    return text
