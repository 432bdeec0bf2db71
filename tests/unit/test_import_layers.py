"""The import graph's contracts (pyproject.toml's [tool.importlinter], docs/architecture.md):
no package imports a layer above its own, the connectors' folders do not import each other,
and only the pipeline and the test servers import pyspark.

Why run import-linter from a test: the layers are the map a reader navigates by, and one
convenient upward import (even inside a function, where it costs nothing at start-up) breaks
it silently.  The second test proves the check bites: it plants such an import in a copy of the
sources and expects the contract to break.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_LINT = ("import sys; from importlinter.cli import lint_imports; "
         "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))")


def _lint(src: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` over the `headwater` package found in `src`."""
    inherited = os.environ.get("PYTHONPATH")
    env = {**os.environ, "COLUMNS": "250",  # the report's lines unwrapped
           "PYTHONPATH": os.pathsep.join([str(src), *([inherited] if inherited else [])])}
    return subprocess.run([sys.executable, "-c", _LINT, str(ROOT / "pyproject.toml")],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def _contract_count() -> int:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return len(config["tool"]["importlinter"]["contracts"])


def test_the_import_contracts_hold() -> None:
    result = _lint(ROOT / "src", ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{_contract_count()} kept, 0 broken" in result.stdout


@pytest.mark.parametrize(("module", "planted", "contract"), [
    # an upward arrow, hidden in a function: still an arrow
    ("model/__init__.py", "headwater.pipeline.config", "Layers"),
    # one connector reaching into another's folder
    ("connectors/mysql/__init__.py", "headwater.connectors.postgres.config", "Connectors"),
    # Spark outside the pipeline
    ("engine/__init__.py", "pyspark", "Spark"),
])
def test_a_planted_import_breaks_its_contract(tmp_path: Path, module: str, planted: str,
                                              contract: str) -> None:
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "headwater", src / "headwater",
                    ignore=shutil.ignore_patterns("__pycache__", "console"))
    with (src / "headwater" / module).open("a") as f:
        f.write(f"\n\ndef _planted() -> None:\n    import {planted}  # noqa\n")
    result = _lint(src, tmp_path)
    assert result.returncode != 0, result.stdout
    broken = [line for line in result.stdout.splitlines() if "BROKEN" in line]
    assert broken and broken[0].startswith(contract), result.stdout
    importer = "headwater." + module.removesuffix("/__init__.py").replace("/", ".")
    assert f"{importer} -> {planted}" in result.stdout
    assert f"{_contract_count() - 1} kept, 1 broken" in result.stdout


def test_the_readme_shows_the_contract_s_layers() -> None:
    # The README's diagram is what a reader goes by: it must be the contract's order.
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    layers = next(c["layers"] for c in contract["tool"]["importlinter"]["contracts"]
              if c["type"] == "layers")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("cli  >")
    diagram = readme[start:readme.index("```", start)]
    shown = [" ".join(layer.split()) for layer in diagram.replace("\n", " ").split(">")]
    assert shown == [" ".join(layer.split()) for layer in layers]
