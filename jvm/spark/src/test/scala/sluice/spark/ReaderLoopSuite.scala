package sluice.spark

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}
import org.scalatest.LoneElement
import org.scalatest.funsuite.AnyFunSuite

import sluice.api.{ColumnarFetch, ColumnarSplitReader, ReaderContext, ReaderCounters, RecordsWithSplitIds, SourceSplit, SplitRange, SplitReader}
import sluice.runtime.LatencyMarkers

/**
 * The one reader loop alone, per task mode: a scripted split reader and a fake clock, no broker
 * and no SparkSession. What the end-to-end suites show through Spark is pinned here call by call:
 * which fetches the loop makes, where it cuts, how it waits, and when a task ends.
 */
class ReaderLoopSuite extends AnyFunSuite with LoneElement {
  import ReaderLoop.Advanced
  import ReaderLoopSuite._

  private val NoTime = RecordsWithSplitIds.NoTimestamp

  private def loopOf(
      mode: TaskMode,
      ranges: Seq[SplitRange[SourceSplit]],
      clock: FakeClock,
      latency: Option[LatencyMarkers] = None) =
    new ReaderLoop(
      SluiceInputPartition(ranges, mode),
      "test",
      ReaderContext(),
      eventTime = None,
      latency = latency,
      clock = clock)

  /** Rows until the loop says something else, as (split position after the record, row of it). */
  private def drain(
      loop: ReaderLoop,
      reader: FakeReader,
      deadline: Long = Long.MaxValue): (Seq[(Long, Int)], Advanced) = {
    val rows = mutable.ArrayBuffer[(Long, Int)]()
    var next = loop.nextRow(reader, deadline)
    while (next == Advanced.Record) {
      rows += ((loop.row.getLong(0), loop.row.getInt(1)))
      next = loop.nextRow(reader, deadline)
    }
    (rows.toSeq, next)
  }

  test(
    "micro-batch: fetches until every range is finished, then Finished; no waiting, no deadline") {
    val clock = new FakeClock(1000L)
    val reader = new FakeReader(
      clock,
      Fetch(Seq(Rec("a", 0, eventTime = 50), Rec("a", 1, eventTime = 40), Rec("b", 5))),
      Fetch(), // nothing this time: fetched again at once
      Fetch(finished = Set("b")),
      Fetch(Seq(Rec("a", 2, eventTime = 70)), finished = Set("a")))
    val loop = loopOf(TaskMode.MicroBatch, Seq(range("a", 0, 3), range("b", 5, 8)), clock)
    val (rows, end) = drain(loop, reader)
    assert(rows == Seq((1L, 0), (2L, 0), (6L, 0), (3L, 0)))
    assert(end == Advanced.Finished)
    assert(reader.calls == Seq(None, None, None, None), "fetch() without a wait, four times")
    assert(clock.sleeps.isEmpty && clock.now == 1000L, "a micro-batch never sleeps")
    assert(loop.nextRow(reader, Long.MaxValue) == Advanced.Finished, "and stays finished")
    assert(reader.calls.size == 4)
    assert(
      loop
        .reports(latencyMarkers = true)
        .sortBy(_.splitId)
        .map(r => (r.splitId, r.from, r.until, r.maxEventTime, r.records)) == Seq(
        ("a", 0L, 3L, Some(70L), 3L),
        ("b", 5L, 8L, None, 1L)),
      "a finished bounded range counts to its end; the largest event time, no time is none")
  }

