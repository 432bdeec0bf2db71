"""Named sets of Maven artifacts, fetched into a cache with Maven and handed over as files.

Why files and not Spark's `--packages`: Spark's Ivy resolver fails as soon as `~/.m2` holds a
pom without its jar (which `mvn dependency:get` leaves behind), and a Kafka broker or Connect
worker has no resolver at all.  Maven's `dependency:copy-dependencies` of a throwaway pom
resolves a set's runtime closure once; a stamp file records the coordinates it was made from,
so a changed set is fetched again and an unchanged one costs nothing.

The cache is `$HEADWATER_JARS` or `~/.cache/headwater/jars`, one folder per set.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SPARK_LINE = "4.1"  # the one Spark line with Delta, Iceberg and the Kafka source (see README)
SPARK_VERSION = "4.1.1"
DELTA_VERSION = "4.4.0"
ICEBERG_VERSION = "1.12.0"
KAFKA_VERSION = "4.4.0"
CONNECT_VERSION = "4.1.1"  # the Kafka line Debezium 3.5's connectors are built against
DEBEZIUM_CONNECT_VERSION = "3.5.0.Final"


@dataclass(frozen=True)
class ArtifactSet:
    """Coordinates (`group:artifact:version`) whose runtime closure is one folder of jars;
    `exclude` drops artifacts (`group:artifact`) the host process already has."""

    name: str
    coordinates: tuple[str, ...]
    exclude: tuple[str, ...] = field(default=())
    why: str = ""


# A Connect plugin folder must leave out what the worker itself loads: these clash with it.
_WORKER_HAS = (
    "org.apache.kafka:connect-api", "org.apache.kafka:kafka-clients",
    "com.fasterxml.jackson.core:jackson-core", "com.fasterxml.jackson.core:jackson-databind",
    "com.fasterxml.jackson.core:jackson-annotations", "org.slf4j:slf4j-api")

SETS: dict[str, ArtifactSet] = {s.name: s for s in (
    ArtifactSet("spark", (
        f"io.delta:delta-spark_{SPARK_LINE}_2.13:{DELTA_VERSION}",
        f"org.apache.iceberg:iceberg-spark-runtime-{SPARK_LINE}_2.13:{ICEBERG_VERSION}",
        f"org.apache.spark:spark-sql-kafka-0-10_2.13:{SPARK_VERSION}",
        f"org.apache.spark:spark-avro_2.13:{SPARK_VERSION}",
    ), why="Delta Lake, Iceberg and Kafka for the pipeline's Spark session"),
    ArtifactSet("kafka", (
        f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}",
        f"org.apache.kafka:kafka-tools:{KAFKA_VERSION}",
        "org.slf4j:slf4j-reload4j:1.7.36",
    ), why="Apache Kafka brokers (KRaft) for the tests and benchmarks"),
    ArtifactSet("connect", (
        f"org.apache.kafka:connect-runtime:{CONNECT_VERSION}",
        f"org.apache.kafka:connect-json:{CONNECT_VERSION}",
        "org.slf4j:slf4j-simple:1.7.36",
    ), why="a Kafka Connect worker for the tests (Debezium's own connectors as consumers "
           "and oracle)"),
    ArtifactSet("debezium-jdbc-sink", (
        f"io.debezium:debezium-connector-jdbc:{DEBEZIUM_CONNECT_VERSION}",
        "org.postgresql:postgresql:42.7.4",
    ), exclude=_WORKER_HAS, why="Debezium's JDBC sink connector, a Connect plugin"),
    ArtifactSet("debezium-mariadb", (
        f"io.debezium:debezium-connector-mariadb:{DEBEZIUM_CONNECT_VERSION}",
    ), exclude=_WORKER_HAS, why="Debezium's MariaDB connector, a Connect plugin (the oracle)"),
)}


class ArtifactError(RuntimeError):
    """A set could not be fetched (no Maven, no network, an artifact not served)."""


def cache_root() -> Path:
    return Path(os.environ.get("HEADWATER_JARS") or Path.home() / ".cache" / "headwater" / "jars")


def _stamp(s: ArtifactSet) -> str:
    return hashlib.sha256("\n".join((*s.coordinates, "-", *s.exclude)).encode()).hexdigest()


def _pom(s: ArtifactSet) -> str:
    deps = []
    for coordinate in s.coordinates:
        group, artifact, version = coordinate.split(":")
        deps.append(f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
                    f"<version>{version}</version></dependency>")
    return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0"
            "</modelVersion><groupId>headwater.fetch</groupId><artifactId>"
            f"{s.name}</artifactId><version>1</version><dependencies>{''.join(deps)}"
            "</dependencies></project>")


def folder(name: str) -> Path:
    return cache_root() / name


def is_fetched(name: str) -> bool:
    s = SETS[name]
    stamp = folder(name) / ".stamp"
    return stamp.exists() and stamp.read_text() == _stamp(s)


def fetch(name: str, quiet: bool = True) -> list[Path]:
    """The jars of set `name`, fetched with Maven first if the cache lacks them."""
    if name not in SETS:
        raise ArtifactError(f"no artifact set {name!r}; known: {', '.join(sorted(SETS))}")
    s = SETS[name]
    out = folder(name)
    if not is_fetched(name):
        mvn = shutil.which("mvn")
        if mvn is None:
            raise ArtifactError(f"fetching the {name} jars ({s.why}) needs Maven (`mvn`): "
                                "install it (Debian: apt-get install maven) or put the jars "
                                f"in {out}")
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f"headwater-{name}-") as tmp:
            staging = Path(tmp) / "jars"
            (Path(tmp) / "pom.xml").write_text(_pom(s))
            cmd = [mvn, "-B", "dependency:copy-dependencies", f"-DoutputDirectory={staging}",
                   "-DincludeScope=runtime"]
            if s.exclude:
                cmd.append("-DexcludeArtifactIds=" + ",".join(e.split(":")[1] for e in s.exclude))
            if quiet:
                cmd.insert(1, "-q")
            done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise ArtifactError(f"Maven could not fetch the {name} jars "
                                    f"({', '.join(s.coordinates)}):\n"
                                    + (done.stdout + done.stderr)[-3000:])
            if out.exists():
                shutil.rmtree(out)
            staging.rename(out) if staging.exists() else out.mkdir()
        (out / ".stamp").write_text(_stamp(s))
    return sorted(out.glob("*.jar"))


def classpath(name: str) -> str:
    return os.pathsep.join(str(p) for p in fetch(name))


def main(argv: list[str]) -> int:
    """`python -m headwater.jvm.artifacts SET...`: fetch sets (set-up scripts call it)."""
    names = argv or sorted(SETS)
    for name in names:
        try:
            jars = fetch(name)
        except ArtifactError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"{name}: {len(jars)} jars in {folder(name)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
