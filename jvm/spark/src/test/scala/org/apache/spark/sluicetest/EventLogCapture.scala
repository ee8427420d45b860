package org.apache.spark.sluicetest

import java.nio.file.{Files, Path}

import scala.jdk.CollectionConverters._

import org.apache.spark.SparkContext
import org.apache.spark.scheduler.EventLoggingListener

/**
 * What `spark.eventLog.enabled=true` writes, for a context already running: Spark's own event
 * logging listener (its redaction included), attached now and detached by [[stop]]. The test
 * JVM's one SparkContext cannot be restarted with the setting for one suite. In Spark's package:
 * the listener is `private[spark]`.
 */
final class EventLogCapture(sc: SparkContext, dir: Path) {
  // uncompressed, so that it can be searched as written
  private val conf =
    sc.getConf
      .clone()
      .set("spark.eventLog.enabled", "true")
      .set("spark.eventLog.compress", "false")
  private val listener =
    new EventLoggingListener(s"sluice-test-${System.nanoTime()}", None, dir.toUri, conf)
  listener.start()
  sc.addSparkListener(listener)

  /** Detaches the listener once the events posted so far are written; returns the log's text. */
  def stop(): String = {
    sc.listenerBus.waitUntilEmpty()
    sc.removeSparkListener(listener)
    listener.stop()
    Files
      .walk(dir)
      .iterator()
      .asScala
      .filter(Files.isRegularFile(_))
      .map(p => new String(Files.readAllBytes(p), "UTF-8"))
      .mkString("\n")
  }
}
