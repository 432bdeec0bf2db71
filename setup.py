"""The package's one compiled module: the topic log writer's batch checksummer
(`headwater.topics._crcfill`, C, src/headwater/topics/_crcfill.c).  Everything else is in
pyproject.toml.  `pip install -e .` (scripts/setup.sh) builds it in place, beside its source;
so does ``.venv/bin/python setup.py build_ext --inplace`` alone."""

from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "headwater.topics._crcfill", ["src/headwater/topics/_crcfill.c"],
    extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra",
                        "-Werror=implicit-function-declaration"],
)])
