package sluice.testkit

import java.util.Properties

import org.apache.log4j.{LogManager, PropertyConfigurator}

/**
 * Sends Kafka's log (reload4j, through slf4j) to stderr, WARN and above; stdout carries the
 * protocol.
 */
object StderrLogging {

  /** @param level the root level; the system property `sluice.kafka.logLevel` overrides it */
  def configure(level: String = "WARN"): Unit = {
    val p = new Properties()
    p.setProperty(
      "log4j.rootLogger",
      s"${sys.props.getOrElse("sluice.kafka.logLevel", level)}, stderr")
    p.setProperty("log4j.appender.stderr", "org.apache.log4j.ConsoleAppender")
    p.setProperty("log4j.appender.stderr.Target", "System.err")
    p.setProperty("log4j.appender.stderr.layout", "org.apache.log4j.PatternLayout")
    p.setProperty(
      "log4j.appender.stderr.layout.ConversionPattern",
      "[kafka %d{HH:mm:ss.SSS} %p %c{1}] %m%n")
    // Reports partitions added by add-partitions as "missing" at ERROR level: expected here.
    p.setProperty("log4j.logger.state.change.logger", "OFF")
    LogManager.resetConfiguration()
    PropertyConfigurator.configure(p)
  }
}
