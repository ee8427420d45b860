package sluice.eventtime

/**
 * How a source derives event time and watermarks (Flink's WatermarkStrategy). Like sources, a
 * strategy is a value described by options, so it crosses to Spark's DataSource API unchanged.
 */
final class WatermarkStrategy private (val options: Map[String, String]) extends Serializable {
  override def toString: String = s"WatermarkStrategy(${options.toSeq.sorted.mkString(", ")})"
}

object WatermarkStrategy {
  val KindOption = "watermark.kind"

  /** Rebuilds a strategy from its options (the Python builders' route). */
  def fromJavaOptions(options: java.util.Map[String, String]): WatermarkStrategy = {
    import scala.jdk.CollectionConverters._
    new WatermarkStrategy(options.asScala.toMap)
  }

  /** No event time: the source emits no watermarks. */
  def noWatermarks(): WatermarkStrategy = new WatermarkStrategy(Map(KindOption -> "none"))
}
