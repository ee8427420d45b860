package sluice.spark

import java.util

import scala.jdk.CollectionConverters._

import org.apache.spark.{BreakingChangeInfo, QueryContext, SparkThrowable}

import sluice.errors.{ErrorClass, SluiceConfigException, SluiceError, SluiceRuntimeException}

/**
 * Where Sluice's errors reach Spark they become `SparkThrowable`s with their class, so that
 * `getCondition` reports `SLUICE_...` to Scala callers, to classic PySpark (its captured exception
 * asks the JVM object) and to Spark Connect clients (the server sends the condition and message
 * parameters it reads from a `SparkThrowable`). The message, type and cause stay as they were: an
 * `IllegalArgumentException` is still one, with the same text.
 *
 * Spark knows nothing of these classes (they are not in its error-conditions.json), so every
 * method Spark would otherwise answer from its own file is answered from our declaration.
 */
private[spark] trait SluiceSparkThrowable extends SparkThrowable { self: SluiceError =>
  override def getCondition: String = errorClass.name
  override def getSqlState: String = errorClass.sqlState
  override def getMessageParameters: util.Map[String, String] = messageParameters.asJava
  override def getDefaultMessageTemplate: String = errorClass.template
  override def isInternalError: Boolean = false
  override def getBreakingChangeInfo: BreakingChangeInfo = null
  override def getQueryContext: Array[QueryContext] = Array.empty
}

final class SluiceSparkConfigException(
    errorClass: ErrorClass,
    messageParameters: Map[String, String],
    cause: Throwable)
    extends SluiceConfigException(errorClass, messageParameters, cause)
    with SluiceSparkThrowable

final class SluiceSparkRuntimeException(
    errorClass: ErrorClass,
    messageParameters: Map[String, String],
    cause: Throwable)
    extends SluiceRuntimeException(errorClass, messageParameters, cause)
    with SluiceSparkThrowable

object SparkErrors {

  /**
   * The handler of the binding's entry points Spark calls (`try ... catch SparkErrors.surface`): a
   * Sluice error thrown there reaches Spark as a `SparkThrowable`. A value, so the readers'
   * per-record calls allocate nothing for it.
   */
  val surface: PartialFunction[Throwable, Nothing] = {
    case e: SluiceError with RuntimeException @unchecked => throw toSpark(e)
  }

  /**
   * `e` as a `SparkThrowable` of its class; one that already is one is returned as it is. It
   * stands in for `e` whole: the same type, message, cause, stack trace and suppressed errors, so
   * what callers and tests read of the error (its cause chain too) is what they read before.
   */
  def toSpark(e: SluiceError with RuntimeException): RuntimeException = {
    val converted = e match {
      case already: SparkThrowable => return already
      case c: SluiceConfigException =>
        new SluiceSparkConfigException(c.errorClass, c.messageParameters, c.getCause)
      case r: SluiceRuntimeException =>
        new SluiceSparkRuntimeException(r.errorClass, r.messageParameters, r.getCause)
    }
    converted.setStackTrace(e.getStackTrace)
    e.getSuppressed.foreach(converted.addSuppressed)
    converted
  }
}
