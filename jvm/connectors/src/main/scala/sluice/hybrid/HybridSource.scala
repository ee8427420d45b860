package sluice.hybrid

import scala.collection.concurrent.TrieMap
import scala.collection.mutable

import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType

import sluice.api._
import sluice.config.{ConfigOption, RecordLayout}
import sluice.errors.{SluiceConfigException, SluiceError}

/**
 * FLIP-150's hybrid source: reads its sources one after the other in one query, switching when
 * the active source is finished. Every source but the last is bounded. The next source is given
 * up front, built by a `SourceFactory` from the previous source's end state, or — declaratively,
 * so it also works from Python and Spark Connect — started at the previous source's largest
 * event time minus a margin.
 */
final class HybridSource private (
    val entries: IndexedSeq[HybridSource.Entry],
    resolver: SourceResolver,
    val retention: HybridSource.RetentionSettings,
    handles: Seq[SourceFactoryHandle],
    /** Filters handed to the members whose end decides nothing (`withFilters`). */
    filters: Seq[Filter] = Nil)
    extends Source[HybridSplit, HybridEnumeratorState]
    with SupportsSplitPausing[HybridSplit]
    with SupportsColumnarReads[HybridSplit]
    with SupportsColumnPruning[HybridSplit, HybridEnumeratorState]
    with SupportsFilterPushdown[HybridSplit, HybridEnumeratorState] {
  import HybridSource._

  /**
   * Sources built so far, by index (factories run at most once per index, in the driver). They
   * travel with the hybrid to executors, where a factory's source could not be built again.
   */
  private val built = TrieMap[Int, Source[SourceSplit, Any]]()

  def size: Int = entries.size

  /** The ids of the factories that build this hybrid's sources (what a query reading it pins). */
  def factoryIds: Seq[String] = entries.collect { case f: FromFactory => f.factoryId }

  /**
   * Gives up the factories this definition registered (a hybrid rebuilt from options owns none):
   * queries running now keep theirs until they stop; a query started from this definition later
   * fails, saying to define it again. Call it when the definition will start no more queries.
   */
  def release(): Unit = handles.foreach(_.release())

  override def sourceType: String = Type

  override def boundedness: Boundedness = entries.last.boundedness

  override def schema: StructType = entries.head.asInstanceOf[Fixed].source.schema

  /** Compact rows are the first source's; a source started at the previous one's event time needs full rows. */
  override def schema(layout: RecordLayout): StructType = {
    if (layout == RecordLayout.Compact) {
      entries.zipWithIndex.collectFirst { case (_: StartAtPreviousEnd, i) => i }.foreach { i =>
        throw SluiceError.config(
          s"HybridSource: source $i starts at the previous source's last event " +
            "time, but compact rows (forceTimestampSupport=false) carry no event time; give it fixed start positions " +
            "or set forceTimestampSupport=true.")
      }
    }
    entries.head.asInstanceOf[Fixed].source.schema(layout)
  }

  /** Whether the readers of these splits' sources can pause them (each source answers for its own). */
  override def canPauseSplits(splits: Seq[HybridSplit]): Boolean =
    splits.groupBy(_.sourceIndex).forall { case (i, own) =>
      resolvedSourceAt(i) match {
        case p: SupportsSplitPausing[SourceSplit @unchecked] => p.canPauseSplits(own.map(_.child))
        case _ => false
      }
    }

  override def options: Map[String, String] =
    Map("source" -> Type, SourcesOption -> entries.size.toString) ++ retention.asGiven ++
      entries.zipWithIndex.flatMap { case (e, i) =>
        e.options.map { case (k, v) => HybridOptions.entryKey(i, k) -> v }
      }

  /**
   * This hybrid with every member reading only the columns `required` names. Members must give
   * one schema, and each may keep more columns than asked (Parquet its partition and provenance
   * columns), so each is asked for what any of them keeps until they agree (without building
   * one: `schemaWithColumns`); then the members are pruned to that. A member built by a factory
   * is known only at its switch, so such a hybrid reads every column, as one whose members
   * cannot all prune; so does one with a member whose end decides the next member's start and
   * whose pruned copy may return other records (`pruningKeepsRecords`: a record dropped as
   * malformed in a column not read would be kept, and move that start).
   */
  override def withColumns(required: Set[String]): HybridSource =
    agreedColumns(required).fold(this) { names =>
      new HybridSource(
        entries.map(HybridSource.pruned(_, names)),
        resolver,
        retention,
        Nil,
        filters)
    }

  override def schemaWithColumns(required: Set[String], layout: RecordLayout): StructType =
    agreedColumns(required).fold(schema(layout)) { names =>
      HybridSource.schemaOfPruned(entries.head, names, layout)
    }

  /** The columns every member gives when the query uses `required`; None when nothing is pruned. */
  private def agreedColumns(required: Set[String]): Option[Set[String]] = {
    val all = schema.fieldNames.toSet
    @annotation.tailrec
    def agree(names: Set[String]): Set[String] = {
      val kept = entries
        .map(e => HybridSource.schemaOfPruned(e, names, RecordLayout.Full).fieldNames.toSet)
        .reduce(_ ++ _)
      if (kept == names) names else agree(kept ++ names)
    }
    val recordsMayChange = entries.indices.exists(i =>
      endDecidesNextStart(i) && !HybridSource.pruningKeepsRecords(entries(i)))
    if (entries.exists(_.isInstanceOf[FromFactory]) || recordsMayChange) None
    else Some(agree(required intersect all)).filter(_ != all)
  }

  /**
   * This hybrid handing `filters` to its members that can skip data by them, except a member
   * whose end decides where the next one starts (one the next starts at the end of, or builds
   * from): what it skipped would move that start, and with it which of the next member's
   * records are read. Spark applies the filters to every row either way.
   */
  override def withFilters(filters: Seq[Filter]): HybridSource =
    if (filters.isEmpty) this
    else new HybridSource(entries, resolver, retention, Nil, filters)

  /** Whether member `index`'s end decides where the next starts (it starts at that end, or builds from it). */
  private def endDecidesNextStart(index: Int): Boolean =
    index < entries.size - 1 && !entries(index + 1).isInstanceOf[Fixed]

  /** Whether member `index` is handed the filters: the last, or one followed by a source given up front. */
  private def filtersReach(index: Int): Boolean = !endDecidesNextStart(index)

  private def filtered(index: Int, source: Source[_, _]): Source[_, _] = source match {
    case f: SupportsFilterPushdown[SourceSplit @unchecked, Any @unchecked]
        if filters.nonEmpty && filtersReach(index) =>
      f.withFilters(filters)
    case other => other
  }

  /** The source at `index`, built (once) from the context of the switch into it. */
  private[hybrid] def sourceAt(
      index: Int,
      context: Option[SourceSwitchContext]): Source[SourceSplit, Any] =
    built.getOrElseUpdate(
      index, {
        val source = filtered(index, entries(index).build(context, resolver))
        if (source.schema != schema) {
          throw new IllegalStateException(
            s"HybridSource: source $index (${source.sourceType}) built at the switch has schema " +
              s"${source.schema.toDDL}, but the hybrid's schema is ${schema.toDDL}.")
        }
        if (index < entries.size - 1 && source.boundedness != Boundedness.Bounded) {
          throw new IllegalStateException(
            s"HybridSource: source $index (${source.sourceType}) built at the switch is unbounded; only the last source may be.")
        }
        source.asInstanceOf[Source[SourceSplit, Any]]
      })

  private[hybrid] def resolvedSourceAt(index: Int): Source[SourceSplit, Any] =
    built.getOrElse(
      index,
      entries(index) match {
        case _: Fixed => sourceAt(index, None)
        case _ =>
          throw new IllegalStateException(
            s"HybridSource: source $index has not been built yet; the enumerator restores it first.")
      })

  override def createEnumerator(): HybridEnumerator = new HybridEnumerator(this, None)
  override def restoreEnumerator(state: HybridEnumeratorState): HybridEnumerator = {
    // Earlier sources' splits are still in the offset; rebuild every source switched to so far.
    state.switches.foreach(s => sourceAt(s.toIndex, Some(s.context)))
    new HybridEnumerator(this, Some(state))
  }
  override def createReader(context: ReaderContext): HybridReader =
    new HybridReader(this, context)

  /** Column batches when every member the ranges belong to can read its own ranges as batches. */
  override def readsColumnar(
      ranges: Seq[SplitRange[HybridSplit]],
      layout: RecordLayout): Boolean =
    ranges.groupBy(_.split.sourceIndex).forall { case (i, own) =>
      HybridSource
        .columnar(resolvedSourceAt(i))
        .exists(_.readsColumnar(own.map(r => SplitRange(r.split.child, r.from, r.until)), layout))
    }

  override def createColumnarReader(context: ReaderContext): HybridColumnarReader =
    new HybridColumnarReader(this, context)

  override def splitSerializer: VersionedSerializer[HybridSplit] = new HybridSplitSerializer(this)
  override def enumeratorStateSerializer: VersionedSerializer[HybridEnumeratorState] =
    HybridStateSerializer

  override def toString: String = s"HybridSource(${entries.mkString(", ")})"
}

