package sluice.compat

import java.nio.file.Files

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.streaming.Trigger

import sluice.{Checkpoints, SharedSparkContext}
import sluice.compat.CheckpointFixtures._
import sluice.testkit.{ProducedRecord, SharedKafka}

/**
 * Writes the checkpoint fixtures [[CheckpointFixturesSuite]] restarts, into the checkout (run on
 * demand, not by the tests; see docs/development.md): each fixture's query runs in small batches
 * until part of its input is committed, then stops; its checkpoint (absolute input paths replaced
 * and topic ids replaced by placeholders), its input files, its topics' records and the rows its committed batches gave
 * are kept under `jvm/spark/src/test/resources/checkpoints/<name>/`, replacing what was there.
 *
 * `build/sbt 'spark/Test/runMain sluice.compat.WriteCheckpointFixtures [name ...]'`
 *
 * A fixture kept from an earlier commit (`keptFrom`: a format this build no longer
 * writes) is left alone, and naming it is refused: this writer, ported to that commit, wrote it.
 */
object WriteCheckpointFixtures {
  private val TimeoutMs = 120000L

  def main(args: Array[String]): Unit = {
    val unknown = args.toSet -- All.map(_.name)
    require(
      unknown.isEmpty,
      s"no fixture named ${unknown.mkString(", ")}; fixtures: ${All.map(_.name).mkString(", ")}")
    val old = All.filter(f => f.keptFrom.nonEmpty && args.contains(f.name))
    require(
      old.isEmpty,
      old
        .map(f =>
          s"${f.name} was written by ${f.keptFrom.get}, in a format (of offsets, or of a split or enumerator state) this build no " +
            "longer writes: write it there (jvm/spark/src/test/resources/checkpoints/README.md)")
        .mkString("; "))
    val chosen = All.filter(f => f.keptFrom.isEmpty && (args.isEmpty || args.contains(f.name)))
    val spark = SharedSparkContext.session("local[2]")
    val kafka = SharedKafka.broker
    try
      chosen.foreach { fixture =>
        val work = Files.createTempDirectory("sluice-fixture-")
        val input = Files.createDirectories(work.resolve("input"))
        fixture.writeInput(spark, input)
        setInputTimes(input)
        val lateFiles = Files.createDirectories(work.resolve("late"))
        fixture.writeLateInput(spark, lateFiles)
        setInputTimes(lateFiles)
        def produce(late: Boolean): Unit = fixture.topics.foreach { t =>
          kafka.produce(
            t.name,
            t.records
              .filter(_.late == late)
              .map(r =>
                ProducedRecord.text(
                  value = Some(r.value),
                  partition = Some(r.partition),
                  timestamp = Some(r.timestamp))))
        }
        fixture.topics.foreach(t => kafka.createTopic(t.name, t.partitions))
        produce(late = false)
        val checkpoint = work.resolve("checkpoint")
        val run = new FixtureRun(
          fixture.stream(spark, input, kafka.bootstrapServers),
          checkpoint,
          if (fixture.realTime) Trigger.RealTime(RealTimeBatch) else Trigger.ProcessingTime(0),
          fixture.realTime,
          failAt = if (fixture.inFlight) Some(1L) else None)
        val deadline = System.currentTimeMillis() + TimeoutMs
        var lateProduced = false
        try
          while (!fixture.writtenEnough(run)) {
            if (!lateProduced && fixture.lateDue(run)) {
              produce(late = true)
              // each file whole and with its time set: a monitored source lists it at once
              Files
                .list(lateFiles)
                .iterator()
                .asScala
                .toList
                .foreach(f => Files.move(f, input.resolve(f.getFileName.toString)))
              lateProduced = true
            }
            run.query.exception.filterNot(FixtureRun.stoppedInFlight).foreach(e => throw e)
            require(
              System.currentTimeMillis() < deadline,
              s"${fixture.name}: not stopped part of the way in ${TimeoutMs / 1000} s: ${run.committed.size} rows committed")
            Thread.sleep(50) // polls the commit log; no event says "a batch committed"
          }
        finally run.query.stop()
        fixture.afterStop(input)
        val committed = run.committed
        require(
          fixture.writtenEnough(run),
          s"${fixture.name}: batches went on past where the fixture stops while the query stopped (${committed.size} rows); run it again")
        // a batch logged after the last commit is replayed by the restart: only where the
        // fixture says so (the stop may come after Spark logged the next batch: run it again)
        val logged = Checkpoints.batchIds(checkpoint.resolve("offsets").toFile).maxOption
        val done = Checkpoints.batchIds(checkpoint.resolve("commits").toFile).maxOption
        require(
          logged == (if (fixture.inFlight) done.map(_ + 1) else done),
          s"${fixture.name}: batches logged up to ${logged.getOrElse("none")}, committed up to ${done.getOrElse("none")}; run it again")
        val versions = offsetVersions(checkpoint)
        require(
          versions == Set(fixture.offsetVersion),
          s"${fixture.name}: its offsets are of version ${versions.mkString(", ")}, but the fixture keeps version ${fixture.offsetVersion}")
        rewritePaths(checkpoint, input.toString, InputPlaceholder)
        fixture.topics.foreach(t =>
          rewritePaths(
            checkpoint,
            topicId(kafka.bootstrapServers, t.name),
            topicIdPlaceholder(t.name)))
        val kept = root.resolve(fixture.name)
        deleteTree(kept)
        copyTree(checkpoint, checkpointOf(kept))
        copyTree(input, inputOf(kept))
        fixture.relocateInput(inputOf(kept), input.toString, InputPlaceholder)
        writeTopics(kept, fixture.topics)
        writeCommitted(kept, committed)
        deleteTree(work)
        println(
          s"${fixture.name}: ${committed.size} of ${fixture.all.size} rows committed, kept in $kept")
      }
    finally {
      spark.stop()
      kafka.stop()
    }
  }
}
