"""On two executor JVMs, a compressed file read over many batches is decompressed from its start
once: its ranges prefer the executor that keeps it open, batch after batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest


@pytest.mark.slow
def test_each_compressed_file_is_decompressed_from_its_start_once_on_a_cluster(
    tmp_path: Path,
) -> None:
    # local-cluster starts executor JVMs through SPARK_HOME's scripts: pyspark's own
    env = {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent)}
    driver = Path(__file__).with_name("compressed_locality_driver.py")
    done = subprocess.run(
        [sys.executable, str(driver), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["error"] is None
    assert result["ids_exact"]
    assert result["batches"] >= 4
    # without the executor preference, ranges of a file land on either executor and each miss
    # decompresses the file from its start again
    assert result["opens"] == result["files"], result
