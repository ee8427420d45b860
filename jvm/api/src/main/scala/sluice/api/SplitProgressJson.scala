package sluice.api

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.ObjectNode

/**
 * The one JSON form of `SplitProgress` in checkpoint files (the progress store, the hybrid's
 * switch records): `{"id", "position", "maxEventTime"?, "records", "counters"?}`.
 */
object SplitProgressJson {
  def write(p: SplitProgress, into: ObjectNode): Unit = {
    into.put("id", p.splitId)
    into.put("position", p.position)
    p.maxEventTime.foreach(into.put("maxEventTime", _))
    into.put("records", p.records)
    if (p.counters.nonEmpty) {
      val counters = into.putObject("counters")
      p.counters.toSeq.sorted.foreach { case (k, v) => counters.put(k, v) }
    }
  }

  def read(node: JsonNode): SplitProgress = {
    val counters = Option(node.get("counters")).toSeq
      .flatMap(_.properties().asScala.map(e => e.getKey -> e.getValue.asLong))
    SplitProgress(
      node.get("id").asText,
      node.get("position").asLong,
      Option(node.get("maxEventTime")).map(_.asLong),
      node.get("records").asLong,
      counters.toMap)
  }
}
