package sluice

import java.io.{PrintWriter, StringWriter}
import java.nio.file.{Files, Path}

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.logging.log4j.{Level, LogManager}
import org.apache.logging.log4j.core.{LogEvent, LoggerContext}
import org.apache.logging.log4j.core.appender.AbstractAppender
import org.apache.logging.log4j.core.config.Property

/** Where the secrets suites look for a planted credential: the JVM's logs, stack traces, files. */
object SecretCapture {

  /** Captures every log event (INFO and up) of the whole JVM while `body` runs. */
  def capturingLogs[T](body: => T): (T, String) = {
    val ctx = LogManager.getContext(false).asInstanceOf[LoggerContext]
    val root = ctx.getConfiguration.getRootLogger
    val previous = root.getLevel
    val lines = mutable.ArrayBuffer[String]()
    val appender =
      new AbstractAppender("secret-capture", null, null, true, Property.EMPTY_ARRAY) {
        override def append(event: LogEvent): Unit = lines.synchronized {
          lines += event.getMessage.getFormattedMessage
          Option(event.getThrown).foreach(t => lines += stackTrace(t))
        }
      }
    appender.start()
    root.addAppender(appender, Level.INFO, null)
    root.setLevel(Level.INFO)
    ctx.updateLoggers()
    try (body, lines.synchronized(lines.mkString("\n")))
    finally {
      root.removeAppender("secret-capture")
      root.setLevel(previous)
      ctx.updateLoggers()
    }
  }

  def stackTrace(t: Throwable): String = {
    val w = new StringWriter()
    t.printStackTrace(new PrintWriter(w))
    w.toString
  }

  /** Every regular file under `dir`, as text. */
  def filesUnder(dir: Path): String =
    Files
      .walk(dir)
      .iterator()
      .asScala
      .filter(Files.isRegularFile(_))
      .map(p => new String(Files.readAllBytes(p), "ISO-8859-1"))
      .mkString("\n")
}
