package sluice.hybrid

import scala.collection.concurrent.TrieMap
import scala.util.Try

import org.apache.spark.sql.types.StructType

import sluice.Sources
import sluice.api._
import sluice.config.RecordLayout

/**
 * FLIP-150's hybrid source: reads its sources one after the other in one query, switching when
 * the active source is finished. Every source but the last is bounded. The next source is given
 * up front, built by a `SourceFactory` from the previous source's end state, or — declaratively,
 * so it also works from Python and Spark Connect — started at the previous source's largest
 * event time minus a margin.
 */
final class HybridSource private (val entries: IndexedSeq[HybridSource.Entry])
  extends Source[HybridSplit, HybridEnumeratorState] {
  import HybridSource._

  /** Sources built so far in this driver, by index (factories run at most once per index here). */
  @transient private lazy val built = TrieMap[Int, Source[SourceSplit, Any]]()

  def size: Int = entries.size

  override def sourceType: String = Type

  override def boundedness: Boundedness = entries.last.boundedness

  override def schema: StructType = entries.head.asInstanceOf[Fixed].source.schema

  override def options: Map[String, String] =
    Map("source" -> Type, SourcesOption -> entries.size.toString) ++
      entries.zipWithIndex.flatMap { case (e, i) => e.options.map { case (k, v) => s"hybrid.$i.$k" -> v } }

  /** Compact when its first source is: `fromOptions` puts every given source in one layout. */
  private def layout: RecordLayout = entries.head match {
    case Fixed(s) if s.options.get(RecordLayout.Option.name).contains(RecordLayout.Compact.name) => RecordLayout.Compact
    case _ => RecordLayout.Full
  }

  /** The source at `index`, built (once) from the context of the switch into it. */
  private[hybrid] def sourceAt(index: Int, context: Option[SourceSwitchContext]): Source[SourceSplit, Any] =
    built.getOrElseUpdate(index, {
      val made = entries(index).build(context)
      // a factory's source in the hybrid's layout: sources are values, rebuilt from their options
      val source: Source[_, _] =
        if (layout == RecordLayout.Compact) Sources.fromOptions(made.options + RecordLayout.entry(layout)) else made
      if (source.schema != schema) {
        throw new IllegalStateException(
          s"HybridSource: source $index (${source.sourceType}) built at the switch has schema " +
            s"${source.schema.toDDL}, but the hybrid's schema is ${schema.toDDL}.")
      }
      if (index < entries.size - 1 && source.boundedness != Boundedness.Bounded) {
        throw new IllegalStateException(s"HybridSource: source $index (${source.sourceType}) built at the switch is unbounded; only the last source may be.")
      }
      source.asInstanceOf[Source[SourceSplit, Any]]
    })

  private[hybrid] def resolvedSourceAt(index: Int): Source[SourceSplit, Any] =
    built.getOrElse(index, entries(index) match {
      case _: Fixed => sourceAt(index, None)
      case _ => throw new IllegalStateException(
        s"HybridSource: source $index has not been built yet; the enumerator restores it first.")
    })

  override def createEnumerator(): HybridEnumerator = new HybridEnumerator(this, None)
  override def restoreEnumerator(state: HybridEnumeratorState): HybridEnumerator = {
    // Earlier sources' splits are still in the offset; rebuild every source switched to so far.
    state.switches.foreach(s => sourceAt(s.toIndex, Some(s.context)))
    new HybridEnumerator(this, Some(state))
  }
  override def createReader(): HybridReader = new HybridReader

  override def splitSerializer: VersionedSerializer[HybridSplit] = new HybridSplitSerializer(this)
  override def enumeratorStateSerializer: VersionedSerializer[HybridEnumeratorState] = HybridStateSerializer

  override def toString: String = s"HybridSource(${entries.mkString(", ")})"
}

object HybridSource {
  val Type = "hybrid"
  val SourcesOption = "hybrid.sources"
  private val FactoryKey = "factory"
  private val BoundednessKey = "boundedness"
  private val MarginKey = "startAtPreviousEndMinusMs"

