package sluice.spark

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.Row
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Checkpoints, Slow, Sluice, SparkSuiteBase}
import sluice.connector.file.FileSource
import sluice.runtime.{SourceCheckpoint, SplitEntry}

/**
 * Checkpoints too large for Spark's offset log (thousands of splits) are kept in the source's
 * folder and named by the offset: the log stays small, and recovery is as exact as before.
 */
class StoredCheckpointSuite extends AnyFunSuite with SparkSuiteBase {

  private def checkpoint(splits: Int): SourceCheckpoint =
    SourceCheckpoint("file", 1, "x" * 100, (0 until splits).map { i =>
      SplitEntry(s"/data/part-$i.json:0", 1, s"""{"path":"/data/part-$i.json","start":0,"end":120}""", 0, 0, None, 0)
    })

  private def folder(): SourceMetadata = new SourceMetadata(tempDir("source").toString, new Configuration())

  test("a small checkpoint stays in the offset; a large one is kept in a file the offset names") {
    val bodies = folder()
    val small = SluiceOffset.keep(checkpoint(3), Some("sources/0"), bodies)
    assert(small.storedAs.isEmpty && small.json().contains("\"version\":2") && small.json().contains("\"splits\":["))

    val large = SluiceOffset.keep(checkpoint(5000), Some("sources/0"), bodies)
    val name = large.storedAs.getOrElse(fail("a checkpoint of 5000 splits was not kept in a file"))
    assert(large.json().length < 300, large.json())
    assert(large.json().contains(s""""checkpoint":"$name"""") && large.json().contains("\"version\":2"))
    assert(SluiceOffset.fromJson(large.json(), Some(bodies)) == large)
    assert(SluiceOffset.fromJson(large.json(), Some(bodies)).checkpoint == checkpoint(5000))
    // the same checkpoint is the same file: Spark compares offsets by their JSON
    assert(SluiceOffset.keep(checkpoint(5000), Some("sources/0"), bodies).json() == large.json())
  }

  test("a kept checkpoint that is missing, or an offset read without its folder, fails naming the file") {
    val bodies = folder()
    val large = SluiceOffset.keep(checkpoint(5000), Some("sources/0"), bodies)
    val noFolder = intercept[IllegalStateException](SluiceOffset.fromJson(large.json()))
    assert(noFolder.getMessage.contains(large.storedAs.get), noFolder.getMessage)
    bodies.retainOnly(Set.empty)
    val missing = intercept[IllegalStateException](SluiceOffset.fromJson(large.json(), Some(bodies)))
    assert(missing.getMessage.contains(s"sluice-checkpoints/${large.storedAs.get}.json, which is missing"), missing.getMessage)
    assert(missing.getMessage.contains("restore it whole, or start from a new checkpoint location"))
    val escape = intercept[IllegalArgumentException](bodies.load("../../offsets/0"))
    assert(escape.getMessage.contains("not a checkpoint name"))
  }

  test("10,000 files: every offset in the log stays under 64 KiB, read files leave the checkpoint, a restart reads each line once",
    Slow) {
    val files = 10000
    val dir = tempDir("many")
    (0 until files).foreach { i =>
      Files.write(dir.resolve(f"part-$i%05d.json"), s"""{"id": $i, "v": "${"z" * (i % 17)}"}""".getBytes(UTF_8))
    }
    val source = FileSource.builder().path(dir.toString).schema("id INT, v STRING").build()
    val out = tempDir("sink").toString
    val ckpt = tempDir("ckpt").toString
    def start(trigger: Trigger) =
      Sluice.fromSource(spark, source, null, "many", Map("maxRecordsPerTrigger" -> "1000"))
        .select("id", "v").writeStream.format("parquet").option("path", out).option("checkpointLocation", ckpt)
        .trigger(trigger).start()

    val first = start(Trigger.ProcessingTime(0))
    try eventually("two batches of the first run", first)(first.recentProgress.count(_.numInputRows > 0) >= 2)
    finally first.stop()
    Checkpoints.lastSinkBatch(out).getOrElse(fail("the first run committed no batch"))
    val readFirst = spark.read.parquet(out).collect().toSeq.map(_.getInt(0))
    assert(readFirst.nonEmpty && readFirst.size < files && readFirst.distinct.size == readFirst.size, readFirst.size)

    val second = start(Trigger.AvailableNow())
    awaitEnd(second)
    assert(second.exception.isEmpty, second.exception)
    val got = spark.read.parquet(out).collect().toSeq
    val expected = (0 until files).map(i => Row(i, "z" * (i % 17)))
    assert(got.size == files && got.map(_.getInt(0)).distinct.size == files, s"${got.size} rows")
    assert(got.sortBy(_.getInt(0)) == expected)

    val logged = Checkpoints.offsetBatches(ckpt).map(b => b -> Files.size(Path.of(ckpt, "offsets", b.toString)))
    assert(logged.size >= 10, logged)
    assert(logged.forall(_._2 <= 65536), s"offset log files (batch -> bytes): $logged")
    // only the files the last offsets name (and the initial offset's) are kept, however many
    // batches ran: the restarted run deletes what the first left once it committed its own
    val kept = Files.list(Path.of(ckpt, "sources", "0", "sluice-checkpoints")).iterator().asScala.toSeq
      .map(_.getFileName.toString).filterNot(_.endsWith(".crc"))
    assert(kept.nonEmpty && kept.size <= 4 && kept.forall(_.endsWith(".json")), kept)
    // files read to their end left the checkpoint, summed up; every record counted once
    val last = Checkpoints.offset(ckpt, Checkpoints.offsetBatches(ckpt).last).checkpoint
    assert(last.finished.count > 0 && last.finished.count + last.splits.size == files,
      s"${last.finished} and ${last.splits.size} open splits")
    assert(second.lastProgress.sources.head.metrics.get("recordsRead") == files.toString)
    assert(second.lastProgress.sources.head.metrics.get("splits") == files.toString)
  }
}
