"""`FastRawDocument`: the document class of the connector's readers (snapshot, change stream).

Why a subclass of pymongo's RawBSONDocument: the encoder walks documents from their BSON bytes
(exact for every type, see extended_json), so documents must stay raw; but a change event is
read field by field (cluster time, namespace, documentKey, fullDocument, updateDescription...)
and RawBSONDocument pays for that in Python on every event: its constructor re-validates the
size pymongo's C decoder has just checked (it runs for every event and every sub-document the
event is inflated into), and `get` goes through the Mapping mixin's `__getitem__` and a raised
KeyError for every absent field.  This class keeps RawBSONDocument's state (its slots, so every
inherited method works unchanged) and replaces those two paths; the C decoder creates it like
RawBSONDocument (it recognises the inherited `_type_marker`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from bson.codec_options import CodecOptions, DatetimeConversion
from bson.raw_bson import RawBSONDocument, _inflate_bson

__all__ = ["FAST_RAW_OPTIONS", "RAW_TYPES", "FastRawDocument", "fields_of"]


class FastRawDocument(RawBSONDocument):
    """A RawBSONDocument without the constructor's re-validation, with a dict-speed `get`."""

    __slots__ = ()

    def __init__(self, bson_bytes: bytes | memoryview,
                 codec_options: CodecOptions[Any] | None = None) -> None:
        # RawBSONDocument's private slots (name-mangled), set as its __init__ sets them.
        self._RawBSONDocument__raw = bson_bytes
        self._RawBSONDocument__inflated_doc: Mapping[str, Any] | None = None
        self._RawBSONDocument__codec_options: CodecOptions[Any] = (
            codec_options if codec_options is not None else FAST_RAW_OPTIONS)

    def fields(self) -> Mapping[str, Any]:
        """The top-level fields (sub-documents stay raw), decoded once by pymongo's C code."""
        doc = self._RawBSONDocument__inflated_doc
        if doc is None:
            doc = self._RawBSONDocument__inflated_doc = _inflate_bson(
                self._RawBSONDocument__raw, self._RawBSONDocument__codec_options)
        return doc

    def __getitem__(self, item: str) -> Any:
        return self.fields()[item]

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields().get(key, default)


FAST_RAW_OPTIONS: Final[CodecOptions[FastRawDocument]] = CodecOptions(
    document_class=FastRawDocument, datetime_conversion=DatetimeConversion.DATETIME_MS)
"""Raw documents; a top-level date (an event's wallTime) as DatetimeMS: milliseconds without a
datetime round trip (and none of datetime's range limits)."""

RAW_TYPES: Final = frozenset({RawBSONDocument, FastRawDocument})
"""The exact types the encoder's raw path takes (a `type(x) in` test: isinstance on these
Mapping ABC subclasses goes through ABCMeta)."""


def fields_of(doc: Any) -> Any:
    """A change event's top-level fields as a dict when it is a FastRawDocument (else itself:
    any Mapping works, only slower)."""
    return doc.fields() if type(doc) is FastRawDocument else doc
