"""`validate.catalog.named`: the `--table` selection every target kind of validate uses."""

from __future__ import annotations

import pytest

from headwater.config import ConfigError
from headwater.validate.catalog import named

FOUND = [("public", "a", 1), ("public", "b", 2), ("sales", "a", 3)]


def test_no_names_keeps_every_target() -> None:
    assert named(FOUND, (), lambda t: t) == FOUND


def test_names_keep_only_their_targets_in_the_found_order() -> None:
    assert named(FOUND, ("sales.a", "public.a"), lambda t: t) == [FOUND[0], FOUND[2]]


def test_each_name_without_a_target_is_one_problem() -> None:
    with pytest.raises(ConfigError) as err:
        named(FOUND, ("public.a", "public.c", "x.y"), lambda t: f"--table {t}: none")
    assert "--table public.c: none" in str(err.value)
    assert "--table x.y: none" in str(err.value)
    assert "public.a:" not in str(err.value)