object HybridSource {
  val Type = "hybrid"

  /** `entry` with its source reading only `names` (a source that cannot prune reads all). */
  private def pruned(entry: Entry, names: Set[String]): Entry = entry match {
    case Fixed(s) => Fixed(prunedSource(s, names))
    case StartAtPreviousEnd(base, margin) =>
      prunedSource(base, names) match {
        case s: SupportsStartAtTimestamp => StartAtPreviousEnd(s, margin)
        case other =>
          throw new IllegalStateException(
            s"HybridSource: ${other.sourceType} pruned can no longer start at a timestamp")
      }
    case f: FromFactory => f
  }

  private def pruningKeepsRecords(entry: Entry): Boolean = entry match {
    case Fixed(s) => keepsRecords(s)
    case StartAtPreviousEnd(base, _) => keepsRecords(base)
    case _: FromFactory => false
  }

  private def keepsRecords(source: Source[_, _]): Boolean = source match {
    case p: SupportsColumnPruning[SourceSplit @unchecked, Any @unchecked] => p.pruningKeepsRecords
    case _ => true // it reads every column anyway
  }

  private def prunedSource(source: Source[_, _], names: Set[String]): Source[_, _] =
    source match {
      case p: SupportsColumnPruning[SourceSplit @unchecked, Any @unchecked] =>
        p.withColumns(names)
      case other => other
    }

