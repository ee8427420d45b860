package sluice.api

/**
 * The counters readers keep per split (`ReaderContext.count`): what a reader skipped instead of
 * failing, so that a skip is counted, never silent, and work a reader had to do again. Summed per source in streaming query progress
 * and shown as SQL metrics of the scan (Spark UI, and the plan of a batch read).
 */
object ReaderCounters {

  /** Records a parser dropped (mode DROPMALFORMED). */
  val MalformedRecordsDropped = "malformedRecordsDropped"

  /** Files that vanished between listing and reading (ignoreMissingFiles). */
  val MissingFilesSkipped = "missingFilesSkipped"

  /** Files that changed after they were listed, whose unread part was skipped (ignoreChangedFiles). */
  val ChangedFilesSkipped = "changedFilesSkipped"

  /** Kafka offsets gone before they were read (failOnDataLoss=false). */
  val DataLossOffsets = "dataLossOffsets"

  /** Kafka records without a value, which a parsed format skips. */
  val NullValuesSkipped = "nullValuesSkipped"

  /**
   * Times a compressed file was decompressed from its start for a range (it cannot be entered
   * mid-way): once per file when each range takes it up where the last one left it open, more when
   * a range ran on another executor or after the open file was closed.
   */
  val CompressedFileOpens = "compressedFileOpens"

  /**
   * Parquet rows (files and tables) decoded only to be dropped because a range started after them
   * (Spark's Parquet reader cannot seek to a row): at most the earlier rows of the one row group
   * holding the range's start, per range.
   */
  val RowsDecodedBeforeStart = "rowsDecodedBeforeStart"

  val all: Seq[String] = Seq(
    MalformedRecordsDropped,
    MissingFilesSkipped,
    ChangedFilesSkipped,
    DataLossOffsets,
    NullValuesSkipped,
    CompressedFileOpens,
    RowsDecodedBeforeStart)
}