  test(
    "micro-batch: a record that starts past its range is refused, whatever the positions count") {
    val clock = new FakeClock(0L)
    // positions count records: the record at 3 starts at the range's end
    val records = new FakeReader(clock, Fetch(Seq(Rec("a", 2), Rec("a", 3))))
    val loop = loopOf(TaskMode.MicroBatch, Seq(range("a", 0, 3)), clock)
    assert(loop.nextRow(records, Long.MaxValue) == Advanced.Record)
    val e = intercept[IllegalStateException](loop.nextRow(records, Long.MaxValue))
    assert(
      e.getMessage == "Sluice: the test reader returned a record of split a that starts at " +
        "position 3, past the range [0, 3) this task reads; it would be read again by the next " +
        "batch. This is a bug in the connector's reader.")

    // byte positions: a record starts where the last one ended, and may end past the range
    val bytes =
      new FakeReader(clock, Fetch(Seq(Rec("f", 39), Rec("f", 89), Rec("f", 129), Rec("f", 169))))
    val files = loopOf(TaskMode.MicroBatch, Seq(range("f", 0, 100, countsRecords = false)), clock)
    assert((1 to 3).map(_ => files.nextRow(bytes, Long.MaxValue)).forall(_ == Advanced.Record))
    assert(files.row.getLong(0) == 130L, "the record starting at 90 ends past the range: read")
    val past = intercept[IllegalStateException](files.nextRow(bytes, Long.MaxValue))
    assert(past.getMessage.contains("starts at position 130, past the range [0, 100)"))
  }

  test("micro-batch: a task without ranges is finished at once, without a fetch") {
    val clock = new FakeClock(0L)
    val reader = new FakeReader(clock)
    assert(loopOf(TaskMode.MicroBatch, Nil, clock).nextRow(reader, 0L) == Advanced.Finished)
    assert(reader.calls.isEmpty)
  }

  for (mode <- Seq(TaskMode.RealTime, TaskMode.Continuous)) {
    test(
      s"$mode: each fetch waits until the deadline at most, and an empty one is followed by a short wait") {
      val clock = new FakeClock(1000L)
      val reader = new FakeReader(clock) // nothing arrives: each fetch blocks a poll slice
      val loop = loopOf(mode, Seq(range("a", 0, SplitRange.OpenEnd)), clock)
      assert(loop.nextRow(reader, 1100L) == Advanced.Waiting)
      assert(
        reader.calls == Seq(Some(100L), Some(60L), Some(20L)),
        "each fetch waits at most until the deadline")
      assert(clock.sleeps == Seq(ReaderLoop.IdleWaitMs, ReaderLoop.IdleWaitMs))
      assert(clock.now == 1100L)
      // the next call Spark makes goes on where this one stopped: after an empty fetch, a wait
      assert(loop.nextRow(reader, 1103L) == Advanced.Waiting)
      assert(clock.sleeps.last == 3L, "the wait never passes the deadline either")
      assert(reader.calls.last == Some(1L), "a fetch at the deadline still waits a millisecond")
      assert(reader.calls.size == 4 && clock.now == 1104L)
    }

    test(s"$mode: Finished never ends the task; read ranges wait for the batch's end") {
      val clock = new FakeClock(1000L)
      val reader =
        new FakeReader(clock, Fetch(Seq(Rec("a", 0), Rec("a", 1)), finished = Set("a")))
      val loop = loopOf(mode, Seq(range("a", 0, 2)), clock)
      val (rows, end) = drain(loop, reader, deadline = 1020L)
      assert(rows == Seq((1L, 0), (2L, 0)))
      assert(end == Advanced.Waiting, "an open batch ends when the engine ends it")
      assert(
        reader.calls == Seq(Some(20L)),
        "nothing left to fetch: no fetch after the range ended")
      assert(clock.sleeps == Seq(5L, 5L, 5L, 5L) && clock.now == 1020L)
      val a = loop.reports(latencyMarkers = false).loneElement
      assert((a.from, a.until, a.records) == (0L, 2L, 2L))

      val empty = loopOf(mode, Nil, clock)
      assert(empty.nextRow(reader, 1030L) == Advanced.Waiting, "a task without ranges waits too")
      assert(clock.now == 1030L && reader.calls.size == 1)
    }

    test(
      s"$mode: a record handed out in part is reported from its start, and arrival times are kept") {
      val clock = new FakeClock(0L)
      val reader = new FakeReader(
        clock,
        Fetch(Seq(Rec("a", 0, rows = 2, arrival = 700L), Rec("a", 1, rows = 1, arrival = 800L))))
      val loop = loopOf(mode, Seq(range("a", 0, SplitRange.OpenEnd)), clock)
      assert(loop.nextRow(reader, 100L) == Advanced.Record && loop.row.getInt(1) == 0)
      assert(loop.arrivalTime == 700L)
      assert(loop.reports(latencyMarkers = false).isEmpty, "the record at 0 is not read yet")
      assert(loop.nextRow(reader, 100L) == Advanced.Record && loop.row.getInt(1) == 1)
      assert(loop.reports(latencyMarkers = false).loneElement.until == 1L)
      assert(loop.nextRow(reader, 100L) == Advanced.Record && loop.arrivalTime == 800L)
      val a = loop.reports(latencyMarkers = false).loneElement
      assert((a.until, a.records) == (2L, 3L), "rows are counted, positions are records")
    }
  }

