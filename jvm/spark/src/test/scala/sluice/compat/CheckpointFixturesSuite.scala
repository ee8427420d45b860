package sluice.compat

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Checkpoints, SparkSuiteBase}
import sluice.compat.CheckpointFixtures._
import sluice.spark.{SluiceOffset, SourceMetadata}
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/**
 * Checkpoints written by earlier builds (kept under `src/test/resources/checkpoints`, written by
 * [[WriteCheckpointFixtures]]) restarted with this build: each reads on exactly where it stopped,
 * the rows its committed batches gave never again and every other row once. A format change must
 * keep these green; a checkpoint of a newer format is refused, naming both versions.
 */
class CheckpointFixturesSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  private def counts(rows: Seq[String]): Map[String, Int] =
    rows.groupBy(identity).map { case (r, s) => r -> s.size }

  /**
   * A copy of the kept fixture `name`, its paths those of the copy, its topics in the broker
   * (their ids put in its checkpoint).
   */
  private def restore(fixture: CheckpointFixture): Path = {
    val name = fixture.name
    val kept = root.resolve(name)
    assert(
      Files.isDirectory(checkpointOf(kept)),
      s"no fixture at $kept: write it with WriteCheckpointFixtures (docs/development.md)")
    val work = tempDir(s"fixture-$name")
    copyTree(kept, work)
    val input = Files.createDirectories(inputOf(work))
    fixture.relocateInput(input, InputPlaceholder, input.toString)
    setInputTimes(input)
    rewritePaths(checkpointOf(work), InputPlaceholder, input.toString)
    readTopics(kept).foreach { t =>
      kafka.createTopic(t.name, t.partitions)
      kafka.produce(
        t.name,
        t.records.map(r =>
          ProducedRecord
            .text(
              value = Some(r.value),
              partition = Some(r.partition),
              timestamp = Some(r.timestamp))))
      rewritePaths(
        checkpointOf(work),
        topicIdPlaceholder(t.name),
        topicId(kafka.bootstrapServers, t.name))
    }
    work
  }

  /**
   * The fixture's query started again on its checkpoint, to read what is left and end (in
   * real-time mode, which never ends by itself: to read `rows` rows, then stop).
   */
  private def restart(fixture: CheckpointFixture, work: Path, rows: Int = 0): FixtureRun =
    if (!fixture.realTime)
      new FixtureRun(
        fixture.stream(spark, inputOf(work), kafka.bootstrapServers),
        checkpointOf(work),
        Trigger.AvailableNow(),
        realTime = false)
    else {
      val run = new FixtureRun(
        fixture.stream(spark, inputOf(work), kafka.bootstrapServers),
        checkpointOf(work),
        Trigger.RealTime(RealTimeBatch),
        realTime = true)
      try
        eventually(s"$rows rows read after the restart (${run.all.size} so far)", run.query) {
          run.all.size >= rows
        }
      finally run.query.stop()
      run
    }

  All.foreach { fixture =>
    test(s"a '${fixture.name}' checkpoint kept by an earlier build reads on where it stopped") {
      val work = restore(fixture)
      val committed = readCommitted(work)
      assert(committed.nonEmpty && committed.size < fixture.all.size, committed)
      // what this fixture proves is read: an offset format rewritten by a later writer would not
      assert(
        offsetVersions(checkpointOf(work)) == Set(fixture.offsetVersion),
        s"the kept offsets of ${fixture.name} are not all of version ${fixture.offsetVersion}")
      assertHeld(fixture, checkpointOf(work))
      val logged = Checkpoints.offsetBatches(checkpointOf(work).toString).max
      val done = Checkpoints.batchIds(checkpointOf(work).resolve("commits").toFile).max
      // a batch in flight is replayed from offsets the kept build wrote; none is otherwise
      assert(
        logged == (if (fixture.inFlight) done + 1 else done),
        s"logged $logged, committed $done")
      fixture.finishedBeforeLast.foreach { expected =>
        val finished = Checkpoints.offset(checkpointOf(work).toString, logged).checkpoint.finished
        assert(
          (finished.count, finished.records, finished.maxEventTime) == expected,
          s"the splits finished before batch $logged, as this build reads its kept offset")
      }
      fixture.continuesAt(committed, inputOf(work)).foreach { case (source, positions) =>
        val offset = Checkpoints.offset(checkpointOf(work).toString, done, source)
        val read = offset.splits.map(e => e.splitId -> e.position).toMap
        // a split read to its end before the batch leaves the offset's splits, counted among
        // its finished ones (a file a real-time batch read whole, once the next batch planned)
        val gone = positions.keySet -- read.keySet
        assert(
          positions.map { case (id, _) => id -> read.get(id) } -- gone == positions.map {
            case (id, p) => id -> Some(p)
          } -- gone && gone.size <= offset.checkpoint.finished.count,
          s"source $source's positions in the last committed offset (batch $done) as this build " +
            s"reads it, ${offset.checkpoint.finished.count} splits finished")
        // each split's largest event time read, where the restarted split's watermark starts: the
        // kept progress's (every committed record), else the offset's (what the batches before
        // the last reported); both are that of the last record they count
        def lastEventTime(id: String, count: Long) =
          if (count == 0) None else fixture.eventTimeOf(source, id, count - 1)
        // (a split that read nothing may have no progress yet)
        val derived = positions.keySet.filter(id =>
          positions(id) > 0 && fixture.eventTimeOf(source, id, 0).nonEmpty)
        if (derived.nonEmpty) {
          val progress = new SourceMetadata(
            checkpointOf(work).resolve("sources").resolve(source.toString).toString,
            new Configuration()).read().map(p => p.splitId -> p).toMap
          assert(
            derived.map(id => id -> progress.get(id).map(p => p.position -> p.maxEventTime)) ==
              derived.map(id => id -> Some(positions(id) -> lastEventTime(id, positions(id)))),
            s"source $source's kept progress as this build reads it")
          val entries = offset.splits.filter(e => derived(e.splitId))
          assert(
            entries.map(e => e.splitId -> e.maxEventTime) ==
              entries.map(e => e.splitId -> lastEventTime(e.splitId, e.reportedPosition)),
            s"source $source's event times in the last committed offset (batch $done)")
        }
      }
      val expected = counts(fixture.all)
        .map { case (r, n) =>
          r -> (n - committed.count(_ == r))
        }
        .filter(_._2 > 0)
      val run = restart(fixture, work, expected.values.sum)
      awaitEnd(run.query)
      assert(run.query.exception.isEmpty, run.query.exception)
      assert(counts(run.all) == expected)
    }
  }

  /**
   * The kept offsets hold their checkpoint where the fixture says, so that its restart reads it
   * from there: in the offset, or in the files of the source's folder the offsets name (whole, or
   * several chunks a list names).
   */
  private def assertHeld(fixture: CheckpointFixture, checkpoint: Path): Unit = {
    val named = offsetLines(checkpoint).map(SluiceOffset.storedNameOf)
    val kept = checkpoint.resolve("sources").resolve("0").resolve("sluice-checkpoints")
    def chunksOf(name: String): Option[Int] =
      Option(Mapper.readTree(kept.resolve(s"$name.json").toFile).get("chunks")).map(_.size)
    fixture.held match {
      case Held.InOffset => assert(named.forall(_.isEmpty), named)
      case Held.WholeFile =>
        assert(named.forall(_.exists(n => chunksOf(n).isEmpty)), named)
      case Held.Chunks =>
        assert(named.forall(_.exists(n => chunksOf(n).exists(_ > 1))), named)
    }
  }

  private val Mapper = new com.fasterxml.jackson.databind.ObjectMapper()

  private val Generator = All.find(_.name == "generator").get

  /** Rewrites every offset of the kept generator checkpoint with `edit`. */
  private def editedOffsets(edit: String => String): Path = {
    val work = restore(Generator)
    val offsets = checkpointOf(work).resolve("offsets")
    Files.list(offsets).forEach { f =>
      Files.write(f, edit(new String(Files.readAllBytes(f), UTF_8)).getBytes(UTF_8))
    }
    work
  }

  private def failure(work: Path): String = {
    val run = restart(Generator, work)
    val e = intercept[org.apache.spark.sql.streaming.StreamingQueryException](awaitEnd(run.query))
    assert(run.all.isEmpty, "rows were read from a checkpoint of a newer format")
    e.getMessage
  }

  test("an offset of a newer format than this build's is refused, naming both versions") {
    val newer = SluiceOffset.CurrentVersion + 1
    val message = failure(
      editedOffsets(
        _.replaceAll("\\{\"version\":\\d+,\"source\"", s"""{"version":$newer,"source"""")))
    assert(
      message.contains(s"version $newer") &&
        message.contains(s"reads versions 1 to ${SluiceOffset.CurrentVersion}"),
      message)
    assert(message.contains("written by a newer Sluice"), message)
  }

  test("a split of a newer serializer version is refused, naming both versions") {
    val message =
      failure(
        editedOffsets(_.replaceAll("\"version\":\\d+,\"split\"", "\"version\":99,\"split\"")))
    val current = sluice.connector.generator.GeneratorSource
      .builder()
      .recordsPerSplit(1)
      .build()
      .splitSerializer
      .version
    assert(
      message.contains("serializer version 99") && message.contains(s"versions up to $current"),
      message)
    assert(message.contains("written by a newer Sluice"), message)
  }
}
