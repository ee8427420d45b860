package sluice.connector.kafka

import org.apache.spark.sql.vectorized.ColumnarBatch

import sluice.api.{ColumnarFetch, ColumnarSplitReader, ReaderContext, SplitRange}

/**
 * Reads planned offset ranges as column batches (micro-batches and batch reads of Spark's raw
 * Kafka columns, `KafkaSource.readsColumnar`): each poll's records of one partition, cut at its
 * range's end, are one batch whose vectors read the records' own fields (`KafkaRecordVectors`).
 * Polls, range ends, data loss and stalled partitions are the row reader's (`KafkaSplitReader`),
 * so both read exactly the same records; only what the engine is handed differs.
 */
final class KafkaColumnarReader(config: KafkaConfig, context: ReaderContext)
    extends ColumnarSplitReader[KafkaPartitionSplit] {
  private val vectors = new KafkaRecordVectors(
    KafkaRecordVectors
      .columnsOf(config.decoder(context.recordLayout))
      .getOrElse(throw new IllegalStateException(
        s"Sluice: Kafka rows of ${config.decoder(context.recordLayout)} are not read as column batches")))
  private val reader = new KafkaSplitReader(config, context)

  /** The poll whose partitions are still to be handed out, one batch each. */
  private var polled: reader.Polled = _

  override def handleSplitsChanges(ranges: Seq[SplitRange[KafkaPartitionSplit]]): Unit =
    reader.handleSplitsChanges(ranges)

  override def fetch(): ColumnarFetch = {
    if (polled == null) reader.pollRecords() match {
      case Right(next) => polled = next
      case Left(finished) => return ColumnarFetch.empty(finished)
    }
    val splitId = polled.nextSplit()
    if (splitId == null) {
      polled = null
      ColumnarFetch.empty(Set.empty)
    } else {
      val (records, rows) = polled.inRange
      if (rows == 0)
        ColumnarFetch.empty(Set.empty) // all fetched past the range: the next poll finishes it
      else {
        var bytes = 0L
        var i = 0
        while (i < rows) {
          val r = records.get(i)
          bytes += math.max(0, r.serializedKeySize) + math.max(0, r.serializedValueSize)
          i += 1
        }
        context.addBytesRead(bytes)
        new KafkaColumnarReader.Fetched(
          splitId,
          vectors.batchOf(records, rows),
          records.get(rows - 1).offset + 1,
          records)
      }
    }
  }

  override def close(): Unit = reader.close()
}

private object KafkaColumnarReader {

  /** One partition's batch: its position is the offset after its last record, as for rows. */
  final class Fetched(
      override val splitId: String,
      override val batch: ColumnarBatch,
      override val position: Long,
      records: java.util.List[KafkaRecordVectors.Record])
      extends ColumnarFetch {
    override def recordTime(row: Int): Long = records.get(row).timestamp
    override def finishedSplits: Set[String] = Set.empty
  }
}
