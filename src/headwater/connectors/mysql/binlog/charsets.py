"""Collation ids and charset names to Python codecs, for decoding text from row images.

Row images carry raw bytes; what they mean depends on the column charset, which reaches us as
a charset name (from the schema history's `MySqlColumn.charset`) or as a collation id (from the
TABLE_MAP optional metadata).  The ids below 256 are the table MariaDB 10.11 and MySQL share
(taken from `information_schema.collations`); MariaDB's NO PAD variants add 1024 to a base id
and its UCA 14.0 collations (ids 2048 and up) encode the charset in the high byte.

MySQL's `latin1` is Windows-1252 with the five holes of cp1252 mapped straight to U+0081 etc.;
`mysql_latin1` does exactly that so a binlog value equals what a SELECT returns.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from typing import Any, Final

__all__ = ["BINARY_COLLATION", "charset_of_collation", "decoder_for_charset"]

BINARY_COLLATION: Final = 63

# Charset of each collation id below 256 ('-': unassigned), eight per line.
_TABLE = """
    - big5 latin2 dec8 cp850 latin1 hp8 koi8r
    latin1 latin2 swe7 ascii ujis sjis cp1251 latin1
    hebrew - tis620 euckr latin7 latin2 koi8u cp1251
    gb2312 greek cp1250 latin2 gbk cp1257 latin5 latin1
    armscii8 utf8mb3 cp1250 ucs2 cp866 keybcs2 macce macroman
    cp852 latin7 latin7 macce cp1250 utf8mb4 utf8mb4 latin1
    latin1 latin1 cp1251 cp1251 cp1251 macroman utf16 utf16
    utf16le cp1256 cp1257 cp1257 utf32 utf32 utf16le binary
    armscii8 ascii cp1250 cp1256 cp866 dec8 greek hebrew
    hp8 keybcs2 koi8r koi8u - latin2 latin5 latin7
    cp850 cp852 swe7 utf8mb3 big5 euckr gb2312 gbk
    sjis tis620 ucs2 ujis geostd8 geostd8 latin1 cp932
    cp932 eucjpms eucjpms cp1250 - utf16 utf16 utf16
    utf16 utf16 utf16 utf16 utf16 utf16 utf16 utf16
    utf16 utf16 utf16 utf16 utf16 utf16 utf16 utf16
    utf16 utf16 utf16 utf16 utf16 - - -
    ucs2 ucs2 ucs2 ucs2 ucs2 ucs2 ucs2 ucs2
    ucs2 ucs2 ucs2 ucs2 ucs2 ucs2 ucs2 ucs2
    ucs2 ucs2 ucs2 ucs2 ucs2 ucs2 ucs2 ucs2
    - - - - - - - ucs2
    utf32 utf32 utf32 utf32 utf32 utf32 utf32 utf32
    utf32 utf32 utf32 utf32 utf32 utf32 utf32 utf32
    utf32 utf32 utf32 utf32 utf32 utf32 utf32 utf32
    - - - - - - - -
    utf8mb3 utf8mb3 utf8mb3 utf8mb3 utf8mb3 utf8mb3 utf8mb3 utf8mb3
    utf8mb3 utf8mb3 utf8mb3 utf8mb3 utf8mb3 utf8mb3 utf8mb3 utf8mb3
    utf8mb3 utf8mb3 utf8mb3 utf8mb3 utf8mb3 utf8mb3 utf8mb3 utf8mb3
    - - - - - - - utf8mb3
    utf8mb4 utf8mb4 utf8mb4 utf8mb4 utf8mb4 utf8mb4 utf8mb4 utf8mb4
    utf8mb4 utf8mb4 utf8mb4 utf8mb4 utf8mb4 utf8mb4 utf8mb4 utf8mb4
    utf8mb4 utf8mb4 utf8mb4 utf8mb4 utf8mb4 utf8mb4 utf8mb4 utf8mb4
    gb18030 gb18030 gb18030 - - - - utf8mb4
