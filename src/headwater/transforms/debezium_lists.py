"""Debezium's LIST properties as its `Field` validators read them (`notContainEmptyElements`,
`notContainSpaceInAnyElement`), shared by the Debezium SMTs that take field/header lists."""

from __future__ import annotations

from headwater.connect.props import PluginConfigError, PluginProps


def java_split(text: str) -> list[str]:
    """`String.split(",")`: trailing empty elements dropped, inner ones kept."""
    parts = text.split(",")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def debezium_list(p: PluginProps, name: str, raw: str | None, *, required: bool,
                  no_spaces: bool = False) -> list[str]:
    """The trimmed elements of `raw` (the value of `name`, read by the caller); an empty
    element (or one with a space inside when `no_spaces`) is refused as Debezium's validators
    refuse it."""
    if raw is None:
        if required:
            raise PluginConfigError(f"{p.key(name)}: missing, required by {p.label}")
        return []
    items = [item.strip() for item in java_split(raw)]
    if any(not item for item in items):
        raise PluginConfigError(
            f"{p.key(name)}: '{raw}' has an empty element (Debezium: Empty string element(s) "
            "not permitted)")
    if no_spaces and any(" " in item or "\t" in item for item in items):
        raise PluginConfigError(
            f"{p.key(name)}: '{raw}' has an element containing a space (Debezium: Element(s) "
            "containing space not permitted)")
    return items
