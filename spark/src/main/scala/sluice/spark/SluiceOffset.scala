package sluice.spark

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.ObjectNode
import org.apache.spark.sql.connector.read.streaming.{Offset => SparkOffset}

/**
 * One split's entry in an offset: the split itself (serialised by its source), the position the
 * batch ending at this offset reads up to, and the progress readers reported for the batches
 * before it (`reportedPosition`: the position up to which `maxEventTime` and `records` count).
 */
final case class SplitEntry(
    splitId: String,
    splitVersion: Int,
    split: String,
    position: Long,
    reportedPosition: Long,
    maxEventTime: Option[Long],
    records: Long)

/**
 * Everything that decides a batch, written to Spark's offset log before the batch runs: the
 * enumerator's state and every split with its position. Versioned JSON; every version ever
 * written stays readable.
 */
final case class SluiceOffset(
    sourceType: String,
    enumeratorVersion: Int,
    enumeratorState: String,
    splits: Seq[SplitEntry]) extends SparkOffset {

  lazy val byId: Map[String, SplitEntry] = splits.map(s => s.splitId -> s).toMap

  override def json(): String = {
    val mapper = SluiceOffset.Mapper
    val root = mapper.createObjectNode()
    root.put("version", SluiceOffset.CurrentVersion)
    root.put("source", sourceType)
    val enumerator = root.putObject("enumerator")
    enumerator.put("version", enumeratorVersion)
    enumerator.put("state", enumeratorState)
    val array = root.putArray("splits")
    splits.foreach { s =>
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
    SluiceOffset(text(root, "source"), text(enumerator, "version").toInt, text(enumerator, "state"), splits)
  }
}
