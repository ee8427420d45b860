package sluice.connector.generator

import org.apache.spark.sql.types._

import sluice.api._
import sluice.config.RecordLayout

/**
 * A built-in source of deterministic records (id, split, timestamp, payload) over N splits,
 * bounded (`recordsPerSplit`) or unbounded (`rowsPerSecond`), with per-split event-time skew.
 * The demo, the tests and the benchmarks read from it.
 */
final class GeneratorSource private[generator] (val config: GeneratorConfig)
    extends Source[GeneratorSplit, GeneratorEnumeratorState]
    with SupportsSplitPausing[GeneratorSplit] {

  override def sourceType: String = GeneratorSource.Type

  override def boundedness: Boundedness =
    if (config.recordsPerSplit.isDefined) Boundedness.Bounded else Boundedness.ContinuousUnbounded

  override def schema: StructType = GeneratorSource.Schema
  override def schema(layout: RecordLayout): StructType =
    if (layout == RecordLayout.Compact) GeneratorSource.CompactSchema else GeneratorSource.Schema

  override def options: Map[String, String] = config.toOptions + ("source" -> sourceType)

  override def createEnumerator(): GeneratorEnumerator =
    new GeneratorEnumerator(config, System.currentTimeMillis(), () => System.currentTimeMillis())

  override def restoreEnumerator(state: GeneratorEnumeratorState): GeneratorEnumerator = {
    val enumerator =
      new GeneratorEnumerator(config, state.startTimeMs, () => System.currentTimeMillis())
    if (state.splitsDiscovered) enumerator.discoverSplits()
    enumerator
  }

  override def createReader(context: ReaderContext): GeneratorReader =
    new GeneratorReader(config, context.recordLayout)

  override def splitSerializer: VersionedSerializer[GeneratorSplit] = GeneratorSplitSerializer
  override def enumeratorStateSerializer: VersionedSerializer[GeneratorEnumeratorState] =
    GeneratorStateSerializer

  override def toString: String =
    s"GeneratorSource(${config.toOptions.toSeq.sorted.mkString(", ")})"
}

object GeneratorSource {
  val Type = "generator"

  val Schema: StructType = StructType(
    Seq(
      StructField("id", LongType, nullable = false),
      StructField("split", IntegerType, nullable = false),
      StructField("timestamp", TimestampType, nullable = false),
      StructField("payload", StringType, nullable = false)))

  /** The compact layout: the record's data, without its split and time. */
  val CompactSchema: StructType = StructType(Seq(Schema("id"), Schema("payload")))

  def builder(): Builder = new Builder(Map.empty)

  def fromOptions(options: Map[String, String]): GeneratorSource =
    new GeneratorSource(GeneratorConfig.fromOptions(options))

  /** Typed setters over the option map; `build()` validates everything and names what is wrong. */
  final class Builder private[GeneratorSource] (options: Map[String, String]) {
    import GeneratorConfig._
    private def set(name: String, value: Any) = new Builder(options + (name -> value.toString))

    def splits(n: Int): Builder = set(Splits.name, n)
    def recordsPerSplit(n: Long): Builder = set(RecordsPerSplit.name, n)
    def rowsPerSecond(n: Long): Builder = set(RowsPerSecond.name, n)
    def eventTimeStartMs(ms: Long): Builder = set(EventTimeStartMs.name, ms)
    def eventTimeStepMs(ms: Long): Builder = set(EventTimeStepMs.name, ms)
    def splitSkewMs(split: Int, offsetMs: Long): Builder = {
      val previous = options.get(SplitSkewMs.name).toSeq.filter(_.nonEmpty)
      set(SplitSkewMs.name, (previous :+ s"$split:$offsetMs").mkString(","))
    }
    def payloadBytes(n: Int): Builder = set(PayloadBytes.name, n)
    def option(name: String, value: String): Builder = set(name, value)

    def build(): GeneratorSource = GeneratorSource.fromOptions(options)
  }
}
