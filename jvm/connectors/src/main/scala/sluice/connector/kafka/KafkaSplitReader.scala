package sluice.connector.kafka

import java.time.Duration

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.kafka.clients.consumer.{ConsumerRecord, ConsumerRecords, OffsetOutOfRangeException}
import org.apache.kafka.common.TopicPartition

import sluice.api.{EmittedRecords, PausableSplitReader, ReaderContext, RecordsWithSplitIds, SplitRange, SplitRecords}
import sluice.errors.SluiceError

/**
 * Reads offset ranges of topic-partitions with one pooled `KafkaConsumer` (assign + seek + poll).
 * Supports pausing and resuming partitions (FLIP-217), ignoring partitions it does not own. It
 * fetches only (Flink's split): a poll's records, cut at each range's end, are handed to the
 * engine through the `KafkaRecordEmitter`, which turns each into rows, or, for column batches,
 * taken a partition at a time by `KafkaColumnarReader` (`pollRecords`).
 *
 * Data loss (offsets gone through retention or deletion) is decided by `KafkaDataLoss`: an error
 * naming the topic, partition and offsets when `failOnDataLoss` is true; otherwise the reader
 * skips to what exists and counts the skipped offsets as `dataLossOffsets`.
 */
final class KafkaSplitReader(config: KafkaConfig, context: ReaderContext)
    extends PausableSplitReader[KafkaPartitionSplit] {
  import KafkaSplitReader._

  private final class Assignment(
      val split: KafkaPartitionSplit,
      val from: Long,
      val until: Long) {
    val tp: TopicPartition = split.topicPartition
    var lost = 0L

    /** The consumer's position when progress was last seen: a poll may skip records without returning any. */
    var positionSeen: Long = from

    /** Read for as long as the task runs (real-time, continuous): waiting for data is normal. */
    def open: Boolean = until == SplitRange.OpenEnd
  }

  /** The pooled consumer's configuration: the user's, with the readers' fetch size. */
  private val properties = KafkaConsumerPool.readerProperties(config.consumerProperties)

  /** Borrowed with the first splits, to get one that may already hold their next records. */
  private var consumer: KafkaConsumerPool.Consumer = _
  private var healthy = true
  private val assigned = mutable.LinkedHashMap[TopicPartition, Assignment]()
  private val paused = mutable.Set[TopicPartition]()
  // rows only: `KafkaColumnarReader` takes whole polls and never builds one
  private lazy val emitter = KafkaRecordEmitter(config.decoder(context.recordLayout), context)
  private val dataLoss = new KafkaDataLoss(config.failOnDataLoss)
  private var lastProgressMs = context.currentTimeMillis()

  /** When the brokers last answered a look-up of open ranges (real-time, continuous). */
  private var brokersAnsweredMs = context.currentTimeMillis()

  /** Look-ups of open ranges that timed out since the brokers last answered one. */
  private var lookupsUnanswered = 0

  /** Splits given up because their partition was deleted, to report as finished. */
  private val finishedGone = mutable.Set[String]()

  override def handleSplitsChanges(ranges: Seq[SplitRange[KafkaPartitionSplit]]): Unit = guarded {
    ranges.foreach(r =>
      assigned(r.split.topicPartition) = new Assignment(r.split, r.from, r.until))
    if (consumer == null)
      consumer = KafkaConsumerPool.borrow(properties, assigned.keySet.toSet)
    KafkaConsumerPool.assign(consumer, assigned.keys)
    if (paused.nonEmpty) consumer.pause(paused.asJava)
    // seeking to where the consumer stands keeps the records it already fetched from there
    ranges.foreach(r => consumer.seek(r.split.topicPartition, r.from))
    // a range handed over now is waited for from now, not from the reader's last record
    if (ranges.nonEmpty) lastProgressMs = context.currentTimeMillis()
  }

  override def pauseOrResumeSplits(
      toPause: Seq[KafkaPartitionSplit],
      toResume: Seq[KafkaPartitionSplit]): Unit = guarded {
    // Splits this reader no longer owns are ignored, never an error (FLINK-39728).
    val pause = toPause.map(_.topicPartition).filter(assigned.contains)
    val resume = toResume.map(_.topicPartition).filter(paused.contains)
    if (pause.nonEmpty) consumer.pause(pause.asJava)
    if (resume.nonEmpty) consumer.resume(resume.asJava)
    paused ++= pause
    paused --= resume
    // a split waited for nothing while paused (live alignment may hold it for minutes): its
    // silence, and the brokers', counts from its resume
    if (resume.nonEmpty) {
      lastProgressMs = context.currentTimeMillis()
      brokersAnsweredMs = lastProgressMs
      lookupsUnanswered = 0
    }
  }

  override def fetch(): RecordsWithSplitIds = fetch(PollSliceMs)

  override def fetch(maxWaitMs: Long): RecordsWithSplitIds =
    pollRecords(maxWaitMs) match {
      case Right(polled) => new EmittedRecords(polled, emitter)
      case Left(finished) => RecordsWithSplitIds.empty(finished)
    }

  /**
   * The next poll's records, by partition, cut at each range's end (`Right`), or, when there are
   * none, the splits finished (`Left`, maybe none): what `fetch` hands the emitter, and what
   * `KafkaColumnarReader` makes column batches of.
   */
  private[kafka] def pollRecords(maxWaitMs: Long = PollSliceMs): Either[Set[String], Polled] =
    guarded {
      // no `return` in here: inside `guarded` it would throw, and mark the consumer unhealthy
      val finished = finishedNow()
      if (finished.nonEmpty) Left(finished)
      else if (assigned.keys.forall(paused.contains)) Left(Set.empty)
      else poll(math.max(0L, math.min(PollSliceMs, maxWaitMs)))
    }

  private def poll(waitMs: Long): Either[Set[String], Polled] = {
    val records =
      try consumer.poll(Duration.ofMillis(waitMs))
      catch {
        case e: OffsetOutOfRangeException =>
          e.offsetOutOfRangePartitions().asScala.foreach { case (tp, offset) =>
            handleOutOfRange(tp, offset)
          }
          ConsumerRecords.empty[Array[Byte], Array[Byte]]()
      }
    if (records.isEmpty) {
      checkStalled()
      Left(finishedNow())
    } else {
      lastProgressMs = context.currentTimeMillis()
      Right(new Polled(records))
    }
  }

  override def close(): Unit = {
    assigned.clear()
    if (consumer != null) KafkaConsumerPool.release(properties, consumer, healthy)
  }

  /** Partitions whose range is read: the consumer's position passed `until`, records or not. */
  private def finishedNow(): Set[String] = {
    val gone = finishedGone.toSet
    finishedGone.clear()
    val done = assigned.values.filter(a => consumer.position(a.tp) >= a.until).toSeq
    done.foreach { a =>
      assigned.remove(a.tp)
      paused -= a.tp
    }
    // paused, not unassigned: what it fetched past the range serves the next batch's reader
    if (done.nonEmpty) consumer.pause(done.map(_.tp).asJava)
    done.map(_.split.splitId).toSet ++ gone
  }

  /** The offset to read is older than anything left in the partition (retention, truncation). */
  private def handleOutOfRange(tp: TopicPartition, offset: Long): Unit = {
    val a = assigned(tp)
    val earliest = consumer.beginningOffsets(Seq(tp).asJava).get(tp).longValue()
    dataLoss.offsetsOutOfRange(tp, offset, a.until, earliest)
    val resumeAt = math.min(math.max(earliest, offset), a.until)
    recordLoss(a, resumeAt - offset)
    consumer.seek(tp, resumeAt)
  }

  /**
   * Nothing arrived: either the records we know exist are gone, or the brokers are unreachable.
   * Open ranges expect no particular records, so only planned ends are checked. A position that
   * moved is progress too: under read_committed the consumer skips an aborted transaction's
   * records, however many, with polls that return nothing.
   */
  private def checkStalled(): Unit = {
    checkBrokersOfOpenRanges()
    val active = assigned.values.filterNot(a => paused.contains(a.tp) || a.open).toSeq
    if (active.isEmpty) return
    val moved = active.filter(a => consumer.position(a.tp) > a.positionSeen)
    if (moved.nonEmpty) {
      lastProgressMs = context.currentTimeMillis()
      moved.foreach(a => a.positionSeen = consumer.position(a.tp))
    }
    val ends =
      try Some(consumer.endOffsets(active.map(_.tp).asJava, lookupTimeout))
      catch {
        case _: org.apache.kafka.common.errors.TimeoutException =>
          // A deleted topic answers no offset requests, and neither do brokers that are down
          // (a restart): a partition found gone is finished; the others wait for the brokers
          // until kafkaConsumer.pollTimeoutMs passes without progress (below), as Spark's Kafka
          // source waits, instead of failing the task at the first look-up that timed out.
          try finishGonePartitions(active)
          catch { case _: org.apache.kafka.common.errors.TimeoutException => () }
          if (assigned.isEmpty) return
          None
      }
    for (e <- ends; a <- active if assigned.contains(a.tp)) {
      val end = e.get(a.tp).longValue()
      val position = consumer.position(a.tp)
      if (end <= position && end < a.until) {
        dataLoss.logEndsBeforePlanned(a.tp, end, a.until)
        recordLoss(a, a.until - position)
        consumer.seek(a.tp, a.until)
      }
    }
    // the partitions found gone above are no longer assigned, nor stalled
    val stalled = active.filter(a => assigned.contains(a.tp))
    if (stalled.nonEmpty && context.currentTimeMillis() - lastProgressMs > config.pollTimeoutMs) {
      throw SluiceError.sourceFault(
        s"KafkaSource: no records arrived within kafkaConsumer.pollTimeoutMs=${config.pollTimeoutMs} ms for " +
          stalled
            .map(a =>
              s"${a.split.splitId} at offset ${consumer.position(a.tp)} (to read up to ${a.until})")
            .mkString(", ") + s". $checkBrokers")
    }
  }

  /**
   * What a user should check when the brokers stopped answering: the servers asked (by the
   * option's name and value: no secret), and the patience that ran out.
   */
  private def checkBrokers: String =
    "Check that the brokers are reachable at kafka.bootstrap.servers=" +
      s"${config.consumerProperties.getOrElse("bootstrap.servers", "")} (up, on those hosts and " +
      "ports), or raise kafkaConsumer.pollTimeoutMs to wait longer for them."

  /**
   * An open range (real-time mode, continuous processing) waits for records as long as the task
   * runs, so no records is no sign of trouble; brokers that stop answering are. While nothing
   * arrives, the brokers are asked for the ranges' ends once per look-up timeout; when none has
   * answered for `kafkaConsumer.pollTimeoutMs`, and at least two look-ups in a row went
   * unanswered (one slow answer on a busy machine is not a dead cluster, whatever the timeout),
   * the task fails naming the cause, as a planned range does, instead of waiting for ever (a
   * continuous query has no driver look-up that would fail).
   */
  private def checkBrokersOfOpenRanges(): Unit = {
    val open = assigned.values.filter(a => a.open && !paused.contains(a.tp)).toSeq
    val quiet = context.currentTimeMillis() - math.max(lastProgressMs, brokersAnsweredMs)
    if (open.isEmpty || quiet < lookupTimeout.toMillis) return
    try {
      consumer.endOffsets(open.map(_.tp).asJava, lookupTimeout)
      brokersAnsweredMs = context.currentTimeMillis()
      lookupsUnanswered = 0
    } catch {
      case _: org.apache.kafka.common.errors.TimeoutException =>
        lookupsUnanswered += 1
        val silentMs = context.currentTimeMillis() - math.max(lastProgressMs, brokersAnsweredMs)
        if (silentMs > config.pollTimeoutMs && lookupsUnanswered >= 2)
          throw SluiceError.sourceFault(s"KafkaSource: the brokers gave no answer within kafkaConsumer.pollTimeoutMs=" +
            s"${config.pollTimeoutMs} ms while reading ${open.map(_.split.splitId).mkString(", ")}" +
            s" (open ranges: real-time mode or continuous processing). $checkBrokers")
    }
  }

  /**
   * How long a stalled split's look-ups at the brokers may take: at most half the time the split
   * may go without progress, so it is looked at again before it fails. Their timeout while the
   * brokers are down is waited out in `checkStalled`; the out-of-range look-up keeps the
   * consumer's own `default.api.timeout.ms`.
   */
  private def lookupTimeout: Duration =
    Duration.ofMillis(math.max(1L, math.min(MetadataTimeoutMs, config.pollTimeoutMs / 2)))

  /** Partitions whose topic or partition no longer exists: an error, or skipped and counted. */
  private def finishGonePartitions(candidates: Seq[Assignment]): Unit = {
    val existing = candidates
      .map(_.tp.topic)
      .distinct
      .flatMap { topic =>
        Option(consumer.partitionsFor(topic, lookupTimeout))
          .map(_.asScala)
          .getOrElse(Nil)
          .map(p => new TopicPartition(topic, p.partition))
      }
      .toSet
    candidates.filterNot(a => existing.contains(a.tp)).foreach { a =>
      dataLoss.partitionGoneWhileReading(a.split.splitId, a.until)
      recordLoss(a, a.until - consumer.position(a.tp))
      assigned.remove(a.tp)
      paused -= a.tp
      finishedGone += a.split.splitId
    }
    consumer.assign(assigned.keys.toSeq.asJava)
  }

  private def recordLoss(a: Assignment, offsets: Long): Unit =
    if (offsets > 0) context.count(a.split.splitId, DataLossOffsets, offsets)

  /** A consumer whose call failed is in an unknown state: it goes back to the pool only to be closed. */
  private def guarded[T](body: => T): T =
    try body
    catch {
      case e: scala.util.control.ControlThrowable => throw e // control flow, not a failure
      case e: Throwable =>
        healthy = false
        // a refusal of the brokers (credentials, ACLs) says which options fix it
        throw KafkaAccessErrors.explain(e, config, KafkaAccessErrors.Read)
    }

  /**
   * The raw records of one poll, by partition, cut at each partition's `until`; a partition
   * finished meanwhile is left out. `emitter` turns them into rows one by one (`nextRecord`), or
   * the columnar reader takes a partition's records at once (`inRange`).
   */
  private[kafka] final class Polled(records: ConsumerRecords[Array[Byte], Array[Byte]])
      extends SplitRecords[ConsumerRecord[Array[Byte], Array[Byte]]] {
    private val partitions = records.partitions().iterator()
    private var until = 0L
    private var list: java.util.List[ConsumerRecord[Array[Byte], Array[Byte]]] = _
    private var current: java.util.Iterator[ConsumerRecord[Array[Byte], Array[Byte]]] = _

    override def nextSplit(): String = {
      while (partitions.hasNext) {
        val tp = partitions.next()
        assigned.get(tp) match {
          case Some(a) =>
            until = a.until
            list = records.records(tp)
            current = list.iterator()
            return a.split.splitId
          case None => // finished meanwhile
        }
      }
      null
    }

    /**
     * The current split's records of this poll and how many of them, from the first, lie below
     * its range's end (a partition's records come in offset order).
     */
    def inRange: (java.util.List[ConsumerRecord[Array[Byte], Array[Byte]]], Int) = {
      var n = list.size
      while (n > 0 && list.get(n - 1).offset >= until) n -= 1
      (list, n)
    }

    override def nextRecord(): ConsumerRecord[Array[Byte], Array[Byte]] =
      if (!current.hasNext) null
      else {
        val record = current.next()
        if (record.offset < until) record
        else {
          current = java.util.Collections.emptyIterator()
          null
        }
      }

    override def finishedSplits: Set[String] = Set.empty
  }
}

private object KafkaSplitReader {
  import sluice.api.ReaderCounters
  val DataLossOffsets: String = ReaderCounters.DataLossOffsets

  /** How long one fetch() may block; short, so pause/resume and finishing react quickly. */
  val PollSliceMs = 500L

  /** Metadata lookups that a deleted topic never answers are given up after this. */
  val MetadataTimeoutMs = 10000L
}
