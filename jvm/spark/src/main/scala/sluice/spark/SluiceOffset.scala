package sluice.spark

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.ObjectNode
import org.apache.spark.sql.connector.read.streaming.{Offset => SparkOffset}

import sluice.errors.SluiceError
import sluice.runtime.{FinishedSplits, SourceCheckpoint, SplitEntry}

/**
 * A source's checkpoint in Spark's offset log, written before the batch runs: versioned JSON;
 * every version ever written stays readable. `member` names the source's folder in the query
 * checkpoint (`sources/<n>`), so that an alignment group can find a member's last offset in the
 * log before Spark hands it over (absent in offsets written before it existed).
 *
 * A checkpoint larger than [[SluiceOffset.InlineLimitChars]] (thousands of files, each a split
 * and a known file of the enumerator) is kept in the source's folder as an immutable file named
 * by its content (`storedAs`), and the offset names that file (`checkpoint`): Spark writes the
 * offset log on every batch and keeps a hundred of them, so that log stays small whatever the
 * number of splits.
 */
final case class SluiceOffset(
    checkpoint: SourceCheckpoint,
    member: Option[String] = None,
    storedAs: Option[String] = None)
    extends SparkOffset {
  def sourceType: String = checkpoint.sourceType
  def splits: Seq[SplitEntry] = checkpoint.splits
  def byId: Map[String, SplitEntry] = checkpoint.byId

  /**
   * Written once: Spark compares offsets by their JSON (`Offset.equals`) several times per batch,
   * and at a thousand splits writing it again each time was most of a batch's planning.
   */
  override def json(): String = serialized

  private lazy val serialized: String = storedAs match {
    case Some(name) =>
      val root = SluiceOffset.Mapper.createObjectNode()
      root.put("version", SluiceOffset.StoredVersion)
      root.put("source", checkpoint.sourceType)
      member.foreach(root.put("member", _))
      root.put("checkpoint", name)
      root.put("splits", checkpoint.splits.size)
      SluiceOffset.Mapper.writeValueAsString(root)
    case None => SluiceOffset.inlineJson(checkpoint, member)
  }
}

object SluiceOffset {

  /**
   * Version 1 holds its checkpoint; version 2 holds it too, with the splits that left it summed up
   * (`finished`), or names the file that holds it whole (`checkpoint`); version 3 names a file
   * that lists the checkpoint's chunks ([[KeptCheckpoints]]). Offsets that hold their checkpoint
   * are written as version 2 (nothing in them changed: a build that reads version 2 takes them,
   * and one read back is written as it was), though three builds of 2026-11-26 (ceb19f5 to
   * 8fd15d3) wrote them as version 3, which is read too; a build that reads an older version only
   * refuses a newer one rather than misread it.
   */
  val InlineVersion = 2
  val StoredVersion = 3

  /** The newest version this build reads (and writes). */
  val CurrentVersion: Int = StoredVersion

  /**
   * The largest checkpoint an offset holds itself (a few hundred splits); larger ones are kept
   * in files. Well under what the offset log should carry per source and batch.
   */
  val InlineLimitChars = 16384
  private val Mapper = new ObjectMapper()

  /** An offset of `checkpoint`, its checkpoint kept in `bodies` when too large for the offset log. */
  def keep(
      checkpoint: SourceCheckpoint,
      member: Option[String],
      bodies: CheckpointBodies): SluiceOffset = {
    val inline = SluiceOffset(checkpoint, member)
    if (inline.json().length <= InlineLimitChars) inline
    else SluiceOffset(checkpoint, member, Some(bodies.keep(inlineJson(checkpoint, None))))
  }

  /**
   * Spark hands restored offsets back as its own `SerializedOffset`; this reads either kind.
   * `bodies` is where the checkpoint an offset names is kept (the source's folder).
   */
  def of(offset: SparkOffset, bodies: Option[CheckpointBodies] = None): SluiceOffset =
    offset match {
      case o: SluiceOffset => o
      case other => fromJson(other.json(), bodies)
    }

  /** The member an offset names, without reading its checkpoint (None: not Sluice's, or none). */
  def memberOf(json: String): Option[String] =
    scala.util
      .Try(Mapper.readTree(json))
      .toOption
      .flatMap(r => Option(r.get("member")))
      .map(_.asText)