  /** One position in the chain: how its source comes to be. */
  sealed trait Entry extends Serializable {
    def boundedness: Boundedness
    def options: Map[String, String]
    def build(context: Option[SourceSwitchContext]): Source[_, _]
  }

  final case class Fixed(source: Source[_, _]) extends Entry {
    override def boundedness: Boundedness = source.boundedness
    override def options: Map[String, String] = source.options
    override def build(context: Option[SourceSwitchContext]): Source[_, _] = source
  }

  /** A source built at the switch by the factory registered under `factoryId`. */
  final case class FromFactory(factoryId: String, boundedness: Boundedness) extends Entry {
    override def options: Map[String, String] = Map(FactoryKey -> factoryId,
      BoundednessKey -> (if (boundedness == Boundedness.Bounded) "bounded" else "unbounded"))
    override def build(context: Option[SourceSwitchContext]): Source[_, _] =
      SourceFactories.get(factoryId).create(context.get)
    override def toString: String = s"FromFactory($boundedness)"
  }

  /** Starts `base` at the previous source's largest event time minus `marginMs` (if it had one). */
  final case class StartAtPreviousEnd(base: Source[_, _] with SupportsStartAtTimestamp, marginMs: Long) extends Entry {
    override def boundedness: Boundedness = base.boundedness
    override def options: Map[String, String] = base.options + (MarginKey -> marginMs.toString)
    override def build(context: Option[SourceSwitchContext]): Source[_, _] =
      context.flatMap(_.previousMaxEventTime) match {
        case Some(ts) => base.startingAtTimestamp(math.max(0L, ts - marginMs))
        case None => base // no event time in the previous source: the base's own start positions
      }
  }

  def builder(first: Source[_, _]): Builder = new Builder(Vector(Fixed(first)))

  final class Builder private[HybridSource] (entries: Vector[Entry]) {
    def addSource(source: Source[_, _]): Builder = new Builder(entries :+ Fixed(source))
    def addSource(factory: SourceFactory, boundedness: Boundedness): Builder =
      new Builder(entries :+ FromFactory(SourceFactories.register(factory), boundedness))
    def addSource(factory: SourceSwitchContext => Source[_, _], boundedness: Boundedness): Builder =
      addSource(SourceFactory(factory), boundedness)
    /** `source`, started at the previous source's largest event time minus `marginMs`. */
    def addSourceStartingAtPreviousEnd(source: Source[_, _], marginMs: Long): Builder = source match {
      case s: SupportsStartAtTimestamp => new Builder(entries :+ StartAtPreviousEnd(s, marginMs))
      case other => throw new IllegalArgumentException(
        s"HybridSource: a ${other.sourceType} source cannot be started at a timestamp; give it fixed " +
          "start positions or a SourceFactory.")
    }
    def build(): HybridSource = validated(entries)
  }

  private def validated(entries: IndexedSeq[Entry]): HybridSource = {
    if (entries.isEmpty) throw new IllegalArgumentException("HybridSource: give at least one source.")
    entries.zipWithIndex.init.collectFirst { case (e, i) if e.boundedness != Boundedness.Bounded => (e, i) }.foreach {
      case (e, i) => throw new IllegalArgumentException(
        s"HybridSource: source $i (${describe(e)}) is unbounded, but every source except the last must be " +
          "bounded: give it stopping offsets, or make it the last source.")
    }
    val schema = entries.head.asInstanceOf[Fixed].source.schema
    entries.zipWithIndex.tail.foreach {
      case (Fixed(s), i) if s.schema != schema => throw schemaMismatch(i, s, schema)
      case (StartAtPreviousEnd(s, _), i) if s.schema != schema => throw schemaMismatch(i, s, schema)
      case _ =>
    }
    new HybridSource(entries)
  }

  private def describe(e: Entry): String = e match {
    case Fixed(s) => s.sourceType
    case StartAtPreviousEnd(s, _) => s.sourceType
    case _: FromFactory => "built by a factory"
  }

