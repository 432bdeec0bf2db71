"""Reading one plugin's properties (a transform's, a converter's) so that none goes unread.

Kafka Connect hands each plugin the properties under its prefix; Headwater reads them through
`PluginProps`, which remembers what was read.  `check_all_read` then refuses any property the
plugin did not read: a setting Headwater accepted but ignored would silently change the output
a user expects (the bug this module exists to prevent).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


class PluginConfigError(ValueError):
    """A plugin's configuration is invalid; the message names the properties."""


class PluginProps:
    """The properties of one plugin (keys without its prefix) and which of them were read."""

    def __init__(self, label: str, prefix: str, values: Mapping[str, str]) -> None:
        self.label = label  # e.g. "transform 'unwrap' (<class>)"
        self.prefix = prefix  # e.g. "transforms.unwrap."
        self.values = {k: v.strip() for k, v in values.items()}
        self.read: set[str] = set()

    def key(self, name: str) -> str:
        return self.prefix + name

    def has(self, name: str) -> bool:
        self.read.add(name)
        return self.values.get(name, "") != ""

    def get_str(self, name: str, default: str | None = None) -> str | None:
        self.read.add(name)
        value = self.values.get(name)
        return default if value is None or value == "" else value

    def get_raw(self, name: str, default: str) -> str:
        """The value even when empty (an empty prefix is a choice, not "unset")."""
        self.read.add(name)
        return self.values.get(name, default)

    def required(self, name: str) -> str:
        value = self.get_str(name)
        if value is None:
            raise PluginConfigError(f"{self.key(name)}: missing, required by {self.label}")
        return value

    def get_list(self, name: str, default: Iterable[str] = ()) -> tuple[str, ...]:
        value = self.get_str(name)
        if value is None:
            return tuple(default)
        return tuple(item.strip() for item in value.split(",") if item.strip())

    def get_bool(self, name: str, default: bool) -> bool:
        value = self.get_str(name)
        if value is None:
            return default
        if value.lower() not in ("true", "false"):
            raise PluginConfigError(f"{self.key(name)}: '{value}' is not a boolean (true/false)")
        return value.lower() == "true"

    def get_int(self, name: str, default: int) -> int:
        value = self.get_str(name)
        if value is None:
            return default
        try:
            return int(value)
        except ValueError:
            raise PluginConfigError(f"{self.key(name)}: '{value}' is not an integer") from None

    def choice(self, name: str, choices: Iterable[str], default: str | None,
               *, case_sensitive: bool = False) -> str | None:
        value = self.get_str(name, default)
        if value is None:
            return None
        options = tuple(choices)
        for option in options:
            if value == option or (not case_sensitive and value.lower() == option.lower()):
                return option
        raise PluginConfigError(
            f"{self.key(name)}: '{value}' is not one of {', '.join(options)} ({self.label})")

    def ignore(self, *names: str) -> None:
        """Mark properties read that change nothing in Headwater's output (cache sizes...)."""
        self.read.update(names)

    def refuse(self, name: str, why: str) -> None:
        """A property Headwater does not implement: an error if it is set."""
        if self.has(name):
            raise PluginConfigError(f"{self.key(name)}: not supported by Headwater ({why})")

    def check_all_read(self) -> None:
        unread = sorted(k for k in self.values if k not in self.read)
        if unread:
            raise PluginConfigError(
                f"{self.label}: unknown or unsupported "
                f"propert{'y' if len(unread) == 1 else 'ies'} "
                + ", ".join(self.key(k) for k in unread))


def sub_props(all_props: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The properties under `prefix`, with the prefix removed."""
    return {k[len(prefix):]: v for k, v in all_props.items() if k.startswith(prefix)}
