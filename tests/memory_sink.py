"""A streaming DataFrame run to its end into Spark's memory sink, as tests that read a query's
batches (their progress, what each read) and its rows run one."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql.streaming import StreamingQuery


def run_to_memory(df: DataFrame, table: str, checkpoint: Path | None = None) -> StreamingQuery:
    """Streaming `df` under Trigger.AvailableNow into memory table `table` (on `checkpoint` if
    given), run to its end, which must come within 120 s and without error: the ended query, whose
    `recentProgress` holds its batches."""
    writer = df.writeStream.format("memory").queryName(table).trigger(availableNow=True)
    query = (writer.option("checkpointLocation", str(checkpoint)) if checkpoint else writer).start()
    assert query.awaitTermination(120), "the query did not end within 120 s"
    if query.exception() is not None:
        raise query.exception()
    return query