  def fromJson(json: String, bodies: Option[CheckpointBodies] = None): SluiceOffset = {
    val root =
      try Mapper.readTree(json)
      catch {
        case e: Exception =>
          throw SluiceError.invalidCheckpoint(
            s"Sluice: the checkpoint holds an offset that is not valid JSON: $json",
            e)
      }
    val version = Option(root.get("version"))
      .filter(_.canConvertToInt)
      .map(_.asInt)
      .getOrElse(throw SluiceError.invalidCheckpoint(
        s"Sluice: the checkpoint holds an offset without a version; it was not written by Sluice: $json"))
    version match {
      case 1 => readInline(root.asInstanceOf[ObjectNode])
      case 2 | 3 if !root.has("checkpoint") => readInline(root.asInstanceOf[ObjectNode])
      case 2 | 3 =>
        val name = Option(root.get("checkpoint"))
          .map(_.asText)
          .getOrElse(throw SluiceError.invalidCheckpoint(
            s"Sluice: offset field 'checkpoint' is missing in $json"))
        val store = bodies.getOrElse(throw SluiceError.invalidCheckpoint(
          s"Sluice: the offset names checkpoint file '$name' of its source's folder, and no folder was given to read it from"))
        val held = fromJson(store.load(name))
        if (held.sourceType != text(root, "source")) {
          throw SluiceError.invalidCheckpoint(
            s"Sluice: checkpoint file '$name' holds a '${held.sourceType}' source's " +
              s"checkpoint, but the offset is of a '${text(root, "source")}' source: the checkpoint folder was altered.")
        }
        SluiceOffset(held.checkpoint, Option(root.get("member")).map(_.asText), Some(name))
      case v if v > CurrentVersion =>
        throw SluiceError.invalidCheckpoint(
          s"Sluice: the checkpoint's offset has version $v, but this build reads versions 1 to " +
            s"$CurrentVersion. It was written by a newer Sluice: upgrade, or start from a new checkpoint.")
      case v =>
        throw SluiceError.invalidCheckpoint(
          s"Sluice: unknown offset version $v in the checkpoint: $json")
    }
  }

  private def text(node: JsonNode, field: String): String = Option(node.get(field))
    .map(_.asText)
    .getOrElse(
      throw SluiceError.invalidCheckpoint(s"Sluice: offset field '$field' is missing in $node"))

  /** The name of the file an offset's checkpoint is kept in, without reading it; None when it holds its checkpoint. */
  def storedNameOf(json: String): Option[String] =
    scala.util
      .Try(Mapper.readTree(json))
      .toOption
      .flatMap(r => Option(r.get("checkpoint")))
      .map(_.asText)

  private def readInline(root: ObjectNode): SluiceOffset = {
    val enumerator = root.get("enumerator")
    val splits = root
      .get("splits")
      .elements()
      .asScala
      .map { n =>
        SplitEntry(
          splitId = text(n, "id"),
          splitVersion = text(n, "version").toInt,
          split = text(n, "split"),
          position = text(n, "position").toLong,
          reportedPosition = text(n, "reportedPosition").toLong,
          maxEventTime = Option(n.get("maxEventTime")).map(_.asLong),
          records = text(n, "records").toLong)
      }
      .toSeq
    // absent in offsets written before finished splits left them, and while none has
    val finished = Option(root.get("finished"))
      .map { f =>
        FinishedSplits(
          text(f, "splits").toLong,
          text(f, "records").toLong,
          Option(f.get("maxEventTime")).map(_.asLong),
          Option(f.get("counters"))
            .map(_.properties().asScala.map(e => e.getKey -> e.getValue.asLong).toMap)
            .getOrElse(Map.empty))
      }
      .getOrElse(FinishedSplits.None)
    SluiceOffset(
      SourceCheckpoint(
        text(root, "source"),
        text(enumerator, "version").toInt,
        text(enumerator, "state"),
        splits,
        finished),
      Option(root.get("member")).map(_.asText))
  }

  /** The JSON of an offset that holds its checkpoint. */
  private def inlineJson(checkpoint: SourceCheckpoint, member: Option[String]): String = {
    val root = Mapper.createObjectNode()
    root.put("version", InlineVersion)
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
    if (checkpoint.finished.count > 0) {
      val f = checkpoint.finished
      val node = root.putObject("finished")
      node.put("splits", f.count)
      node.put("records", f.records)
      f.maxEventTime.foreach(node.put("maxEventTime", _))
      val counters = node.putObject("counters")
      f.counters.toSeq.sortBy(_._1).foreach { case (k, v) => counters.put(k, v) }
    }
    Mapper.writeValueAsString(root)
  }
}
