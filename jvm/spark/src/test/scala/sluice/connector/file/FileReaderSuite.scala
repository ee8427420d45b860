package sluice.connector.file

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import scala.collection.mutable

import org.scalatest.funsuite.AnyFunSuite

import sluice.SparkSuiteBase
import sluice.api.SplitRange

/** The reader's line positions, without a query: every cut of a file partitions its lines. */
class FileReaderSuite extends AnyFunSuite with SparkSuiteBase {
  import FileReaderSuite._

  private val content =
    "first\nsecond\r\nthird\rfourth\n\n\r\n\rlong " + ("é" * 300) + "\r\nx\r\r\n\nlast, no newline"

  /** The lines as (start byte, text), by Hadoop's rules. */
  private val expected: Seq[(Long, String)] = {
    val out = mutable.ArrayBuffer[(Long, String)]()
    val bytes = content.getBytes(UTF_8)
    var start = 0
    var i = 0
    while (i < bytes.length) {
      if (bytes(i) == '\n' || bytes(i) == '\r') {
        out += start.toLong -> new String(bytes, start, i - start, UTF_8)
        if (bytes(i) == '\r' && i + 1 < bytes.length && bytes(i + 1) == '\n') i += 1
        start = i + 1
      }
      i += 1
    }
    if (start < bytes.length)
      out += start.toLong -> new String(bytes, start, bytes.length - start, UTF_8)
    out.toSeq
  }

  private lazy val dir = FileTestData.write(tempDir("lines"), Seq("f.txt" -> content))
  private def textSource(extra: FileSource.Builder => FileSource.Builder = identity) =
    extra(FileSource.builder().path(dir.toString).format("text")).build()

  test("byte-range splits of every size read each line once, in order") {
    Seq(1L, 3L, 16L, 100L, 100000L).foreach { size =>
      val source = textSource(_.maxSplitBytes(size))
      val splits = source.createEnumerator().discoverSplits()
      val lines = splits.flatMap(s => readAll(source, Seq(s -> (s.start, s.end)))._1)
      assert(lines.map(l => (l._2, l._3)) == expected, s"maxSplitBytes $size")
    }
  }

  test(
    "resuming at any position a read reported, or cutting a range anywhere, loses and repeats nothing") {
    val source = textSource()
    val split = source.createEnumerator().discoverSplits().head
    val (all, _) = readAll(source, Seq(split -> (0L, split.end)))
    // positions after each line: where a restarted query resumes
    all.map(_._1).filter(_ < split.end).foreach { p =>
      val (before, _) = readAll(source, Seq(split -> (0L, p)))
      val (after, _) = readAll(source, Seq(split -> (p, split.end)))
      assert((before ++ after).map(_._3) == expected.map(_._2), s"resume at $p")
    }
    val rnd = new scala.util.Random(7)
    (0 until 30).foreach { _ =>
      val cuts =
        (0L +: Seq.fill(4)(rnd.nextInt(split.end.toInt).toLong) :+ split.end).distinct.sorted
      val lines = cuts
        .sliding(2)
        .flatMap { case Seq(a, b) => readAll(source, Seq(split -> (a, b)))._1 }
        .toSeq
      assert(lines.map(l => (l._2, l._3)) == expected, s"cuts $cuts")
    }
  }

  test(
    "a paused range is set aside, open, while the others are read, and resumes where it stopped (FLIP-217)") {
    // a range longer than one fetch, so that it is paused half-way; and a short one
    val files = FileTestData.write(
      tempDir("pause"),
      Seq(
        "a.txt" -> (0 until 20000).map(i => s"a$i").mkString("\n"),
        "b.txt" -> (0 until 10).map(i => s"b$i").mkString("\n")))
    val source = FileSource.builder().path(files.toString).format("text").build()
    val Seq(a, b) = source.createEnumerator().discoverSplits()
    val reader = source.createReader(sluice.api.ReaderContext())
    try {
      reader.handleSplitsChanges(
        Seq(SplitRange(a, a.start, a.end), SplitRange(b, b.start, b.end)))
      val seen = mutable.ArrayBuffer[String]()
      def fetchOnce(): Set[String] = {
        val r = reader.fetch()
        var split = r.nextSplit()
        while (split != null) {
          while (r.nextRecord())
            seen += String.valueOf(r.row.get(0, org.apache.spark.sql.types.StringType))
          split = r.nextSplit()
        }
        r.finishedSplits
      }
      fetchOnce() // the first fetch of a
      val readOfA = seen.size
      assert(readOfA > 0 && readOfA < 20000)
      reader.pauseOrResumeSplits(Seq(a), Nil)
      reader.pauseOrResumeSplits(
        Seq(a.copy(path = "not-mine")),
        Nil
      ) // not owned: ignored, no error
      val finishedWhilePaused = (0 until 10).flatMap(_ => fetchOnce()).toSet
      assert(finishedWhilePaused == Set(b.splitId))
      assert(seen.drop(readOfA) == (0 until 10).map(i => s"b$i"))
      reader.pauseOrResumeSplits(Nil, Seq(a))
      val finishedAfter = (0 until 10).flatMap(_ => fetchOnce()).toSet
      assert(finishedAfter == Set(a.splitId))
      // a's lines exactly once and in order, across the pause
      assert(seen.filter(_.startsWith("a")) == (0 until 20000).map(i => s"a$i"))
    } finally reader.close()
  }

  test("a csv header is skipped only where the file starts, even when a range resumes after it") {
    val csv = FileTestData.write(tempDir("hdr"), Seq("h.csv" -> "\n\nid,name\n1,a\n2,b\n"))
    val source = FileSource
      .builder()
      .path(csv.toString)
      .format("csv")
      .schema("id INT, name STRING")
      .option("header", "true")
      .build()
    val split = source.createEnumerator().discoverSplits().head
    val (rows, _) = readAll(source, Seq(split -> (0L, split.end)))
    assert(rows.map(_._3) == Seq("1", "2"))
    val (resumed, _) = readAll(source, Seq(split -> (3L, split.end)))
    assert(resumed.map(_._3) == Seq("1", "2"))
  }
}

object FileReaderSuite {

  /** (position after, line start, first column as a string) per row, and the splits finished. */
  def drain(
      reader: FileReader,
      ranges: Seq[SplitRange[FileSplit]]): (Seq[(Long, Long, String)], Set[String]) = {
    reader.handleSplitsChanges(ranges)
    val rows = mutable.ArrayBuffer[(Long, Long, String)]()
    var finished = Set.empty[String]
    var guard = 0
    while (finished.size < ranges.size) {
      guard += 1
      require(guard < 100000, "reader never finished")
      val r = reader.fetch()
      var split = r.nextSplit()
      while (split != null) {
        while (r.nextRecord()) {
          val row = r.row
          val width = row.numFields
          rows += ((
            r.position,
            row.getLong(width - 2),
            String.valueOf(row.get(0, org.apache.spark.sql.types.StringType))))
        }
        split = r.nextSplit()
      }
      finished ++= r.finishedSplits
    }
    (rows.toSeq, finished)
  }

  def readAll(
      source: FileSource,
      ranges: Seq[(FileSplit, (Long, Long))]): (Seq[(Long, Long, String)], Set[String]) = {
    val reader = source.createReader(sluice.api.ReaderContext())
    try drain(reader, ranges.map { case (s, (a, b)) => SplitRange(s, a, b) })
    finally reader.close()
  }
}
