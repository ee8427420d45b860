package sluice.spark

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.ObjectNode
import org.apache.spark.sql.connector.read.streaming.{Offset => SparkOffset}

import sluice.runtime.{SourceCheckpoint, SplitEntry}

/**
 * A source's checkpoint in Spark's offset log, written before the batch runs: versioned JSON;
 * every version ever written stays readable. `member` names the source's folder in the query
 * checkpoint (`sources/<n>`), so that an alignment group can find a member's last offset in the
 * log before Spark hands it over (absent in offsets written before it existed).
 */
final case class SluiceOffset(checkpoint: SourceCheckpoint, member: Option[String] = None) extends SparkOffset {
  def sourceType: String = checkpoint.sourceType
  def splits: Seq[SplitEntry] = checkpoint.splits
  def byId: Map[String, SplitEntry] = checkpoint.byId

  /**
   * Written once: Spark compares offsets by their JSON (`Offset.equals`) several times per batch,
   * and at a thousand splits writing it again each time was most of a batch's planning.
   */
  override def json(): String = serialized

  private lazy val serialized: String = {
    val mapper = SluiceOffset.Mapper
    val root = mapper.createObjectNode()
    root.put("version", SluiceOffset.CurrentVersion)
    root.put("source", checkpoint.sourceType)
    member.foreach(root.put("member", _))
    val enumerator = root.putObject("enumerator")
    enumerator.put("version", checkpoint.enumeratorVersion)
    enumerator.put("state", checkpoint.enumeratorState)
    val array = root.putArray("splits")
    checkpoint.splits.foreach { s =>
      val node = array.addObject()
      node.put("id", s.splitId)
      node.put("version", s.splitVersion)
      node.put("split", s.split)
      node.put("position", s.position)
      node.put("reportedPosition", s.reportedPosition)
      s.maxEventTime.foreach(node.put("maxEventTime", _))
      node.put("records", s.records)
    }
    mapper.writeValueAsString(root)
  }
}

object SluiceOffset {
  val CurrentVersion = 1
  private val Mapper = new ObjectMapper()

  /** Spark hands restored offsets back as its own `SerializedOffset`; this reads either kind. */
  def of(offset: SparkOffset): SluiceOffset = offset match {
    case o: SluiceOffset => o
    case other => fromJson(other.json())
  }

  def fromJson(json: String): SluiceOffset = {
    val root = try Mapper.readTree(json) catch {
      case e: Exception =>
        throw new IllegalStateException(s"Sluice: the checkpoint holds an offset that is not valid JSON: $json", e)
    }
    val version = Option(root.get("version")).filter(_.canConvertToInt).map(_.asInt).getOrElse(
      throw new IllegalStateException(
        s"Sluice: the checkpoint holds an offset without a version; it was not written by Sluice: $json"))
    version match {
      case 1 => readV1(root.asInstanceOf[ObjectNode])
      case v if v > CurrentVersion =>
        throw new IllegalStateException(
          s"Sluice: the checkpoint's offset has version $v, but this build reads versions 1 to " +
            s"$CurrentVersion. It was written by a newer Sluice: upgrade, or start from a new checkpoint.")
      case v =>
        throw new IllegalStateException(s"Sluice: unknown offset version $v in the checkpoint: $json")
    }
  }

  private def readV1(root: ObjectNode): SluiceOffset = {
    def text(node: JsonNode, field: String): String = Option(node.get(field)).map(_.asText).getOrElse(
      throw new IllegalStateException(s"Sluice: offset field '$field' is missing in $root"))
    val enumerator = root.get("enumerator")
    val splits = root.get("splits").elements().asScala.map { n =>
      SplitEntry(
        splitId = text(n, "id"),
        splitVersion = text(n, "version").toInt,
        split = text(n, "split"),
        position = text(n, "position").toLong,
        reportedPosition = text(n, "reportedPosition").toLong,
        maxEventTime = Option(n.get("maxEventTime")).map(_.asLong),
        records = text(n, "records").toLong)
    }.toSeq
    SluiceOffset(SourceCheckpoint(text(root, "source"), text(enumerator, "version").toInt, text(enumerator, "state"), splits),
      Option(root.get("member")).map(_.asText))
  }
}
