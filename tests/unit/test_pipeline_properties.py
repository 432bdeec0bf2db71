"""Unknown keys of the pipeline's namespace are refused (a misspelt mode or path would run the
pipeline on its default), unless the configuration says to warn."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from headwater.config import ConfigError
from headwater.pipeline.config import load_pipeline_config


def test_a_misspelt_pipeline_key_is_an_error_naming_the_nearest(tmp_path: Path) -> None:
    path = tmp_path / "p.properties"
    path.write_text("topic.prefix=srv\nheadwater.pipeline.mdoe=scd2\n")
    with pytest.raises(ConfigError) as caught:
        load_pipeline_config(path)
    assert list(caught.value.problems) == [
        "unknown property 'headwater.pipeline.mdoe' (did you mean 'headwater.pipeline.mode'?): "
        "remove it (or set headwater.config.unsupported.properties=warn to run without it)"]


def test_warn_runs_without_it_and_says_so(tmp_path: Path,
                                          caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "p.properties"
    path.write_text("topic.prefix=srv\nheadwater.pipeline.mdoe=scd2\n"
                    "headwater.config.unsupported.properties=warn\n")
    with caplog.at_level(logging.WARNING, logger="headwater.pipeline.config"):
        cfg = load_pipeline_config(path)
    assert cfg.mode == "scd1"
    assert "unknown property 'headwater.pipeline.mdoe' (did you mean 'headwater.pipeline.mode'?)"\
        " and is ignored (headwater.config.unsupported.properties=warn)" in caplog.text
