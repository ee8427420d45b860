package sluice.hybrid

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper

/**
 * A Python callable that builds a hybrid's next source, called back over py4j in the driver
 * (classic PySpark only). It receives the switch context as JSON and returns the next source's
 * options.
 */
trait PythonSourceFactoryCallback {
  def create(contextJson: String): java.util.Map[String, String]
}

/** Adapts a Python callback to a `SourceFactory`; registered like any other factory. */
final class PythonSourceFactory(callback: PythonSourceFactoryCallback)
    extends OptionsSourceFactory {
  override def createOptions(context: SourceSwitchContext): Map[String, String] =
    callback.create(PythonSourceFactory.toJson(context)).asScala.toMap
}

object PythonSourceFactory {
  private val mapper = new ObjectMapper()

  /** For py4j: registers the callback and returns the id the Python builder puts in the options. */
  def register(callback: PythonSourceFactoryCallback): String =
    SourceFactories.register(new PythonSourceFactory(callback)).id

  /**
   * For py4j: the Python definition gives its factory up (`HybridSource.release()` in Python). Once
   * no running query pins it either, the entry goes, and with it the JVM's proxy of the callback.
   */
  def release(id: String): Unit = SourceFactories.release(id)

  def toJson(context: SourceSwitchContext): String = {
    val root = mapper.createObjectNode()
    root.put("previous_source_index", context.previousSourceIndex)
    context.previousMaxEventTime.foreach(root.put("previous_max_event_time_ms", _))
    val details = root.putObject("details")
    context.previousEndState.details.foreach { case (k, v) => details.put(k, v) }
    val splits = root.putArray("splits")
    context.previousEndState.splits.foreach { p =>
      val n = splits.addObject()
      n.put("split", p.splitId)
      n.put("position", p.position)
      p.maxEventTime.foreach(n.put("max_event_time_ms", _))
      n.put("records", p.records)
    }
    mapper.writeValueAsString(root)
  }
}
