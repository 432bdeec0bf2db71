"""The package's compiled modules, C: the topic log writer's batch checksummer
(`headwater.topics._crcfill`, src/headwater/topics/_crcfill.c) and the column-wise snapshot's
kernels (`headwater.connectors.postgres._copykernels`, src/headwater/connectors/postgres/
_copykernels.c).  Everything else is in pyproject.toml.  `pip install -e .` (scripts/setup.sh)
builds them in place, beside their sources; so does ``.venv/bin/python setup.py build_ext
--inplace`` alone."""

from setuptools import Extension, setup

_FLAGS = ["-O2", "-std=c99", "-Wall", "-Wextra", "-Werror=implicit-function-declaration"]

setup(ext_modules=[
    Extension("headwater.topics._crcfill", ["src/headwater/topics/_crcfill.c"],
              extra_compile_args=_FLAGS),
    Extension("headwater.connectors.postgres._copykernels",
              ["src/headwater/connectors/postgres/_copykernels.c"], extra_compile_args=_FLAGS),
])
