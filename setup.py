"""The package's compiled modules, C: the topic log writer's batch checksummer
(`headwater.topics._crcfill`, src/headwater/topics/_crcfill.c) and the column-wise snapshot's
kernels (`headwater.connectors.postgres._copykernels`, src/headwater/connectors/postgres/
_copykernels.c), the streaming decoder's row image reader
(`headwater.connectors.postgres._tupledata`, src/headwater/connectors/postgres/_tupledata.c)
and the Kafka range reader (`headwater.kafka._rangeread`, src/headwater/kafka/_rangeread.c: it needs no librdkafka to build, it loads the one
confluent-kafka ships when it runs).  Everything else is in pyproject.toml.  `pip install -e .` (scripts/setup.sh)
builds them in place, beside their sources; so does ``.venv/bin/python setup.py build_ext
--inplace`` alone."""

from setuptools import Extension, setup

_FLAGS = ["-O2", "-std=c99", "-Wall", "-Wextra", "-Werror=implicit-function-declaration"]
# What both modules share (src/headwater/_cext.h): found on the include path, and a change to
# it rebuilds them.
_SHARED = {"include_dirs": ["src/headwater"], "depends": ["src/headwater/_cext.h"],
           "extra_compile_args": _FLAGS}

setup(ext_modules=[
    Extension("headwater.topics._crcfill", ["src/headwater/topics/_crcfill.c"], **_SHARED),
    Extension("headwater.connectors.postgres._copykernels",
              ["src/headwater/connectors/postgres/_copykernels.c"], **_SHARED),
    Extension("headwater.connectors.postgres._tupledata",
              ["src/headwater/connectors/postgres/_tupledata.c"], **_SHARED),
    Extension("headwater.kafka._rangeread", ["src/headwater/kafka/_rangeread.c"],
              libraries=["dl"], **_SHARED),
])
