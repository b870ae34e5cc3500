"""The jars of PySpark's Kafka connector (``spark-sql-kafka-0-10``) for the Spark Structured Streaming peer.

Copied once from Maven Central into the cache by ``bench/sss-pom.xml`` (the way the broker's jars are,
``streamproc_dev/broker.py``), before a run is measured: a fetch inside the measured command would count Maven's
CPU as Spark's. ``python -m bench.sss_connector`` fetches them (``make bench-venv``) and prints their paths.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from streamproc_dev.versions import cache_dir

POM = Path(__file__).with_name("sss-pom.xml")
REQUIREMENTS = Path(__file__).with_name("sss-requirements.txt")
_COMPLETE = ".complete"


def spark_version() -> str:
    """The connector's release: ``spark.version`` of the pom, the pyspark pin of ``.venv-sss``."""
    match = re.search(r"<spark\.version>([^<]+)</spark\.version>", POM.read_text(encoding="utf-8"))
    assert match is not None, POM
    return match.group(1)


def jars() -> list[Path]:
    """The connector's jars, fetched into the cache unless a complete copy is there."""
    version = spark_version()
    target = cache_dir() / f"spark-sql-kafka-{version}"
    if not (target / _COMPLETE).exists():
        _fetch(target)
    return sorted(target.glob("*.jar"))


def _fetch(target: Path) -> None:
    if shutil.which("mvn") is None:
        raise RuntimeError("Maven ('mvn') is not on PATH; it fetches spark-sql-kafka-0-10 for the Spark peer")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="spark-sql-kafka-", dir=target.parent))
    command = ["mvn", "-q", "-B", "-f", str(POM), "dependency:copy-dependencies", f"-DoutputDirectory={staging}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)  # noqa: S603
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise RuntimeError(
            f"Maven could not fetch spark-sql-kafka-0-10:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
        )
    (staging / _COMPLETE).write_text(spark_version(), encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)


if __name__ == "__main__":
    for jar in jars():
        print(jar)