  test("micro-batch: rows of one record are all handed out; no arrival time is kept") {
    val clock = new FakeClock(0L)
    val reader = new FakeReader(clock, Fetch(Seq(Rec("a", 0, rows = 3, arrival = 5L)), Set("a")))
    val loop = loopOf(TaskMode.MicroBatch, Seq(range("a", 0, 1)), clock)
    val (rows, end) = drain(loop, reader)
    assert(rows == Seq((1L, 0), (1L, 1), (1L, 2)) && end == Advanced.Finished)
    assert(loop.arrivalTime == NoTime, "arrival times are for real-time mode's metrics")
  }

  test(
    "column batches: a batch is one step of its split, its rows the records; empty ones skipped") {
    val clock = new FakeClock(0L)
    val reader = new FakeColumnarReader(
      Columns("a", rows = 3, position = 3, times = Seq(10L, 30L, 20L)),
      Columns(null, rows = 0, position = 0),
      Columns("a", rows = 0, position = 3),
      Columns("a", rows = 2, position = 5, finished = Set("a")))
    val loop = loopOf(TaskMode.MicroBatch, Seq(range("a", 0, 5)), clock)
    assert(loop.nextBatch(reader) && loop.batch.numRows() == 3)
    assert(loop.nextBatch(reader) && loop.batch.numRows() == 2)
    assert(!loop.nextBatch(reader), "every range read")
    assert(reader.fetches == 4)
    val a = loop.reports(latencyMarkers = true).loneElement
    assert((a.from, a.until, a.records, a.maxEventTime) == (0L, 5L, 5L, Some(30L)))

    val past = new FakeColumnarReader(Columns("a", rows = 2, position = 7))
    val e = intercept[IllegalStateException](
      loopOf(TaskMode.MicroBatch, Seq(range("a", 0, 5)), clock).nextBatch(past))
    assert(e.getMessage.contains("starts at position 6, past the range [0, 5)"))
  }