  /** The schema of `entry`'s source pruned to `names`, without building it. */
  private def schemaOfPruned(
      entry: Entry,
      names: Set[String],
      layout: RecordLayout): StructType = {
    val source = entry match {
      case Fixed(s) => s
      case StartAtPreviousEnd(base, _) => base
      case _: FromFactory =>
        throw new IllegalStateException(
          "HybridSource: a factory's source is not known before its switch")
    }
    source match {
      case p: SupportsColumnPruning[SourceSplit @unchecked, Any @unchecked] =>
        p.schemaWithColumns(names, layout)
      case other => other.schema(layout)
    }
  }

  /** A member as a source of column batches, when it is one. */
  private[hybrid] def columnar(member: Source[_, _]): Option[SupportsColumnarReads[SourceSplit]] =
    member match {
      case c: SupportsColumnarReads[SourceSplit @unchecked] => Some(c)
      case _ => None
    }
  val SourcesOption: String = HybridOptions.Sources.name
  private val FactoryKey = HybridOptions.Factory.name
  private val BoundednessKey = HybridOptions.FactoryBoundedness.name
  private val MarginKey = HybridOptions.StartAtPreviousEndMinusMs.name

  /**
   * How the hybrid watches the retention of its next source (`RetentionGuard`); `asGiven` holds the
   * options as given, so that `options` rebuilds the same hybrid.
   */
  final case class RetentionSettings(
      checkIntervalMs: Long,
      warnBelowMs: Long,
      asGiven: Map[String, String] = Map.empty)

  object RetentionSettings {
    val Default: RetentionSettings = RetentionSettings(
      HybridOptions.RetentionCheckIntervalMs.default.get,
      HybridOptions.RetentionWarningMs.default.get)
  }

  /** One position in the chain: how its source comes to be. */
  sealed trait Entry extends Serializable {
    def boundedness: Boundedness
    def options: Map[String, String]
    def build(context: Option[SourceSwitchContext], resolver: SourceResolver): Source[_, _]
  }

  final case class Fixed(source: Source[_, _]) extends Entry {
    override def boundedness: Boundedness = source.boundedness
    override def options: Map[String, String] = source.options
    override def build(
        context: Option[SourceSwitchContext],
        resolver: SourceResolver): Source[_, _] = source
  }