  private def schemaMismatch(i: Int, s: Source[_, _], schema: StructType): IllegalArgumentException = {
    val first = schema.fields.map(f => s"${f.name} ${f.dataType.sql}").toSeq
    val other = s.schema.fields.map(f => s"${f.name} ${f.dataType.sql}").toSeq
    new IllegalArgumentException(
      s"HybridSource: all sources must produce the same schema, but source $i (${s.sourceType}) differs from " +
        s"source 0: only in source 0: [${first.diff(other).mkString(", ")}]; only in source $i: " +
        s"[${other.diff(first).mkString(", ")}].")
  }

  def fromOptions(options: Map[String, String]): HybridSource = {
    val count = options.collectFirst { case (k, v) if k.equalsIgnoreCase(SourcesOption) => v }
      .flatMap(v => Try(v.trim.toInt).toOption).filter(_ >= 1).getOrElse(throw new IllegalArgumentException(
        s"HybridSource: option '$SourcesOption' must be the number of sources (an integer >= 1)."))
    val layout = options.collectFirst { case (k, v) if k.equalsIgnoreCase(RecordLayout.Option.name) => v }
    val unknown = options.keys.filterNot(k => k.equalsIgnoreCase(SourcesOption) || k.equalsIgnoreCase(RecordLayout.Option.name) ||
      (0 until count).exists(i => k.toLowerCase.startsWith(s"hybrid.$i.")))
    if (unknown.nonEmpty) {
      throw new IllegalArgumentException(s"HybridSource: unknown options ${unknown.toSeq.sorted.mkString(", ")}; " +
        s"options of source i are given as 'hybrid.<i>.<option>' for i from 0 to ${count - 1}.")
    }
    val entries = (0 until count).map { i =>
      val prefix = s"hybrid.$i."
      // the binding's layout reaches every source given by options
      val own = options.collect { case (k, v) if k.toLowerCase.startsWith(prefix) => k.substring(prefix.length) -> v } ++
        layout.map(RecordLayout.Option.name -> _)
      def key(name: String) = own.collectFirst { case (k, v) if k.equalsIgnoreCase(name) => v }
      val rest = own.filterNot { case (k, _) => Seq(FactoryKey, BoundednessKey, MarginKey).exists(_.equalsIgnoreCase(k)) }
      (key(FactoryKey), key(MarginKey)) match {
        case (Some(f), _) =>
          val bounded = key(BoundednessKey).map(_.toLowerCase) match {
            case Some("bounded") => Boundedness.Bounded
            case Some("unbounded") => Boundedness.ContinuousUnbounded
            case other => throw new IllegalArgumentException(
              s"HybridSource: option 'hybrid.$i.$BoundednessKey' must be bounded or unbounded, not ${other.getOrElse("missing")}.")
          }
          SourceFactories.get(f) // fails now, naming the fix, if this driver does not know it
          FromFactory(f, bounded)
        case (None, Some(_)) if layout.contains(RecordLayout.Compact.name) =>
          throw new IllegalArgumentException(s"HybridSource: source $i starts at the previous source's last event " +
            "time, but compact rows (forceTimestampSupport=false) carry no event time; give it fixed start positions " +
            "or set forceTimestampSupport=true.")
        case (None, Some(margin)) =>
          val ms = Try(margin.trim.toLong).toOption.filter(_ >= 0).getOrElse(throw new IllegalArgumentException(
            s"HybridSource: invalid value '$margin' for option 'hybrid.$i.$MarginKey'; allowed: an integer >= 0."))
          Sources.fromOptions(rest) match {
            case s: SupportsStartAtTimestamp => StartAtPreviousEnd(s, ms)
            case other => throw new IllegalArgumentException(
              s"HybridSource: option 'hybrid.$i.$MarginKey' needs a source that can start at a timestamp; " +
                s"a ${other.sourceType} source cannot.")
          }
        case (None, None) => Fixed(Sources.fromOptions(rest))
      }
    }
    if (!entries.head.isInstanceOf[Fixed]) {
      throw new IllegalArgumentException("HybridSource: the first source must be given, not built by a factory.")
    }
    validated(entries)
  }
}