  test("metrics: the task's figures, exact at every call, set in place; figures at 0 left out") {
    val clock = new FakeClock(0L)
    val context = ReaderContext()
    val reader = new FakeReader(
      clock,
      Fetch(Seq(Rec("a", 0), Rec("a", 1), Rec("f", 39), Rec("f", 89))),
      Fetch(Seq(Rec("a", 2)), finished = Set("a", "f")))
    val loop = new ReaderLoop(
      SluiceInputPartition(
        Seq(range("a", 0, 3), range("f", 0, 100, countsRecords = false)),
        TaskMode.MicroBatch),
      "test",
      context,
      eventTime = None,
      clock = clock)
    def figures(): Map[String, Long] = loop.metrics().map(m => m.name() -> m.value()).toMap
    assert(
      ReaderMetrics.Figures.toSet == ReaderMetrics.supported.map(_.name()).toSet,
      "every figure is a declared metric of the scan, and every declared metric a figure")

    assert(
      figures().isEmpty,
      "nothing read: every figure is 0, the scan's metrics' initial value")
    (1 to 4).foreach(_ => assert(loop.nextRow(reader, Long.MaxValue) == Advanced.Record))
    context.addBytesRead(7L)
    val answer = loop.metrics()
    assert(
      figures() == Map(ReaderMetrics.RecordsRead -> 4L, ReaderMetrics.BytesRead -> (90L + 7L)),
      "records, and the bytes the reader counted plus the bytes of byte positions read")
    assert(loop.metrics() eq answer, "the same answer while the figures at 0 stay at 0")

    context.count("a", ReaderCounters.MalformedRecordsDropped, 2L)
    context.count("f", ReaderCounters.MalformedRecordsDropped, 1L)
    context.count("f", ReaderMetrics.AlignmentPausedMs, 5L)
    context.count("elsewhere", ReaderCounters.DataLossOffsets, 9L) // not a split of this task
    assert(
      figures() == Map(
        ReaderMetrics.RecordsRead -> 4L,
        ReaderMetrics.BytesRead -> 97L,
        ReaderMetrics.AlignmentPausedMs -> 5L,
        ReaderCounters.MalformedRecordsDropped -> 3L),
      "counters summed over the task's splits")
    val recordsRead = loop.metrics().find(_.name() == ReaderMetrics.RecordsRead).get
    assert(answer.exists(_ eq recordsRead), "one object per figure, set in place")

    assert(loop.nextRow(reader, Long.MaxValue) == Advanced.Record)
    context.count("a", ReaderCounters.MalformedRecordsDropped, 1L)
    assert(
      figures() == Map(
        ReaderMetrics.RecordsRead -> 5L,
        ReaderMetrics.BytesRead -> 97L,
        ReaderMetrics.AlignmentPausedMs -> 5L,
        ReaderCounters.MalformedRecordsDropped -> 4L),
      "a counter counted since the last call is summed again")
    assert(recordsRead.value() == 5L)
    assert(loop.nextRow(reader, Long.MaxValue) == Advanced.Finished)
    assert(figures()(ReaderMetrics.BytesRead) == 97L, "the bytes of the records read")
  }

  test("latency markers: at most one per interval, taken from the record's arrival, sent once") {
    val clock = new FakeClock(0L)
    val arrived = System.currentTimeMillis() - 60000L // markers read the wall clock themselves
    val reader = new FakeReader(
      clock,
      Fetch((0 until 200).map(i => Rec("a", i, arrival = arrived)), finished = Set("a")))
    val loop = loopOf(
      TaskMode.MicroBatch,
      Seq(range("a", 0, 200)),
      clock,
      latency = Some(new LatencyMarkers(3600000L)))
    assert(drain(loop, reader)._1.size == 200)
    val markers = loop.reports(latencyMarkers = true).loneElement.latencyMarkersMs
    assert(markers.size == 1, "one interval: one marker")
    assert(markers.head >= 60000L && markers.head < 120000L, markers)
    assert(
      loop.reports(latencyMarkers = false).loneElement.latencyMarkersMs.isEmpty,
      "reports sent while the task runs carry none: markers travel once")

    val without = loopOf(TaskMode.MicroBatch, Seq(range("a", 0, 1)), clock)
    drain(without, new FakeReader(clock, Fetch(Seq(Rec("a", 0, arrival = arrived)), Set("a"))))
    assert(without.reports(latencyMarkers = true).loneElement.latencyMarkersMs.isEmpty)
  }
}

object ReaderLoopSuite {

  final case class TestSplit(splitId: String, override val positionsCountRecords: Boolean)
      extends SourceSplit {
    override def startPosition: Long = 0L
    override def stopPosition: Option[Long] = None
  }

  def range(
      id: String,
      from: Long,
      until: Long,
      countsRecords: Boolean = true): SplitRange[SourceSplit] =
    SplitRange(TestSplit(id, countsRecords), from, until)

  /**
   * One record at `at` (an offset, or where a byte record starts when `at` is its last byte):
   * the split's position after it is `at + 1`; `rows` rows of it, the i-th being (at + 1, i).
   */
  final case class Rec(
      split: String,
      at: Long,
      eventTime: Long = RecordsWithSplitIds.NoTimestamp,
      arrival: Long = RecordsWithSplitIds.NoTimestamp,
      rows: Int = 1)

