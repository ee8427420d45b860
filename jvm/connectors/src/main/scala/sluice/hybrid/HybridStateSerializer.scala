package sluice.hybrid

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper

import sluice.api.{EnumeratorEndState, SplitProgressJson, VersionedSerializer}

/**
 * The hybrid's state as JSON: the active index, the active enumerator's own state, and each switch
 * with the end state the next source was built from. No source options are stored (they may hold
 * credentials); sources are rebuilt from the query's options and the recorded end states.
 */
private[hybrid] object HybridStateSerializer extends VersionedSerializer[HybridEnumeratorState] {
  override val version: Int = 1
  private val mapper = new ObjectMapper()

  override def serialize(state: HybridEnumeratorState): String = {
    val root = mapper.createObjectNode()
    root.put("active", state.activeIndex)
    root.put("childVersion", state.childStateVersion)
    root.put("childState", state.childState)
    if (state.recordsOfSplitsLeft.nonEmpty) {
      val left = root.putObject("recordsOfSplitsLeft")
      state.recordsOfSplitsLeft.toSeq.sorted.foreach { case (i, n) => left.put(i.toString, n) }
    }
    val switches = root.putArray("switches")
    state.switches.foreach { s =>
      val n = switches.addObject()
      n.put("to", s.toIndex)
      n.put("from", s.context.previousSourceIndex)
      n.put("atMs", s.atMs)
      val details = n.putObject("details")
      s.context.previousEndState.details.foreach { case (k, v) => details.put(k, v) }
      val splits = n.putArray("splits")
      s.context.previousEndState.splits.foreach(p =>
        SplitProgressJson.write(p, splits.addObject()))
    }
    mapper.writeValueAsString(root)
  }

  override def deserialize(version: Int, text: String): HybridEnumeratorState = {
    if (version > this.version)
      throw VersionedSerializer.unsupported("hybrid source state", version, this.version)
    val root = mapper.readTree(text)
    val switches = root
      .get("switches")
      .elements()
      .asScala
      .map { n =>
        val splits = n.get("splits").elements().asScala.map(SplitProgressJson.read).toSeq
        val details =
          n.get("details").properties().asScala.map(e => e.getKey -> e.getValue.asText).toMap
        SwitchRecord(
          n.get("to").asInt,
          SourceSwitchContext(n.get("from").asInt, EnumeratorEndState(splits, details)),
          n.get("atMs").asLong)
      }
      .toSeq
    // absent in states written before finished splits left the checkpoint
    val left = Option(root.get("recordsOfSplitsLeft"))
      .map(_.properties().asScala.map(e => e.getKey.toInt -> e.getValue.asLong).toMap)
    HybridEnumeratorState(
      root.get("active").asInt,
      root.get("childVersion").asInt,
      root.get("childState").asText,
      switches,
      left.getOrElse(Map.empty))
  }
}
