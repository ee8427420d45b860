"""The windowed count the event-time tests run on a stream: 1-minute window counts under a
10-minute watermark, in update mode into the memory sink, run to the end of what it finds."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery


def window_counts(df: DataFrame, column: str, name: str, checkpoint: Path | str) -> StreamingQuery:
    """The ended query (it read all there was, without failing) whose sink is the table `name`."""
    query = (
        df.withWatermark(column, "10 minutes")
        .groupBy(F.window(column, "1 minute"))
        .count()
        .writeStream.format("memory")
        .queryName(name)
        .outputMode("update")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180), f"{name}: the query did not end within 180 s"
    assert query.exception() is None, query.exception()
    return query


def late_dropped(query: StreamingQuery) -> int:
    """The rows Spark's watermark dropped as late, over the query's batches."""
    return sum(op["numRowsDroppedByWatermark"] for p in query.recentProgress for op in p["stateOperators"])


def final_counts(spark: SparkSession, name: str) -> DataFrame:
    """Each window's last count (update mode writes a window again whenever its count changes)."""
    return spark.table(name).groupBy("window").agg(F.max("count").alias("n"))