  final case class Fetch(records: Seq[Rec] = Nil, finished: Set[String] = Set.empty)

  /** The time the loop reads; sleeping moves it and is recorded. */
  final class FakeClock(var now: Long) extends ReaderLoop.Clock {
    val sleeps = mutable.ArrayBuffer[Long]()
    override def nowMs(): Long = now
    override def sleep(ms: Long): Unit = { sleeps += ms; now += ms }
  }

  /**
   * Hands out its script one fetch per call; once it is used up, nothing arrives, and a fetch
   * given a wait blocks for it, at most a poll slice of 35 ms (as a consumer's poll would).
   * Records which fetches were made: None for `fetch()`, the wait for `fetch(maxWaitMs)`.
   */
  final class FakeReader(clock: FakeClock, script: Fetch*) extends SplitReader[SourceSplit] {
    private val pending = mutable.Queue(script: _*)
    val calls = mutable.ArrayBuffer[Option[Long]]()

    override def handleSplitsChanges(ranges: Seq[SplitRange[SourceSplit]]): Unit = ()

    override def fetch(): RecordsWithSplitIds = {
      calls += None
      next()
    }

    override def fetch(maxWaitMs: Long): RecordsWithSplitIds = {
      calls += Some(maxWaitMs)
      if (pending.isEmpty) clock.now += math.min(maxWaitMs, 35L)
      next()
    }

    private def next(): RecordsWithSplitIds =
      if (pending.isEmpty) RecordsWithSplitIds.empty(Set.empty)
      else new Records(pending.dequeue())

    override def close(): Unit = ()
  }

  /** One fetch of column batches: `rows` rows of split `split` (null: no batch), with their times. */
  final case class Columns(
      split: String,
      rows: Int,
      position: Long,
      times: Seq[Long] = Nil,
      finished: Set[String] = Set.empty)

  /** Hands out its script one fetch per call (batches without columns: the loop reads none). */
  final class FakeColumnarReader(script: Columns*) extends ColumnarSplitReader[SourceSplit] {
    private val pending = mutable.Queue(script: _*)
    var fetches = 0

    override def handleSplitsChanges(ranges: Seq[SplitRange[SourceSplit]]): Unit = ()

    override def fetch(): ColumnarFetch = {
      fetches += 1
      val c = pending.dequeue()
      new ColumnarFetch {
        override val splitId: String = c.split
        override val batch: ColumnarBatch =
          if (c.split == null) null else new ColumnarBatch(Array.empty[ColumnVector], c.rows)
        override def position: Long = c.position
        override def recordTime(row: Int): Long =
          if (c.times.isEmpty) RecordsWithSplitIds.NoTimestamp else c.times(row)
        override def finishedSplits: Set[String] = c.finished
      }
    }

    override def close(): Unit = ()
  }

  /** One fetch's records by split, in the order the script gives the splits. */
  private final class Records(fetch: Fetch) extends RecordsWithSplitIds {
    private val bySplit = fetch.records.groupBy(_.split)
    private val splits = fetch.records.map(_.split).distinct.iterator
    private var records: Iterator[Rec] = Iterator.empty
    private var record: Rec = _
    private var rowIndex = 0

    override def nextSplit(): String =
      if (!splits.hasNext) null
      else {
        val id = splits.next()
        records = bySplit(id).iterator
        id
      }

    override def nextRecord(): Boolean =
      if (record != null && rowIndex + 1 < record.rows) { rowIndex += 1; true }
      else if (records.hasNext) { record = records.next(); rowIndex = 0; true }
      else false

    override def row: InternalRow = InternalRow(record.at + 1, rowIndex)
    override def eventTime: Long = record.eventTime
    override def arrivalTime: Long = record.arrival
    override def position: Long = record.at + 1
    override def finishedSplits: Set[String] = fetch.finished
    override def recordHasMoreRows: Boolean = rowIndex + 1 < record.rows
  }
}