  /** A source built at the switch by the factory registered under `factoryId`. */
  final case class FromFactory(factoryId: String, boundedness: Boundedness) extends Entry {
    override def options: Map[String, String] = Map(
      FactoryKey -> factoryId,
      BoundednessKey -> (if (boundedness == Boundedness.Bounded) "bounded" else "unbounded"))
    override def build(
        context: Option[SourceSwitchContext],
        resolver: SourceResolver): Source[_, _] =
      SourceFactories.get(factoryId) match {
        case f: OptionsSourceFactory => resolver.fromOptions(f.createOptions(context.get))
        case f => f.create(context.get)
      }
    override def toString: String = s"FromFactory($boundedness)"
  }

  /** Starts `base` at the previous source's largest event time minus `marginMs` (if it had one). */
  final case class StartAtPreviousEnd(
      base: Source[_, _] with SupportsStartAtTimestamp,
      marginMs: Long)
      extends Entry {
    override def boundedness: Boundedness = base.boundedness
    override def options: Map[String, String] = base.options + (MarginKey -> marginMs.toString)
    override def build(
        context: Option[SourceSwitchContext],
        resolver: SourceResolver): Source[_, _] =
      context.flatMap(_.previousMaxEventTime) match {
        case Some(ts) => base.startingAtTimestamp(math.max(0L, ts - marginMs))
        case None => base // no event time in the previous source: the base's own start positions
      }
  }

  def builder(first: Source[_, _]): Builder =
    new Builder(Vector(Right(Fixed(first))), RetentionSettings.Default)

  /**
   * Builds a hybrid; its factories are registered by `build()`, once per hybrid built, so that each
   * hybrid owns its own and releasing one never takes another's (a builder may build several).
   */
  final class Builder private[HybridSource] (
      steps: Vector[Either[(SourceFactory, Boundedness), Entry]],
      retention: RetentionSettings) {
    def addSource(source: Source[_, _]): Builder =
      new Builder(steps :+ Right(Fixed(source)), retention)
    def addSource(factory: SourceFactory, boundedness: Boundedness): Builder =
      new Builder(steps :+ Left((factory, boundedness)), retention)
    def addSource(
        factory: SourceSwitchContext => Source[_, _],
        boundedness: Boundedness): Builder =
      addSource(SourceFactory(factory), boundedness)

    /** `source`, started at the previous source's largest event time minus `marginMs`. */
    def addSourceStartingAtPreviousEnd(source: Source[_, _], marginMs: Long): Builder =
      source match {
        case s: SupportsStartAtTimestamp =>
          new Builder(steps :+ Right(StartAtPreviousEnd(s, marginMs)), retention)
        case other =>
          throw SluiceError.config(
            s"HybridSource: a ${other.sourceType} source cannot be started at a timestamp; give it fixed " +
              "start positions or a SourceFactory.")
      }

    /**
     * While bounded sources are read, check at most every `interval` that the next source (Kafka)
     * still holds the records its start needs, and warn while they can be deleted within
     * `warnBelow` (`hybrid.retentionCheckIntervalMs`, `hybrid.retentionWarningMs`; zero interval: never).
     */
    def retentionCheck(interval: java.time.Duration, warnBelow: java.time.Duration): Builder =
      new Builder(
        steps,
        retentionSettings(
          Map(
            HybridOptions.RetentionCheckIntervalMs.name -> interval.toMillis.toString,
            HybridOptions.RetentionWarningMs.name -> warnBelow.toMillis.toString)))
    def build(): HybridSource = {
      val handles = mutable.ArrayBuffer[SourceFactoryHandle]()
      try {
        val entries = steps.map {
          case Right(entry) => entry
          case Left((factory, boundedness)) =>
            val handle = SourceFactories.register(factory)
            handles += handle
            FromFactory(handle.id, boundedness)
        }
        validated(entries, BuiltInScala, retention, handles.toSeq)
      } catch {
        case e: Throwable => handles.foreach(_.release()); throw e
      }
    }
  }

  /** The hybrid-wide retention options among `options` (matched case-insensitively), checked as declared. */
  private def retentionSettings(options: Map[String, String]): RetentionSettings = {
    val asGiven = options.filter { case (k, _) =>
      HybridOptions.hybridWide.exists(_.name.equalsIgnoreCase(k))
    }
    def value(o: ConfigOption[Long]): Long = asGiven
      .collectFirst {
        case (k, v) if k.equalsIgnoreCase(o.name) =>
          o.parse(v.trim)
            .filter(o.check)
            .getOrElse(throw ConfigOption.invalid("HybridSource", o.name, v, o.allowed))
      }
      .getOrElse(o.default.get)
    RetentionSettings(
      value(HybridOptions.RetentionCheckIntervalMs),
      value(HybridOptions.RetentionWarningMs),
      asGiven)
  }

