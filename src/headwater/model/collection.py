"""Data collection names (``schema.table``, ``db.schema.table``, parts in double quotes), as
signals, `signal.data.collection` and Datastream's objects write them.

Why in the model: the signal properties are checked in `headwater.config` while the signals
are carried out in `headwater.engine`; both parse the same names, and the configuration must
not depend on the engine.  `SignalError` lives here with the parser that raises it (the
engine's signals re-export it).
"""

from __future__ import annotations


class SignalError(ValueError):
    """A signal that cannot be carried out as written; the message says what is wrong."""


def split_collection(name: str) -> tuple[str, ...]:
    """``schema.table`` (or ``db.schema.table``) into its parts; a part in double quotes may
    contain dots, and ``""`` inside quotes is one quote: ``"my.schema"."tab.le"``."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    was_quoted = False
    i = 0
    text = name.strip()
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == '"':
                if i + 1 < len(text) and text[i + 1] == '"':
                    current.append('"')
                    i += 1
                else:
                    quoted = False
            else:
                current.append(ch)
        elif ch == '"':
            if current:
                raise SignalError(f"data collection {name!r}: a quote inside an unquoted part")
            quoted = was_quoted = True
        elif ch == ".":
            if not current and not was_quoted:
                raise SignalError(f"data collection {name!r}: empty name part")
            parts.append("".join(current))
            current, was_quoted = [], False
        else:
            if was_quoted:
                raise SignalError(f"data collection {name!r}: text after a closing quote")
            current.append(ch)
        i += 1
    if quoted:
        raise SignalError(f"data collection {name!r}: unterminated quote")
    if not current and not was_quoted:
        raise SignalError(f"data collection {name!r}: empty name part")
    parts.append("".join(current))
    if len(parts) > 3:
        raise SignalError(f"data collection {name!r}: more than three name parts")
    return tuple(parts)


def same_collection(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Equal names, the shorter one matching the end of the longer (``t`` vs ``public.t``)."""
    n = min(len(a), len(b))
    return a[-n:] == b[-n:]


def format_collection(parts: tuple[str, ...]) -> str:
    """Parts back to a name, quoting a part only where it must be quoted."""
    return ".".join(
        p if p and "." not in p and '"' not in p else '"' + p.replace('"', '""') + '"'
        for p in parts
    )