"""
_BY_ID: Final = tuple(None if n == "-" else n for n in _TABLE.split())
_UCA1400: Final = ("utf8mb3", "utf8mb4", "ucs2", "utf16", "utf32")
_MARIADB_MYSQL500: Final = {576: "utf8mb3", 608: "utf8mb4", 640: "ucs2", 672: "utf16",
                            736: "utf32"}

# MySQL charset name -> Python codec name (None: bytes, no decoding).
_CODECS: Final[dict[str, str | None]] = {
    "binary": None, "utf8mb4": "utf-8", "utf8mb3": "utf-8", "utf8": "utf-8",
    "latin1": "mysql_latin1", "ascii": "ascii", "latin2": "iso8859-2", "latin5": "iso8859-9",
    "latin7": "iso8859-13", "greek": "iso8859-7", "hebrew": "iso8859-8", "cp1250": "cp1250",
    "cp1251": "cp1251", "cp1256": "cp1256", "cp1257": "cp1257", "cp850": "cp850",
    "cp852": "cp852", "cp866": "cp866", "cp932": "cp932", "koi8r": "koi8-r", "koi8u": "koi8-u",
    "sjis": "shift_jis", "ujis": "euc-jp", "eucjpms": "euc-jp", "euckr": "euc-kr",
    "gb2312": "gb2312", "gbk": "gbk", "gb18030": "gb18030", "big5": "big5",
    "tis620": "tis-620", "macroman": "mac-roman", "macce": "mac-latin2", "ucs2": "utf-16-be",
    "utf16": "utf-16-be", "utf16le": "utf-16-le", "utf32": "utf-32-be",
    "keybcs2": "latin1", "dec8": "latin1", "hp8": "latin1", "swe7": "latin1",
    "armscii8": "latin1", "geostd8": "latin1",
}


def charset_of_collation(collation_id: int) -> str | None:
    """The charset name of a collation id, None when unknown."""
    if collation_id < 256:
        return _BY_ID[collation_id]
    if 1024 <= collation_id < 1280:  # MariaDB NO PAD variants
        return _BY_ID[collation_id - 1024]
    if 2048 <= collation_id < 2048 + 256 * len(_UCA1400):  # MariaDB UCA 14.0
        return _UCA1400[(collation_id - 2048) >> 8]
    if 256 <= collation_id < 324:  # MySQL 8 utf8mb4_0900_* and friends
        return "utf8mb4"
    return _MARIADB_MYSQL500.get(collation_id & ~0x1F)


def _latin1_decode(data: Any, errors: str = "strict") -> tuple[str, int]:
    return codecs.charmap_decode(data, errors, _LATIN1_TABLE)


# cp1252 with its five undefined bytes mapped to the C1 control characters, as MySQL does.
_LATIN1_TABLE: Final = "".join(
    bytes([b]).decode("cp1252", errors="ignore") or chr(b) for b in range(256))


def _search(name: str) -> codecs.CodecInfo | None:
    if name != "mysql_latin1":
        return None
    enc = codecs.charmap_build(_LATIN1_TABLE)
    return codecs.CodecInfo(
        name="mysql_latin1",
        encode=lambda text, errors="strict": codecs.charmap_encode(text, errors, enc),
        decode=_latin1_decode,
    )


codecs.register(_search)


def codec_for_charset(charset: str | None) -> str | None:
    """The Python codec for a MySQL charset name; None means binary (keep bytes).

    Unknown names fall back to UTF-8, the server default, rather than failing a stream.
    """
    if charset is None:
        return "utf-8"
    return _CODECS.get(charset.lower(), "utf-8")


def decoder_for_charset(charset: str | None) -> Callable[[bytes], str] | None:
    """A bytes -> str function for a MySQL charset name (None for binary)."""
    codec = codec_for_charset(charset)
    if codec is None:
        return None
    info = codecs.lookup(codec)
    dec = info.decode
    return lambda data: dec(data, "replace")[0]
