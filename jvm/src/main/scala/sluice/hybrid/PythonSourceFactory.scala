package sluice.hybrid

import scala.collection.concurrent.TrieMap
import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper

import sluice.Sources
import sluice.api.Source

/**
 * A Python callable that builds a hybrid's next source, called back over py4j in the driver
 * (classic PySpark only). It receives the switch context as JSON and returns the next source's
 * options.
 */
trait PythonSourceFactoryCallback {
  def create(contextJson: String): java.util.Map[String, String]
}

/**
 * Callables registered by this driver's Python process. Only an id travels in the query's
 * options; a restarted application registers its callable again when it defines the query.
 */
object PythonSourceFactories {
  private val registered = TrieMap[String, PythonSourceFactoryCallback]()

  def register(callback: PythonSourceFactoryCallback): String = {
    val id = java.util.UUID.randomUUID().toString
    registered(id) = callback
    id
  }

  private[hybrid] def get(id: String): PythonSourceFactoryCallback = registered.getOrElse(id,
    throw new IllegalStateException(
      s"HybridSource: the Python factory $id is not registered in this driver; define the query " +
        "again in this Python process (from_source registers it), or use the declarative form."))
}

final case class PythonSourceFactory(id: String) extends SourceFactory {
  override def create(context: SourceSwitchContext): Source[_, _] = {
    val options = PythonSourceFactories.get(id).create(PythonSourceFactory.toJson(context))
    Sources.fromOptions(options.asScala.toMap)
  }
}

object PythonSourceFactory {
  private val mapper = new ObjectMapper()

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
