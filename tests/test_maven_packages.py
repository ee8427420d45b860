"""The Maven artifact resolves with --packages from the repository folder `make dist` writes, in a
Spark session that has nothing else: no Sluice Python package, no jar, no ~/.m2 or ~/.ivy2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from distribution import ARTIFACT, ARTIFACT_DIR, COORDINATE, MAVEN_REPO, VERSION, released

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession
    coordinate, repository, ivy, home = sys.argv[1:5]
    spark = (SparkSession.builder.master("local[1]")
             .config("spark.jars.packages", coordinate)
             .config("spark.jars.repositories", repository)
             .config("spark.jars.ivy", ivy)
             .config("spark.driver.extraJavaOptions", "-Duser.home=" + home)
             .config("spark.sql.extensions", "sluice.spark.SluiceExtensions")
             .config("spark.ui.enabled", "false")
             .getOrCreate())
    df = (spark.readStream.format("sluice").option("source", "generator")
          .option("splits", "2").option("recordsPerSplit", "5").load())
    q = df.writeStream.format("memory").queryName("packaged").trigger(availableNow=True).start()
    ended = q.awaitTermination(120)
    ids = sorted(r.id for r in spark.table("packaged").collect())
    print(json.dumps({"ended": ended, "ids": ids, "jars": spark.conf.get("spark.jars")}))
    spark.stop()
    """
)


@pytest.mark.slow
def test_packages_coordinate_resolves_from_the_repository_folder(tmp_path: Path) -> None:
    released(ARTIFACT_DIR / f"{ARTIFACT}-{VERSION}.pom")
    script = tmp_path / "packaged.py"
    script.write_text(SCRIPT, encoding="utf-8")
    home = tmp_path / "home"  # an empty user.home: no ~/.m2 or ~/.ivy2 to resolve from
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SLUICE_JAR", "SPARK_HOME")}
    done = subprocess.run(
        [sys.executable, str(script), COORDINATE, MAVEN_REPO.as_uri(), str(tmp_path / "ivy"), str(home)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # Ivy names the resolver: repo-1 is the first (only) entry of spark.jars.repositories
    assert f"found dev.sluice#{ARTIFACT};{VERSION} in repo-1" in done.stderr, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["ended"] is True
    assert result["ids"] == list(range(10))
    jars = sorted(Path(j).name for j in result["jars"].split(","))
    # the artifact and its compile dependencies; Spark brings Scala and itself, and the Avro,
    # Jackson and RoaringBitmap iceberg-core uses, and the Hadoop and Parquet of Delta Kernel (the
    # POM excludes them: NOTICE)
    assert jars == [
        "com.github.ben-manes.caffeine_caffeine-2.9.3.jar",
        f"dev.sluice_{ARTIFACT}-{VERSION}.jar",
        "io.airlift_aircompressor-0.27.jar",
        "io.delta_delta-kernel-api-4.4.0.jar",
        "io.delta_delta-kernel-defaults-4.4.0.jar",
        "io.delta_delta-storage-4.4.0.jar",
        "org.apache.iceberg_iceberg-api-1.10.1.jar",
        "org.apache.iceberg_iceberg-bundled-guava-1.10.1.jar",
        "org.apache.iceberg_iceberg-common-1.10.1.jar",
        "org.apache.iceberg_iceberg-core-1.10.1.jar",
        "org.apache.kafka_kafka-clients-3.9.2.jar",
    ]
