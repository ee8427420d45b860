package sluice.connector.generator

import scala.collection.mutable

import org.scalatest.funsuite.AnyFunSuite

import sluice.api.{RecordsWithSplitIds, SplitRange}
import sluice.config.RecordLayout

/** The generator in Flink's two parts, without Spark: the reader says which records exist, the emitter makes rows. */
class GeneratorRecordEmitterSuite extends AnyFunSuite {
  private val config = GeneratorConfig(
    splits = 3,
    recordsPerSplit = None,
    rowsPerSecond = None,
    eventTimeStartMs = 1000L,
    eventTimeStepMs = 10L,
    splitSkewMs = Map(2 -> 500L),
    payloadBytes = 8)

  private def record(split: Int, index: Long) = {
    val r = new GeneratedRecord
    r.split = GeneratorSplit(split, None)
    r.index = index
    r
  }

  test(
    "full rows: id, split, event time in microseconds and payload; the position after the record") {
    val emitter = new GeneratorRecordEmitter(config, RecordLayout.Full)
    assert(emitter.emit(record(2, 4L), "2"))
    val row = emitter.row
    assert(row.getLong(0) == 14L && row.getInt(1) == 2)
    assert(row.getLong(2) == (1000L + 500L + 40L) * 1000L)
    assert(row.getUTF8String(3).toString == "r14-xxxx")
    assert(emitter.eventTime == 1540L && emitter.arrivalTime == 1540L)
    assert(emitter.position == 5L)
    assert(!emitter.nextRow() && !emitter.hasMoreRows, "one row per record")
  }

  test("compact rows: id and payload, no event time") {
    val emitter = new GeneratorRecordEmitter(config, RecordLayout.Compact)
    assert(emitter.emit(record(1, 0L), "1"))
    assert(emitter.row.numFields == 2)
    assert(emitter.row.getLong(0) == 1L && emitter.row.getUTF8String(1).toString == "r1-xxxxx")
    assert(emitter.eventTime == RecordsWithSplitIds.NoTimestamp)
    assert(emitter.arrivalTime == RecordsWithSplitIds.NoTimestamp)
    assert(emitter.position == 1L)
  }

  test(
    "the reader's fetch: each readable split's records of its range, then the ranges finished") {
    val reader = new GeneratorReader(config, RecordLayout.Full)
    reader.handleSplitsChanges(
      Seq(
        SplitRange(GeneratorSplit(0, None), 3L, 6L),
        SplitRange(GeneratorSplit(1, None), 0L, 2L),
        SplitRange(GeneratorSplit(2, None), 0L, 1L)))
    reader.pauseOrResumeSplits(Seq(GeneratorSplit(2, None)), Nil)
    def read(): (Seq[(String, Long, Long, Long)], Set[String]) = {
      val fetched = reader.fetch()
      val out = mutable.ArrayBuffer[(String, Long, Long, Long)]()
      var split = fetched.nextSplit()
      while (split != null) {
        while (fetched.nextRecord())
          out += ((split, fetched.position, fetched.row.getLong(0), fetched.eventTime))
        split = fetched.nextSplit()
      }
      (out.toSeq, fetched.finishedSplits)
    }
    assert(
      read() == (
        Seq(
          ("0", 4L, 9L, 1030L),
          ("0", 5L, 12L, 1040L),
          ("0", 6L, 15L, 1050L),
          ("1", 1L, 1L, 1000L),
          ("1", 2L, 4L, 1010L)),
        Set.empty[String]),
      "a paused split gives nothing")
    reader.pauseOrResumeSplits(Nil, Seq(GeneratorSplit(2, None)))
    assert(read() == (Seq(("2", 1L, 2L, 1500L)), Set("0", "1")))
    assert(read() == (Nil, Set("2")))
    reader.close()
  }
}
