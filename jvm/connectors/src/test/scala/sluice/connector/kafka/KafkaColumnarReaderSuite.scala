package sluice.connector.kafka

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.StructType
import org.scalatest.funsuite.AnyFunSuite

import sluice.api.{ReaderContext, ReaderCounters, SplitRange}
import sluice.config.RecordLayout
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/**
 * The column-batch reader against a real broker, no Spark: what its batches hold is what the row
 * reader's rows hold, record for record (values, nulls, positions, bytes counted, splits finished).
 */
class KafkaColumnarReaderSuite extends AnyFunSuite with KafkaSuiteBase {

  private val topic = "columnar-reader"
  private val baseTs = 1700000000000L

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    kafka.createTopic(topic, 2)
    kafka.produce(
      topic,
      (0 until 40).map { i =>
        ProducedRecord.text(
          key = if (i % 3 == 0) None else Some(s"k$i"),
          value = if (i % 7 == 0) None else Some(s"v$i"),
          partition = Some(i % 2),
          timestamp = Some(baseTs + i))
      })
  }

  private def sourceOptions(options: Seq[(String, String)]): Map[String, String] =
    Map("kafka.bootstrap.servers" -> kafka.bootstrapServers, "subscribe" -> topic) ++ options

  private val split0 = KafkaPartitionSplit(topic, 0, 0L, None)
  private val split1 = KafkaPartitionSplit(topic, 1, 0L, None)
  // partition 0 from its third record to its eighth, partition 1 from its start to its fifth
  private val ranges = Seq(SplitRange(split0, 2L, 8L), SplitRange(split1, 0L, 5L))

  /** A row read: its split, the values of its columns as Scala values, the position after it. */
  private type Read = (String, Seq[Any], Long)

  /** A row's values as Scala values (a batch's rows are read through `ColumnarBatch.getRow`). */
  private def values(row: InternalRow, schema: StructType): Seq[Any] =
    schema.fields.indices.map { c =>
      if (row.isNullAt(c)) null
      else
        schema(c).dataType.typeName match {
          case "binary" => new String(row.getBinary(c), "UTF-8")
          case "string" => row.getUTF8String(c).toString
          case "integer" => row.getInt(c)
          case _ => row.getLong(c) // offset, and the timestamp in microseconds
        }
    }

  /** Calls `fetchOnce` (one fetch: what it read, the splits it finished) until every range is finished. */
  private def untilFinished(splits: Int)(
      fetchOnce: () => (Seq[Read], Set[String])): (Seq[Read], Seq[String]) = {
    val read = mutable.Buffer[Read]()
    val finished = mutable.Buffer[String]()
    val deadline = System.currentTimeMillis() + 30000
    while (finished.size < splits) {
      assert(System.currentTimeMillis() < deadline, s"not finished within 30 s: $finished")
      val (rows, done) = fetchOnce()
      read ++= rows
      finished ++= done
    }
    (read.toSeq, finished.toSeq)
  }

  /** Every row of every batch, read through the vectors' getters, and the splits finished. */
  private def readBatches(
      s: KafkaSource,
      context: ReaderContext,
      ranges: Seq[SplitRange[KafkaPartitionSplit]] = ranges): (Seq[Read], Seq[String]) = {
    val reader = s.createColumnarReader(context)
    val schema = s.schema(context.recordLayout)
    try {
      reader.handleSplitsChanges(ranges)
      untilFinished(ranges.size) { () =>
        val fetched = reader.fetch()
        val batch = fetched.batch
        val rows =
          if (batch == null) Nil
          else {
            assert(fetched.maxRecordTime == (0 until batch.numRows).map(fetched.recordTime).max)
            // a batch moves its split to the offset after its last row
            (0 until batch.numRows).map { i =>
              val position = if (i == batch.numRows - 1) fetched.position else -1L
              (fetched.splitId, values(batch.getRow(i), schema), position)
            }
          }
        (rows, fetched.finishedSplits)
      }
    } finally reader.close()
  }

  /** The row reader's rows of the same ranges, read with the row's getters. */
  private def readRows(s: KafkaSource, context: ReaderContext): (Seq[Read], Seq[String]) = {
    val reader = s.createReader(context)
    val schema = s.schema(context.recordLayout)
    try {
      reader.handleSplitsChanges(ranges)
      untilFinished(ranges.size) { () =>
        val fetched = reader.fetch()
        val rows = mutable.Buffer[Read]()
        var id = fetched.nextSplit()
        while (id != null) {
          while (fetched.nextRecord())
            rows += ((id, values(fetched.row, schema), fetched.position))
          id = fetched.nextSplit()
        }
        (rows.toSeq, fetched.finishedSplits)
      }
    } finally reader.close()
  }

  /** Rows by split with only each poll's last position kept (a batch reports one position). */
  private def bySplit(read: Seq[Read]): Map[String, (Seq[Seq[Any]], Long)] =
    read.groupBy(_._1).map { case (id, rows) => id -> (rows.map(_._2), rows.map(_._3).max) }

  test("every layout's batches hold the row reader's records: values, nulls, positions, bytes") {
    for ((label, options, layout) <- Seq(
        ("every column", Nil, RecordLayout.Full),
        ("compact rows with the key", Seq("includeKey" -> "true"), RecordLayout.Compact),
        ("compact rows", Nil, RecordLayout.Compact))) {
      val s = KafkaSource.fromOptions(sourceOptions(options))
      assert(s.readsColumnar(ranges, layout), label)
      val (batchContext, rowContext) = (ReaderContext(layout), ReaderContext(layout))
      val (batches, batchesFinished) = readBatches(s, batchContext)
      val (rows, rowsFinished) = readRows(s, rowContext)
      assert(bySplit(batches) == bySplit(rows), label)
      assert(batches.map(_._2).size == 6 + 5, label)
      assert(batchesFinished.sorted == rowsFinished.sorted, label)
      assert(batchesFinished.sorted == Seq(split0.splitId, split1.splitId).sorted, label)
      assert(batchContext.bytesRead == rowContext.bytesRead && batchContext.bytesRead > 0, label)
    }
  }

  test("pruned columns: the batch holds those columns, in the source's order") {
    val s = KafkaSource.fromOptions(sourceOptions(Nil)).withColumns(Set("timestamp", "offset"))
    val (batches, _) = readBatches(s, ReaderContext())
    assert(bySplit(batches)(split1.splitId)._1 == (0 until 5).map { k =>
      val i = 2 * k + 1 // partition 1 holds the odd records
      Seq(k.toLong, (baseTs + i) * 1000L)
    })
    // no column at all (a count): rows of none, still one per record
    val (none, _) = readBatches(s.withColumns(Set.empty), ReaderContext())
    assert(none.map(_._2) == Seq.fill(11)(Seq.empty))
  }

  test("headers and parsed payloads are read as rows; open ranges are never batches") {
    assert(
      !KafkaSource
        .fromOptions(sourceOptions(Seq("includeHeaders" -> "true")))
        .readsColumnar(ranges, RecordLayout.Full))
    assert(
      !KafkaSource
        .fromOptions(sourceOptions(Seq("format" -> "json", "schema" -> "a INT")))
        .readsColumnar(ranges, RecordLayout.Full))
    assert(
      !KafkaSource
        .fromOptions(sourceOptions(Nil))
        .readsColumnar(Seq(SplitRange(split0, 0L, SplitRange.OpenEnd)), RecordLayout.Full))
  }

  test("records gone by retention are skipped and counted as by the row reader") {
    val gone = "columnar-retention"
    kafka.createTopic(gone, 1)
    kafka.produce(
      gone,
      (0 until 10).map(i => ProducedRecord.text(value = Some(s"v$i"), partition = Some(0))))
    assert(kafka.deleteRecords(gone, 0, 5L) == 5L)
    val split = KafkaPartitionSplit(gone, 0, 0L, None)
    val s = KafkaSource
      .fromOptions(sourceOptions(Seq("subscribe" -> gone, "failOnDataLoss" -> "false")))
      .withColumns(Set("offset"))
    val context = ReaderContext()
    val (read, finished) = readBatches(s, context, Seq(SplitRange(split, 0L, 10L)))
    val offsets = read.map(_._2.head)
    assert(finished == Seq(split.splitId))
    assert(offsets == (5L until 10L))
    assert(context.countersOf(split.splitId) == Map(ReaderCounters.DataLossOffsets -> 5L))
  }
}