  /**
   * A hybrid built with the Scala builder resolves no options: its factories are Scala ones. The
   * binding rebuilds every source from its options (with the binding's registry) before reading.
   */
  private object BuiltInScala extends SourceResolver {
    override def fromOptions(options: Map[String, String]): Source[_ <: SourceSplit, _] =
      throw new IllegalStateException(
        "HybridSource: this hybrid was built in Scala; read it through Sluice " +
          "(Sluice.fromSource, or format(\"sluice\") with its options), which rebuilds it with every source type.")
  }

  private def validated(
      entries: IndexedSeq[Entry],
      resolver: SourceResolver,
      retention: RetentionSettings,
      handles: Seq[SourceFactoryHandle]): HybridSource = {
    if (entries.isEmpty)
      throw SluiceError.config("HybridSource: give at least one source.")
    entries.zipWithIndex.init
      .collectFirst { case (e, i) if e.boundedness != Boundedness.Bounded => (e, i) }
      .foreach { case (e, i) =>
        throw SluiceError.config(
          s"HybridSource: source $i (${describe(e)}) is unbounded, but every source except the last must be " +
            "bounded: give it stopping offsets, or make it the last source.")
      }
    val schema = entries.head.asInstanceOf[Fixed].source.schema
    entries.zipWithIndex.tail.foreach {
      case (Fixed(s), i) if s.schema != schema => throw schemaMismatch(i, s, schema)
      case (StartAtPreviousEnd(s, _), i) if s.schema != schema =>
        throw schemaMismatch(i, s, schema)
      case _ =>
    }
    new HybridSource(entries, resolver, retention, handles)
  }

  /** Source `i` from its options; its errors say which of the hybrid's sources they are about. */
  private def member(
      i: Int,
      resolver: SourceResolver,
      options: Map[String, String]): Source[_ <: SourceSplit, _] =
    try resolver.fromOptions(options)
    catch {
      case e: SluiceConfigException =>
        throw SluiceError.prefixed(
          e,
          s"HybridSource source $i (options '${HybridOptions.entryPrefix(i)}*'): ")
      case e: IllegalArgumentException =>
        throw SluiceError.config(
          s"HybridSource source $i (options '${HybridOptions.entryPrefix(i)}*'): ${e.getMessage}",
          e)
    }

  private def describe(e: Entry): String = e match {
    case Fixed(s) => s.sourceType
    case StartAtPreviousEnd(s, _) => s.sourceType
    case _: FromFactory => "built by a factory"
  }

  private def schemaMismatch(
      i: Int,
      s: Source[_, _],
      schema: StructType): SluiceConfigException = {
    val first = schema.fields.map(f => s"${f.name} ${f.dataType.sql}").toSeq
    val other = s.schema.fields.map(f => s"${f.name} ${f.dataType.sql}").toSeq
    SluiceError.config(
      s"HybridSource: all sources must produce the same schema, but source $i (${s.sourceType}) differs from " +
        s"source 0: only in source 0: [${first.diff(other).mkString(", ")}]; only in source $i: " +
        s"[${other.diff(first).mkString(", ")}].")
  }

