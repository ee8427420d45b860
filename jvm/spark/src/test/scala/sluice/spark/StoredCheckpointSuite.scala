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
    SourceCheckpoint(
      "file",
      1,
      "x" * 100,
      (0 until splits).map { i =>
        SplitEntry(
          s"/data/part-$i.json:0",
          1,
          s"""{"path":"/data/part-$i.json","start":0,"end":120}""",
          0,
          0,
          None,
          0)
      })

  private def folder(): SourceMetadata =
    new SourceMetadata(tempDir("source").toString, new Configuration())

  /** The checkpoint kept under `name`, and its size in bytes. */
  private def loaded(meta: SourceMetadata, name: String): SourceCheckpoint =
    SluiceOffset.fromJson(meta.load(name)).checkpoint
  private def bytesOf(meta: SourceMetadata, name: String): Long =
    meta.load(name).getBytes(UTF_8).length.toLong

  /** The chunk files in a source folder, by name, with their sizes. */
  private def chunkFiles(source: Path): Map[String, Long] = {
    val dir = source.resolve("sluice-checkpoints").resolve("chunks")
    if (!Files.isDirectory(dir)) Map.empty
    else
      Files
        .list(dir)
        .iterator()
        .asScala
        .filterNot(_.getFileName.toString.startsWith("."))
        .map(f => f.getFileName.toString -> Files.size(f))
        .toMap
  }

  test("a small checkpoint stays in the offset; a large one is kept in a file the offset names") {
    val bodies = folder()
    val small = SluiceOffset.keep(checkpoint(3), Some("sources/0"), bodies)
    assert(
      small.storedAs.isEmpty && small
        .json()
        .contains(s"\"version\":${SluiceOffset.InlineVersion}") && small
        .json()
        .contains("\"splits\":["))

    val large = SluiceOffset.keep(checkpoint(5000), Some("sources/0"), bodies)
    val name =
      large.storedAs.getOrElse(fail("a checkpoint of 5000 splits was not kept in a file"))
    assert(large.json().length < 300, large.json())
    assert(
      large.json().contains(s""""checkpoint":"$name"""") && large
        .json()
        .contains(s"\"version\":${SluiceOffset.StoredVersion}"))
    assert(SluiceOffset.fromJson(large.json(), Some(bodies)) == large)
    assert(SluiceOffset.fromJson(large.json(), Some(bodies)).checkpoint == checkpoint(5000))
    // the same checkpoint is the same file: Spark compares offsets by their JSON
    assert(SluiceOffset.keep(checkpoint(5000), Some("sources/0"), bodies).json() == large.json())
  }

  test(
    "a kept checkpoint that is missing, or an offset read without its folder, fails naming the file") {
    val bodies = folder()
    val large = SluiceOffset.keep(checkpoint(5000), Some("sources/0"), bodies)
    val noFolder = intercept[IllegalStateException](SluiceOffset.fromJson(large.json()))
    assert(noFolder.getMessage.contains(large.storedAs.get), noFolder.getMessage)
    bodies.retainOnly(Set.empty)
    val missing =
      intercept[IllegalStateException](SluiceOffset.fromJson(large.json(), Some(bodies)))
    assert(
      missing.getMessage.contains(
        s"sluice-checkpoints/${large.storedAs.get}.json, which is missing"),
      missing.getMessage)
    assert(
      missing.getMessage.contains("restore it whole, or start from a new checkpoint location"))
    val escape = intercept[IllegalArgumentException](bodies.load("../../offsets/0"))
    assert(escape.getMessage.contains("not a checkpoint name"))
  }

  test(
    "successive checkpoints share chunks: a batch writes what changed, a commit deletes chunks no kept one lists") {
    val dir = tempDir("source")
    val bodies = new SourceMetadata(dir.toString, new Configuration())
    val first = checkpoint(5000)
    val firstName = SluiceOffset.keep(first, Some("sources/0"), bodies).storedAs.get
    val before = chunkFiles(dir)
    val body = bytesOf(bodies, firstName)
    assert(
      before.size > 10 && before.values.sum == body,
      s"${before.size} chunks of ${before.values.sum} bytes")

    // one split moved on, ten files appended: a few new chunks, not the checkpoint again
    val moved = first.splits.updated(2500, first.splits(2500).copy(position = 60, records = 1))
    val second = first.copy(splits = moved ++ checkpoint(5010).splits.drop(5000))
    val secondName = SluiceOffset.keep(second, Some("sources/0"), bodies).storedAs.get
    val added = chunkFiles(dir) -- before.keySet
    assert(
      added.nonEmpty && added.size <= 4 && added.values.sum < body / 10,
      s"new chunks: $added of a $body-byte checkpoint")

    val reread =
      new SourceMetadata(dir.toString, new Configuration()) // no cache: everything from the files
    assert(loaded(reread, firstName) == first && loaded(reread, secondName) == second)

    // a chunk left by a write cut short, and the first checkpoint, go; the second keeps every chunk it lists
    Files.write(
      dir.resolve("sluice-checkpoints").resolve("chunks").resolve("ab" * 32),
      "stray".getBytes(UTF_8))
    bodies.retainOnly(Set(secondName))
    assert(loaded(new SourceMetadata(dir.toString, new Configuration()), secondName) == second)
    assert(
      chunkFiles(dir).values.sum == bytesOf(bodies, secondName),
      "only the second's chunks are left")
    val gone = intercept[IllegalStateException](
      new SourceMetadata(dir.toString, new Configuration()).load(firstName))
    assert(gone.getMessage.contains(s"$firstName.json, which is missing"), gone.getMessage)

    // a chunk whose content changed is caught: the checkpoint is named after its content
    val someChunk = chunkFiles(dir).keys.head
    Files.write(
      dir.resolve("sluice-checkpoints").resolve("chunks").resolve(someChunk),
      "{}".getBytes(UTF_8))
    val damaged = intercept[IllegalStateException](
      new SourceMetadata(dir.toString, new Configuration()).load(secondName))
    assert(
      damaged.getMessage.contains("do not hold the checkpoint it is named after"),
      damaged.getMessage)
  }

  test(
    "a checkpoint an earlier build kept whole (named by a version 2 offset) is still read, and deleted when unnamed") {
    val dir = tempDir("source")
    val whole =
      SluiceOffset(checkpoint(5000)).json().replaceFirst("\"version\":\\d+", "\"version\":2")
    val name = java.security.MessageDigest
      .getInstance("SHA-256")
      .digest(whole.getBytes(UTF_8))
      .map(b => f"${b & 0xff}%02x")
      .mkString
    Files.createDirectories(dir.resolve("sluice-checkpoints"))
    Files.write(dir.resolve("sluice-checkpoints").resolve(s"$name.json"), whole.getBytes(UTF_8))
    val offset =
      s"""{"version":2,"source":"file","member":"sources/0","checkpoint":"$name","splits":5000}"""
    val bodies = new SourceMetadata(dir.toString, new Configuration())
    assert(SluiceOffset.fromJson(offset, Some(bodies)).checkpoint == checkpoint(5000))
    // kept with a new checkpoint (chunked): both readable; unnamed, the whole one goes
    val newer = SluiceOffset.keep(checkpoint(5001), Some("sources/0"), bodies).storedAs.get
    bodies.retainOnly(Set(name, newer))
    assert(SluiceOffset.fromJson(offset, Some(bodies)).checkpoint == checkpoint(5000))
    bodies.retainOnly(Set(newer))
    assert(!Files.exists(dir.resolve("sluice-checkpoints").resolve(s"$name.json")))
    assert(
      loaded(new SourceMetadata(dir.toString, new Configuration()), newer) == checkpoint(5001))
  }

  test("a checkpoint kept again after its chunks were deleted is written again whole") {
    val dir = tempDir("source")
    val bodies = new SourceMetadata(dir.toString, new Configuration())
    val name = SluiceOffset.keep(checkpoint(5000), Some("sources/0"), bodies).storedAs.get
    bodies.retainOnly(Set.empty)
    assert(chunkFiles(dir).isEmpty)
    assert(SluiceOffset.keep(checkpoint(5000), Some("sources/0"), bodies).storedAs.contains(name))
    assert(
      loaded(new SourceMetadata(dir.toString, new Configuration()), name) == checkpoint(5000))
  }

  test(
    "a file rewritten on the local file system drops the checksum an earlier write through Hadoop left") {
    val dir = tempDir("source")
    val hadoop = org.apache.hadoop.fs.FileSystem.getLocal(new Configuration())
    val out = hadoop.create(
      new org.apache.hadoop.fs.Path(dir.toString, "sluice-initial-offset.json"),
      true)
    try out.write("""{"written":"by an earlier build"}""".getBytes(UTF_8))
    finally out.close()
    assert(Files.exists(dir.resolve(".sluice-initial-offset.json.crc")))
    val meta = new SourceMetadata(dir.toString, new Configuration())
    meta.writeInitialOffset("""{"written":"now"}""")
    assert(
      new SourceMetadata(dir.toString, new Configuration())
        .readInitialOffset()
        .contains("""{"written":"now"}"""))
    // Hadoop's local file system checks a file against its checksum when it reads it
    val in =
      hadoop.open(new org.apache.hadoop.fs.Path(dir.toString, "sluice-initial-offset.json"))
    try assert(new String(in.readAllBytes(), UTF_8) == """{"written":"now"}""")
    finally in.close()
  }

  test(
    "a checkpoint folder named with spaces, percent signs and non-ASCII letters is written where it says") {
    val dir = Files.createDirectories(tempDir("source").resolve("a b%20c ü"))
    val local = org.apache.hadoop.fs.FileSystem.getLocal(new Configuration())
    // as a plain path, and qualified as Spark passes it (a Hadoop path: "file:/...", not URI-encoded)
    for (root <- Seq(
        dir.toString,
        local.makeQualified(new org.apache.hadoop.fs.Path(dir.toString)).toString)) {
      val meta = new SourceMetadata(root, new Configuration())
      meta.writeInitialOffset(s"""{"root":"$root"}""")
      assert(
        new String(
          Files.readAllBytes(dir.resolve("sluice-initial-offset.json")),
          UTF_8) == s"""{"root":"$root"}""")
      val name = SluiceOffset.keep(checkpoint(5000), Some("sources/0"), meta).storedAs.get
      assert(loaded(new SourceMetadata(root, new Configuration()), name) == checkpoint(5000))
    }
  }

  test(
    "10,000 files: every offset in the log stays under 64 KiB, read files leave the checkpoint, a restart reads each line once",
    Slow) {
    val files = 10000
    val dir = tempDir("many")
    (0 until files).foreach { i =>
      Files.write(
        dir.resolve(f"part-$i%05d.json"),
        s"""{"id": $i, "v": "${"z" * (i % 17)}"}""".getBytes(UTF_8))
    }
    val source = FileSource.builder().path(dir.toString).schema("id INT, v STRING").build()
    val out = tempDir("sink").toString
    val ckpt = tempDir("ckpt").toString
    def start(trigger: Trigger) =
      Sluice
        .fromSource(spark, source, null, "many", Map("maxRecordsPerTrigger" -> "1000"))
        .select("id", "v")
        .writeStream
        .format("parquet")
        .option("path", out)
        .option("checkpointLocation", ckpt)
        .trigger(trigger)
        .start()

    val first = start(Trigger.ProcessingTime(0))
    try
      eventually("two batches of the first run", first)(
        first.recentProgress.count(_.numInputRows > 0) >= 2)
    finally first.stop()
    Checkpoints.lastSinkBatch(out).getOrElse(fail("the first run committed no batch"))
    val readFirst = spark.read.parquet(out).collect().toSeq.map(_.getInt(0))
    assert(
      readFirst.nonEmpty && readFirst.size < files && readFirst.distinct.size == readFirst.size,
      readFirst.size)

    val second = start(Trigger.AvailableNow())
    awaitEnd(second)
    assert(second.exception.isEmpty, second.exception)
    val got = spark.read.parquet(out).collect().toSeq
    val expected = (0 until files).map(i => Row(i, "z" * (i % 17)))
    assert(got.size == files && got.map(_.getInt(0)).distinct.size == files, s"${got.size} rows")
    assert(got.sortBy(_.getInt(0)) == expected)

    val logged = Checkpoints
      .offsetBatches(ckpt)
      .map(b => b -> Files.size(Path.of(ckpt, "offsets", b.toString)))
    assert(logged.size >= 10, logged)
    assert(logged.forall(_._2 <= 65536), s"offset log files (batch -> bytes): $logged")
    // only the files the last offsets name (and the initial offset's) are kept, however many
    // batches ran: the restarted run deletes what the first left once it committed its own
    val kept = Files
      .list(Path.of(ckpt, "sources", "0", "sluice-checkpoints"))
      .iterator()
      .asScala
      .toSeq
      .map(_.getFileName.toString)
      .filterNot(n => n.endsWith(".crc") || n == "chunks")
    assert(kept.nonEmpty && kept.size <= 4 && kept.forall(_.endsWith(".json")), kept)
    // and exactly the chunks those list
    val meta = new SourceMetadata(Path.of(ckpt, "sources", "0").toString, new Configuration())
    val listed = kept.flatMap { k =>
      val list = new String(
        Files.readAllBytes(Path.of(ckpt, "sources", "0", "sluice-checkpoints", k)),
        UTF_8)
      "[0-9a-f]{64}".r.findAllIn(list.substring(list.indexOf("\"chunks\""))).toSeq
    }.toSet
    assert(listed.nonEmpty && chunkFiles(Path.of(ckpt, "sources", "0")).keySet == listed)
    // a batch writes the chunks that changed, not the checkpoint again
    val written = second.recentProgress.toSeq
      .flatMap(p => Option(p.sources.head.metrics.get("checkpointBytesWritten")))
      .map(_.toLong)
    val perBatch = written.zip(written.drop(1)).map { case (a, b) => b - a }
    val largest = kept.map(k => bytesOf(meta, k.stripSuffix(".json"))).max
    info(
      s"bytes written per batch after the first: $perBatch; the largest checkpoint kept: $largest bytes")
    assert(
      perBatch.size >= 5 && perBatch.max < largest / 4,
      s"bytes written per batch $perBatch, checkpoints of $largest")
    // files read to their end left the checkpoint, summed up; every record counted once
    val last = Checkpoints.offset(ckpt, Checkpoints.offsetBatches(ckpt).last).checkpoint
    assert(
      last.finished.count > 0 && last.finished.count + last.splits.size == files,
      s"${last.finished} and ${last.splits.size} open splits")
    assert(second.lastProgress.sources.head.metrics.get("recordsRead") == files.toString)
    assert(second.lastProgress.sources.head.metrics.get("splits") == files.toString)
  }
}
