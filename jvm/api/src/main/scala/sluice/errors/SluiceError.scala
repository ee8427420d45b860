package sluice.errors

/**
 * An error of Sluice with its class (`ErrorClasses`) and the parameters its message was built
 * from, as Spark's `SparkThrowable` has them. Two kinds: a configuration error is an
 * `IllegalArgumentException` (what Spark and PySpark already treat as the user's mistake, and
 * what callers and tests catch), a runtime fault an `IllegalStateException` (what the sources threw
 * before classes existed). This module compiles without Spark, so the Spark binding adds
 * `SparkThrowable` by subclassing these where an error reaches Spark (sluice.spark.SparkErrors).
 */
sealed trait SluiceError { self: RuntimeException =>
  def errorClass: ErrorClass
  def messageParameters: Map[String, String]
}

class SluiceConfigException(
    val errorClass: ErrorClass,
    val messageParameters: Map[String, String],
    cause: Throwable = null)
    extends IllegalArgumentException(errorClass.message(messageParameters), cause)
    with SluiceError

class SluiceRuntimeException(
    val errorClass: ErrorClass,
    val messageParameters: Map[String, String],
    cause: Throwable = null)
    extends IllegalStateException(errorClass.message(messageParameters), cause)
    with SluiceError

object SluiceError {

  /** A configuration error whose whole text is `message` (`SLUICE_INVALID_CONFIGURATION`). */
  def config(message: String, cause: Throwable = null): SluiceConfigException =
    new SluiceConfigException(ErrorClasses.InvalidConfiguration, Map("message" -> message), cause)

  /**
   * `e` with `prefix` before its message and the same class: the prefix goes into the parameter
   * the template opens with (`<context>` or `<message>`), so the class's template still builds
   * the text. A hybrid source names which of its sources an error is about this way.
   */
  def prefixed(e: SluiceConfigException, prefix: String): SluiceConfigException =
    e.errorClass.parameters.headOption.filter(p =>
      e.errorClass.template.startsWith(s"<$p>")) match {
      case Some(first) =>
        new SluiceConfigException(
          e.errorClass,
          e.messageParameters.updated(first, prefix + e.messageParameters(first)),
          e)
      case None => config(prefix + e.getMessage, e)
    }

  /** A checkpoint that cannot be used, whose whole text is `message` (`SLUICE_INVALID_CHECKPOINT`). */
  def invalidCheckpoint(message: String, cause: Throwable = null): SluiceRuntimeException =
    new SluiceRuntimeException(ErrorClasses.InvalidCheckpoint, Map("message" -> message), cause)

  /** A fault of what a source reads, whose whole text is `message` (`SLUICE_SOURCE_FAULT`). */
  def sourceFault(message: String, cause: Throwable = null): SluiceRuntimeException =
    new SluiceRuntimeException(ErrorClasses.SourceFault, Map("message" -> message), cause)
}