  /** Rebuilds a hybrid from its options; `resolver` builds its sources from theirs. */
  def fromOptions(options: Map[String, String], resolver: SourceResolver): HybridSource = {
    def invalid(key: String, value: String, allowed: String) =
      ConfigOption.invalid("HybridSource", key, value, allowed)
    val countRaw = options
      .collectFirst { case (k, v) if k.equalsIgnoreCase(SourcesOption) => v }
      .getOrElse(throw SluiceError.config(
        s"HybridSource: missing required option '$SourcesOption' (${HybridOptions.Sources.allowed})."))
    val count = HybridOptions.Sources
      .parse(countRaw.trim)
      .filter(HybridOptions.Sources.check)
      .getOrElse(throw invalid(SourcesOption, countRaw, HybridOptions.Sources.allowed))
    val retention = retentionSettings(options)
    val unknown = options.keys.filterNot(k =>
      k.equalsIgnoreCase(SourcesOption) || retention.asGiven.contains(k) ||
        (0 until count).exists(i => k.toLowerCase.startsWith(HybridOptions.entryPrefix(i))))
    if (unknown.nonEmpty) {
      throw SluiceError.config(s"HybridSource: unknown option${if (unknown.size > 1) "s" else ""} " +
        unknown.toSeq.sorted
          .map(u => s"'$u'")
          .mkString(", ") + s"; options of source i are given as " +
        s"'${HybridOptions.Entry.name}' for i from 0 to ${count - 1} (option '$SourcesOption' is $count); the hybrid's " +
        s"own options are ${(SourcesOption +: HybridOptions.hybridWide.map(_.name)).mkString(", ")}.")
    }
    val entries = (0 until count).map { i =>
      val prefix = HybridOptions.entryPrefix(i)
      val own = options.collect {
        case (k, v) if k.toLowerCase.startsWith(prefix) => k.substring(prefix.length) -> v
      }
      def key(name: String) = own.collectFirst { case (k, v) if k.equalsIgnoreCase(name) => v }
      val rest = own.filterNot { case (k, _) =>
        Seq(FactoryKey, BoundednessKey, MarginKey).exists(_.equalsIgnoreCase(k))
      }
      // values first, then how they combine
      val margin = key(MarginKey).map(HybridOptions.margin(i, _))
      val boundedness = key(BoundednessKey).map { b =>
        HybridOptions.FactoryBoundedness
          .parse(b.trim)
          .filter(HybridOptions.FactoryBoundedness.check)
          .getOrElse(
            throw invalid(
              HybridOptions.entryKey(i, BoundednessKey),
              b,
              HybridOptions.FactoryBoundedness.allowed))
          .toLowerCase
      }
      def conflict(message: String) =
        throw SluiceError.config(s"HybridSource: $message")
      if (i == 0 && key(FactoryKey).isDefined) {
        conflict(
          s"the first source must be given, not built by a factory ('${HybridOptions.entryKey(0, FactoryKey)}').")
      }
      if (i == 0 && margin.isDefined) {
        conflict(
          s"option '${HybridOptions.entryKey(0, MarginKey)}' needs a previous source; source 0 has none.")
      }
      if (key(FactoryKey).isEmpty && boundedness.isDefined) {
        conflict(
          s"option '${HybridOptions.entryKey(i, BoundednessKey)}' applies only with " +
            s"'${HybridOptions.entryKey(i, FactoryKey)}'; a given source knows its boundedness.")
      }
      (key(FactoryKey), margin) match {
        case (Some(f), _) =>
          if (margin.isDefined || rest.nonEmpty) {
            conflict(
              s"source $i is built by a factory ('${HybridOptions.entryKey(i, FactoryKey)}'); it takes no " +
                s"other options but '${HybridOptions.entryKey(i, BoundednessKey)}' (given: " +
                (own.keys.toSeq.sorted
                  .filterNot(_.equalsIgnoreCase(FactoryKey))
                  .map(prefix + _)
                  .mkString(", ")) + ").")
          }
          val bounded = boundedness.getOrElse(throw SluiceError.config(
            s"HybridSource: missing required option '${HybridOptions.entryKey(i, BoundednessKey)}' " +
              s"(${HybridOptions.FactoryBoundedness.allowed}) for a source built by a factory."))
          if (!SourceFactories.isRegistered(f.trim)) {
            throw invalid(
              HybridOptions.entryKey(i, FactoryKey),
              f,
              s"the id of a factory registered in this driver (${SourceFactories.NotRegisteredFix})")
          }
          FromFactory(
            f.trim,
            if (bounded == "bounded") Boundedness.Bounded else Boundedness.ContinuousUnbounded)
        case (None, Some(ms)) =>
          member(i, resolver, rest) match {
            case s: SupportsStartAtTimestamp => StartAtPreviousEnd(s, ms)
            case other =>
              conflict(
                s"option '${HybridOptions.entryKey(i, MarginKey)}' needs a source that can start " +
                  s"at a timestamp; a ${other.sourceType} source cannot.")
          }
        case (None, None) => Fixed(member(i, resolver, rest))
      }
    }
    validated(entries, resolver, retention, handles = Nil)
  }
}
