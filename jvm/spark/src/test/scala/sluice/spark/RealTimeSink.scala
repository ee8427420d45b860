package sluice.spark

import java.util.concurrent.{ConcurrentHashMap, ConcurrentLinkedQueue}
import java.util.concurrent.atomic.AtomicLong

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{ForeachWriter, Row}
import org.apache.spark.sql.streaming.StreamingQuery

import sluice.SparkSuiteBase

/**
 * A sink real-time mode allows (foreach), collecting rows per test in this JVM (local mode), each
 * with its arrival sequence number and wall-clock arrival time.
 */
object RealTimeSink {
  final case class Arrival(row: Row, sequence: Long, atMs: Long)

  private val sequence = new AtomicLong()
  private val rows = new ConcurrentHashMap[String, ConcurrentLinkedQueue[Arrival]]()

  def writer(name: String): ForeachWriter[Row] = new ForeachWriter[Row] {
    override def open(partitionId: Long, epochId: Long): Boolean = true
    override def process(row: Row): Unit =
      rows
        .computeIfAbsent(name, _ => new ConcurrentLinkedQueue[Arrival]())
        .add(Arrival(row, sequence.incrementAndGet(), System.currentTimeMillis()))
    override def close(errorOrNull: Throwable): Unit = ()
  }

  def arrivals(name: String): Seq[Arrival] =
    Option(rows.get(name)).map(_.asScala.toSeq.sortBy(_.sequence)).getOrElse(Nil)

  /**
   * Waits until `done` holds for the rows so far; fails naming `what` and how many rows arrived
   * after `timeoutMs`, or at once if `query` (the one writing them) ended first, with its state.
   */
  def await(name: String, what: String, query: StreamingQuery, timeoutMs: Long = 60000)(
      done: Seq[Row] => Boolean): Seq[Row] = {
    var got = arrivals(name).map(_.row)
    SparkSuiteBase.eventually(s"$what (${got.size} rows arrived)", Option(query), timeoutMs) {
      got = arrivals(name).map(_.row)
      done(got)
    }
    got
  }
}
