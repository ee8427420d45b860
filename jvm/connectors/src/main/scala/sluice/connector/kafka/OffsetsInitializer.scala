package sluice.connector.kafka

import scala.util.Try

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.kafka.common.TopicPartition

/**
 * Where a partition starts or stops (Flink's OffsetsInitializer), written as Spark's Kafka source
 * writes it in options: `earliest`, `latest`, a JSON object of offsets per partition
 * (`{"topic":{"0":23,"1":-2}}`, -2 = earliest, -1 = latest), a timestamp for all partitions, or
 * a JSON object of timestamps per partition.
 */
sealed trait OffsetsInitializer extends Serializable

object OffsetsInitializer {
  case object Earliest extends OffsetsInitializer
  case object Latest extends OffsetsInitializer
  final case class Specific(offsets: Map[TopicPartition, Long]) extends OffsetsInitializer
  final case class Timestamp(timestampMs: Long) extends OffsetsInitializer
  final case class TimestampPerPartition(timestamps: Map[TopicPartition, Long])
      extends OffsetsInitializer

  val EarliestOffset = -2L
  val LatestOffset = -1L

  def earliest(): OffsetsInitializer = Earliest
  def latest(): OffsetsInitializer = Latest
  def offsets(offsets: Map[TopicPartition, Long]): OffsetsInitializer = Specific(offsets)
  def timestamp(timestampMs: Long): OffsetsInitializer = Timestamp(timestampMs)
  def timestamps(timestamps: Map[TopicPartition, Long]): OffsetsInitializer =
    TimestampPerPartition(timestamps)

  private[kafka] val mapper = new ObjectMapper()

  /** The JSON Spark's Kafka source uses for per-partition offsets or timestamps. */
  def toJson(values: Map[TopicPartition, Long]): String = {
    val root = mapper.createObjectNode()
    values.toSeq.sortBy(e => (e._1.topic, e._1.partition)).foreach { case (tp, v) =>
      val topic = Option(root.get(tp.topic))
        .getOrElse(root.putObject(tp.topic))
        .asInstanceOf[com.fasterxml.jackson.databind.node.ObjectNode]
      topic.put(tp.partition.toString, v)
    }
    mapper.writeValueAsString(root)
  }

  def parseJson(text: String): Option[Map[TopicPartition, Long]] = Try {
    import scala.jdk.CollectionConverters._
    val root = mapper.readTree(text)
    require(root.isObject)
    root
      .properties()
      .asScala
      .toSeq
      .flatMap { topic =>
        require(topic.getValue.isObject)
        topic.getValue.properties().asScala.map { p =>
          require(p.getValue.canConvertToLong)
          new TopicPartition(topic.getKey, p.getKey.toInt) -> p.getValue.asLong
        }
      }
      .toMap
  }.toOption
}
