package sluice.connector.kafka

import java.util.Locale
import java.util.regex.Pattern

import scala.util.Try

import org.apache.kafka.clients.consumer.ConsumerConfig
import org.apache.kafka.common.config.ConfigDef

import sluice.config.{ConfigOption, OptionRule, Options, RecordLayout}
import sluice.connector.format.{PayloadFormat, Provenance}
import sluice.errors.SluiceError

/** Which topics a Kafka source reads. */
sealed trait TopicSubscription extends Serializable {
  def matches(topic: String): Boolean
}
object TopicSubscription {
  final case class Topics(names: Seq[String]) extends TopicSubscription {
    override def matches(topic: String): Boolean = names.contains(topic)
  }
  final case class TopicPattern(regex: String) extends TopicSubscription {
    @transient private lazy val compiled = Pattern.compile(regex)
    override def matches(topic: String): Boolean = compiled.matcher(topic).matches()
  }

  /** Spark's `assign`: these partitions only, no discovery of others. */
  final case class Assigned(partitions: Map[String, Set[Int]]) extends TopicSubscription {
    override def matches(topic: String): Boolean = partitions.contains(topic)
    def includes(topic: String, partition: Int): Boolean =
      partitions.get(topic).exists(_.contains(partition))
  }
}

/**
 * The Kafka source's settings. Option names follow Spark's Kafka source (`kafka.*` consumer
 * properties, `subscribe`, `startingOffsets`, `failOnDataLoss`, ...), so most queries move over
 * by changing `format("kafka")` to `format("sluice").option("source", "kafka")` (docs/connectors.md
 * lists the exceptions).
 */
final case class KafkaConfig(
    consumerProperties: Map[String, String],
    subscription: TopicSubscription,
    starting: OffsetsInitializer,
    stopping: Option[OffsetsInitializer],
    failOnDataLoss: Boolean,
    includeHeaders: Boolean,
    partitionDiscoveryIntervalMs: Long,
    pollTimeoutMs: Long,
    /** The value's format when parsed (json, csv, text); None for raw rows. */
    payload: Option[PayloadFormat],
    includeKey: Boolean,
    /** The option `starting` was taken from, for messages. */
    startingOption: String = "startingOffsets",
    /**
     * A start timestamp no record of a partition reaches: fail (Spark's default strategy, `error`),
     * or start that partition at its end (`latest`).
     */
    startPastLastRecordAtEnd: Boolean = false,
    /**
     * The columns a query uses (`SupportsColumnPruning`), or None: all. Rows hold only those the
     * layout has (raw: in Spark's order; parsed: the payload's parsed columns, and the provenance
     * columns when any of them is used). Record times are read whatever is built.
     */
    columns: Option[Set[String]] = None) {

  /**
   * Per-partition start positions must be for topics the source reads: another topic is a typo.
   * Checked when a query starts afresh only: a restart takes its positions from the checkpoint,
   * and ignores these (as Spark does), so a subscription narrowed since must not fail it.
   */
  def checkStartSubscribed(): Unit =
    KafkaConfig.checkSubscribed(starting, startingOption, subscription)

  /**
   * How readers turn records into rows in `layout`. Compact raw rows hold the value (and the key
   * with `includeKey`), never headers; compact parsed rows drop the provenance columns. With
   * `columns`, rows hold only the layout's columns a query uses: raw rows those of Spark's Kafka
   * columns, parsed rows the payload's (parsed only for those, as the file source parses them)
   * and the provenance columns only when one of them is used. Only the layout decides whether
   * record times are read.
   */
  def decoder(layout: RecordLayout): KafkaRecordDecoder = (payload, layout) match {
    case (None, RecordLayout.Full) =>
      columns.fold[KafkaRecordDecoder](KafkaRecordDecoder.Raw(includeHeaders))(used =>
        KafkaRecordDecoder.RawColumns(
          KafkaRowConverter.schema(includeHeaders).fieldNames.filter(used.contains).toSeq))
    case (None, RecordLayout.Compact) if includeHeaders =>
      throw SluiceError.config(
        "KafkaSource: compact rows (forceTimestampSupport=false) hold the value, " +
          "and the key with includeKey=true, never headers; remove includeHeaders or set forceTimestampSupport=true.")
    case (None, RecordLayout.Compact) =>
      KafkaRecordDecoder.RawCompact(includeKey && columns.forall(_.contains("key")))
    case (Some(format), _) =>
      val provenance = layout.hasRecordTimes && columns.forall(c =>
        Provenance.schema.fieldNames.exists(c.contains))
      KafkaRecordDecoder.Parsed(
        columns.fold(format)(format.pruned),
        withProvenance = provenance,
        readsTimestamps = layout.hasRecordTimes)
  }

  def readCommitted: Boolean =
    consumerProperties.get("isolation.level").exists(_.equalsIgnoreCase("read_committed"))

  /** For messages and logs: the consumer properties (declared secret, `ConsumerProperty`) never appear. */
  override def toString: String =
    s"KafkaConfig(subscription=$subscription, starting=$starting, stopping=$stopping, " +
      s"failOnDataLoss=$failOnDataLoss, includeHeaders=$includeHeaders, payload=${payload.getOrElse("raw")}" +
      columns.fold("")(c => s", columns=${c.toSeq.sorted.mkString("[", ", ", "]")}") + ")"
}

object KafkaConfig {
  val Prefix = "kafka."

  val BootstrapServers: ConfigOption[String] =
    ConfigOption.string("kafka.bootstrap.servers", "the Kafka brokers, host:port[,host:port...]")

  /** Secret: consumer properties carry the credentials (sasl.jaas.config, ssl.*.password). */
  val ConsumerProperty: ConfigOption[String] = ConfigOption
    .string(
      "kafka.<property>",
      "any Kafka consumer property, e.g. kafka.security.protocol, kafka.sasl.jaas.config")
    .asSecret
  val Subscribe: ConfigOption[String] = ConfigOption.string(
    "subscribe",
    "comma-separated topics to read; give one of subscribe, subscribePattern and assign")
  val SubscribePattern: ConfigOption[String] = ConfigOption[String](
    "subscribePattern",
    "a Java regex of topics to read; give one of subscribe, subscribePattern and assign",
    None,
    "a Java regular expression",
    s => Try(Pattern.compile(s)).toOption.map(_ => s))
  val Assign: ConfigOption[Map[String, Set[Int]]] = ConfigOption[Map[String, Set[Int]]](
    "assign",
    """the partitions to read, as JSON ({"topicA":[0,1],"topicB":[2,4]}); no other partitions are discovered; """ +
      "give one of subscribe, subscribePattern and assign",
    None,
    "a JSON object of partition lists per topic, e.g. {\"topicA\":[0,1]}",
    parseAssign)
  val StartingOffsetsByTimestampStrategy: ConfigOption[String] = ConfigOption
    .string(
      "startingOffsetsByTimestampStrategy",
      "when no record of a partition has a timestamp at or after the start timestamp: error fails the query " +
        "(Spark's default), latest starts that partition at its end")
    .withDefault("error")
    .oneOf("error or latest", Seq("error", "latest"), ignoreCase = true)
  val GroupIdPrefix: ConfigOption[String] = ConfigOption
    .string(
      "groupIdPrefix",
      "consumers get the group id <prefix>-<random id> (for broker ACLs and quotas keyed by group); Sluice " +
        "never joins the group nor commits offsets to it")
    .nonBlank("a non-empty string")
  val StartingOffsets: ConfigOption[String] = ConfigOption[String](
    "startingOffsets",
    "where a new query starts: earliest, latest, or JSON offsets per partition " +
      """({"topic":{"0":23,"1":-2}}, -2 earliest, -1 latest)""",
    Some("latest"),
    "earliest, latest, or a JSON object of offsets per topic and partition",
    s => offsetsSpec(s, allowLatest = true))
  val StartingTimestamp: ConfigOption[Long] = ConfigOption
    .long(
      "startingTimestamp",
      "start every partition at the first record with a timestamp >= this (epoch ms); " +
        "takes precedence over startingOffsetsByTimestamp and startingOffsets")
    .atLeast(0)
  val StartingOffsetsByTimestamp: ConfigOption[String] = ConfigOption[String](
    "startingOffsetsByTimestamp",
    "a JSON object of start timestamps per topic and partition",
    None,
    "a JSON object of epoch-ms timestamps per topic and partition",
    s => OffsetsInitializer.parseJson(s).map(_ => s))
  val EndingOffsets: ConfigOption[String] = ConfigOption[String](
    "endingOffsets",
    "makes the source bounded: latest (as of the query's start) or JSON offsets per partition (-1 latest)",
    None,
    "latest, or a JSON object of offsets per topic and partition",
    s =>
      offsetsSpec(s, allowLatest = true)
        .filter(_ != "earliest"))
  val EndingTimestamp: ConfigOption[Long] = ConfigOption
    .long(
      "endingTimestamp",
      "makes the source bounded: stop every partition before the first record with a timestamp >= this")
    .atLeast(0)
  val EndingOffsetsByTimestamp: ConfigOption[String] = ConfigOption[String](
    "endingOffsetsByTimestamp",
    "makes the source bounded: JSON end timestamps per topic and partition",
    None,
    "a JSON object of epoch-ms timestamps per topic and partition",
    s => OffsetsInitializer.parseJson(s).map(_ => s))
  val FailOnDataLoss: ConfigOption[Boolean] = ConfigOption
    .boolean(
      "failOnDataLoss",
      "fail when offsets to read are gone (retention, deleted topics); false: skip and count them")
    .withDefault(true)
  val IncludeHeaders: ConfigOption[Boolean] = ConfigOption
    .boolean("includeHeaders", "add the headers column to raw rows")
    .withDefault(false)
  val IncludeKey: ConfigOption[Boolean] = ConfigOption
    .boolean(
      "includeKey",
      "compact raw rows (forceTimestampSupport=false): add the key column before value; full rows always have it")
    .withDefault(false)
  val PartitionDiscoveryIntervalMs: ConfigOption[Long] = ConfigOption
    .long(
      "partitionDiscoveryIntervalMs",
      "how often to look for new partitions and topics; 0: at every batch")
    .withDefault(0L)
    .atLeast(0)
  val PollTimeoutMs: ConfigOption[Long] = ConfigOption
    .long(
      "kafkaConsumer.pollTimeoutMs",
      "how long an executor waits for records it knows exist, or (real-time mode, continuous " +
        "processing) for brokers that stop answering, before failing")
    .withDefault(120000L)
    .atLeast(1)

  val Format: ConfigOption[String] = ConfigOption
    .string(
      "format",
      "raw: Spark's Kafka schema; json, csv or text: the value parsed into `schema` by the same parsers " +
        "as the file source, followed by the provenance columns _split, _position, _timestamp")
    .withDefault("raw")
    .oneOf("raw, json, csv or text", "raw" +: PayloadFormat.Formats, ignoreCase = false)

  /** What to read: one of the three ways Spark's Kafka source names it. */
  val Subscription: OptionRule.ExactlyOne = OptionRule.ExactlyOne(
    "subscription",
    Seq(Subscribe, SubscribePattern, Assign),
    "give what to read with option 'subscribe' (comma-separated topics), 'subscribePattern' " +
      "(a regex) or 'assign' (partitions per topic, as JSON).")

  /** Where a new query starts, by Spark's precedence: a global timestamp, per partition, offsets. */
  val Start: OptionRule.FirstOf = OptionRule.FirstOf(
    "start",
    Seq(StartingTimestamp, StartingOffsetsByTimestamp, StartingOffsets),
    qualifiers = Seq(StartingOffsetsByTimestampStrategy))

  /** Where a bounded source ends, by the same precedence. */
  val Stop: OptionRule.FirstOf =
    OptionRule.FirstOf("stop", Seq(EndingTimestamp, EndingOffsetsByTimestamp, EndingOffsets))

  /** The rules that combine Kafka's options (python/sluice/_options.json carries them). */
  val rules: Seq[OptionRule] = Seq(Subscription, Start, Stop)

  /** Options of the payload format (schema, reader options), for parsed formats. */
  private val formatOptions: Seq[ConfigOption[_]] =
    PayloadFormat.all.filterNot(_.name == PayloadFormat.FormatOption.name)

  private val own: Seq[ConfigOption[_]] = Seq(
    BootstrapServers,
    Subscribe,
    SubscribePattern,
    Assign,
    StartingOffsets,
    StartingTimestamp,
    StartingOffsetsByTimestamp,
    StartingOffsetsByTimestampStrategy,
    EndingOffsets,
    EndingTimestamp,
    EndingOffsetsByTimestamp,
    GroupIdPrefix,
    FailOnDataLoss,
    IncludeHeaders,
    IncludeKey,
    PartitionDiscoveryIntervalMs,
    PollTimeoutMs,
    Format)

  val all: Seq[ConfigOption[_]] = own ++ formatOptions

  /** The reference lists the pass-through property too. */
  val documented: Seq[ConfigOption[_]] = own.head +: ConsumerProperty +: own.tail

  private val FetchOffsetWhy =
    "the driver's offset look-ups retry by themselves (Kafka's admin client, and a new call " +
      "every 10 s that looks the leaders up again, all within 60 s)"

  /** Options of Spark's Kafka source that Sluice does not take, and why (see docs/migrating-from-spark-kafka.md). */
  private val SparkOnly = Map(
    "fetchoffset.numretries" -> FetchOffsetWhy,
    "fetchoffset.retryintervalms" -> FetchOffsetWhy,
    "kafka.consumer.cache.timeout" -> "not an option of a query in Spark either (a Spark setting)")

  /** Consumer properties Sluice sets itself; a user value would break exactly-once reading. */
  private val Reserved = Map(
    "auto.offset.reset" -> "set startingOffsets instead",
    "enable.auto.commit" -> "Sluice commits no offsets to Kafka; positions are in the checkpoint",
    "key.deserializer" -> "keys are always read as bytes; parse them in the query",
    "value.deserializer" -> "values are always read as bytes; use format/schema or parse in the query",
    "interceptor.classes" -> "interceptors would see records read more than once on retries")

  /** The option a start was taken from, by Spark's precedence, for messages. */
  private def startingOption(o: Options): String =
    Start.applying(o).getOrElse(StartingOffsets).name
  private def stoppingOption(o: Options): String = Stop.applying(o).getOrElse(EndingOffsets).name

  /** Positions given per partition must be for topics the source reads: another topic is a typo. */
  private[kafka] def checkSubscribed(
      initializer: OffsetsInitializer,
      option: String,
      subscription: TopicSubscription): Unit = {
    val topics = initializer match {
      case OffsetsInitializer.Specific(offsets) => offsets.keySet.map(_.topic)
      case OffsetsInitializer.TimestampPerPartition(timestamps) => timestamps.keySet.map(_.topic)
      case _ => Set.empty[String]
    }
    val stray = topics.filterNot(subscription.matches).toSeq.sorted
    if (stray.nonEmpty) {
      val read = subscription match {
        case TopicSubscription.Topics(names) => s"subscribe: ${names.mkString(", ")}"
        case TopicSubscription.TopicPattern(regex) =>
          s"subscribePattern '$regex' does not match them"
        case TopicSubscription.Assigned(partitions) =>
          s"assign: ${partitions.keys.toSeq.sorted.mkString(", ")}"
      }
      throw SluiceError.config(
        s"KafkaSource: option '$option' names topics not subscribed: " +
          stray.map(t => s"'$t'").mkString(", ") + s" ($read).")
    }
  }

  /**
   * Values of known consumer properties are checked here, on the driver, as Kafka would check
   * them when an executor opens its consumer: a typo fails the query's definition, named. Class
   * and password properties are left to Kafka (classes may load only where the consumer runs);
   * unknown names pass, as Kafka and Spark let them (plug-ins read their own).
   */
  private def checkConsumerProperties(consumer: Map[String, String]): Unit = {
    val declared = ConsumerConfig.configDef().configKeys()
    consumer.foreach { case (name, value) =>
      Option(declared.get(name)).filter(k => Checked.contains(k.`type`)).foreach { key =>
        val ok = Try(ConfigDef.parseType(name, value, key.`type`))
          .flatMap(parsed => Try(Option(key.validator).foreach(_.ensureValid(name, parsed))))
          .isSuccess
        if (!ok) {
          val values = Option(key.validator).map(v => s", valid values $v").getOrElse("")
          throw ConfigOption.invalid(
            "KafkaSource",
            Prefix + name,
            ConfigOption.Mask,
            s"what Kafka's consumer property $name takes: type ${key.`type`}$values")
        }
      }
    }
  }
  private val Checked = Set(
    ConfigDef.Type.INT,
    ConfigDef.Type.LONG,
    ConfigDef.Type.SHORT,
    ConfigDef.Type.DOUBLE,
    ConfigDef.Type.BOOLEAN,
    ConfigDef.Type.STRING)

  private def parseAssign(text: String): Option[Map[String, Set[Int]]] = Try {
    import scala.jdk.CollectionConverters._
    val root = OffsetsInitializer.mapper.readTree(text)
    require(root.isObject && root.size > 0)
    root
      .properties()
      .asScala
      .map { topic =>
        require(topic.getValue.isArray && topic.getValue.size > 0)
        topic.getKey -> topic.getValue
          .elements()
          .asScala
          .map { p =>
            require(p.canConvertToInt && p.asInt >= 0)
            p.asInt
          }
          .toSet
      }
      .toMap
  }.toOption

  private def offsetsSpec(s: String, allowLatest: Boolean): Option[String] =
    s.trim.toLowerCase match {
      case "earliest" => Some("earliest")
      case "latest" if allowLatest => Some("latest")
      case _ => OffsetsInitializer.parseJson(s).map(_ => s.trim)
    }

  private def initializer(spec: String): OffsetsInitializer = spec match {
    case "earliest" => OffsetsInitializer.Earliest
    case "latest" => OffsetsInitializer.Latest
    case json => OffsetsInitializer.Specific(OffsetsInitializer.parseJson(json).get)
  }

  def fromOptions(raw: Map[String, String]): KafkaConfig = {
    val (consumerRaw, own) = raw.partition(_._1.toLowerCase.startsWith(Prefix))
    own.keys.foreach { k =>
      SparkOnly.get(k.toLowerCase).foreach { why =>
        throw SluiceError.config(
          s"KafkaSource: option '$k' of Spark's Kafka source is not supported: $why.")
      }
    }
    // an unknown name lists the Kafka options, and the payload options only for parsed payloads
    val parsedPayload = own.exists { case (k, v) =>
      k.equalsIgnoreCase(Format.name) && !v.trim.equalsIgnoreCase("raw")
    }
    val o = new Options(
      own ++ consumerRaw.filter(_._1.equalsIgnoreCase(BootstrapServers.name)),
      all,
      "KafkaSource",
      listed = if (parsedPayload) documented ++ formatOptions else documented)
    // Kafka's property names are lower case, and a name in another case is ignored by Kafka
    // without a word: names are taken in any case, as Spark's Kafka source takes them (its
    // options are case-insensitive, so it passes them on lower-cased), and two that differ only
    // in case are refused, since one would be dropped
    consumerRaw.keys.groupBy(_.toLowerCase(Locale.ROOT)).values.find(_.size > 1).foreach { same =>
      throw SluiceError.config(
        s"KafkaSource: options ${same.toSeq.sorted.map(k => s"'$k'").mkString(" and ")} name " +
          "the same Kafka property (Kafka's names are lower case, and Sluice takes them in any " +
          "case); give it once.")
    }
    val consumer =
      consumerRaw.map { case (k, v) => k.substring(Prefix.length).toLowerCase(Locale.ROOT) -> v }
    consumerRaw.keys.foreach { k =>
      Reserved.get(k.substring(Prefix.length).toLowerCase(Locale.ROOT)).foreach { why =>
        throw SluiceError.config(s"KafkaSource: option '$k' is not supported: $why.")
      }
    }
    checkConsumerProperties(consumer)
    val servers = o.required(BootstrapServers)
    if (servers.trim.isEmpty)
      throw ConfigOption.invalid(
        "KafkaSource",
        BootstrapServers.name,
        servers,
        "host:port[,host:port...]")

    val subscription = Subscription.chosen(o, "KafkaSource") match {
      case Subscribe =>
        val topics = o.get(Subscribe).get
        val names = topics.split(",").map(_.trim).filter(_.nonEmpty).toSeq
        if (names.isEmpty)
          throw ConfigOption.invalid(
            "KafkaSource",
            Subscribe.name,
            topics,
            "one or more topic names")
        TopicSubscription.Topics(names)
      case SubscribePattern => TopicSubscription.TopicPattern(o.get(SubscribePattern).get)
      case _ => TopicSubscription.Assigned(o.get(Assign).get)
    }
    val groupId = (consumer.get("group.id"), o.get(GroupIdPrefix)) match {
      case (Some(_), Some(_)) =>
        throw SluiceError.config(
          s"KafkaSource: options 'kafka.group.id' and '${GroupIdPrefix.name}' exclude each other; give one.")
      case (Some(_), None) => Map.empty[String, String] // passed on as given
      case (None, prefix) =>
        prefix.map(p => "group.id" -> s"${p.trim}-${java.util.UUID.randomUUID()}").toMap
    }

    // the alternative that applies (Start, Stop: Spark's precedence)
    def positions(
        applying: Option[ConfigOption[_]],
        timestamp: ConfigOption[Long],
        byTimestamp: ConfigOption[String],
        offsets: ConfigOption[String]): Option[OffsetsInitializer] = applying.map {
      case `timestamp` => OffsetsInitializer.Timestamp(o.get(timestamp).get)
      case `byTimestamp` =>
        OffsetsInitializer.TimestampPerPartition(
          OffsetsInitializer.parseJson(o.get(byTimestamp).get).get)
      case _ => initializer(o.get(offsets).get)
    }
    val starting =
      positions(Start.applying(o), StartingTimestamp, StartingOffsetsByTimestamp, StartingOffsets)
        .getOrElse(initializer(o.get(StartingOffsets).get))
    val stopping =
      positions(Stop.applying(o), EndingTimestamp, EndingOffsetsByTimestamp, EndingOffsets)

    stopping.foreach(checkSubscribed(_, stoppingOption(o), subscription))

    val payload = o.get(Format).get.toLowerCase match {
      case "raw" =>
        formatOptions.find(o.contains).foreach { opt =>
          throw SluiceError.config(
            s"KafkaSource: option '${opt.name}' applies to parsed formats; set 'format' to json, csv or text.")
        }
        None
      case parsed =>
        Seq(IncludeHeaders, IncludeKey).find(o.contains).foreach { opt =>
          throw SluiceError.config(
            s"KafkaSource: option '${opt.name}' applies to format raw only.")
        }
        val names = PayloadFormat.all.map(_.name.toLowerCase).toSet
        val formatRaw = own.filter { case (k, _) => names.contains(k.toLowerCase) }
        val payload = PayloadFormat.fromOptions(
          new Options(formatRaw, PayloadFormat.all, "KafkaSource"),
          formatRaw,
          "KafkaSource")
        if (payload.hasHeader) {
          throw SluiceError.config(
            "KafkaSource: option 'header' means nothing for Kafka values; remove it.")
        }
        Some(payload)
    }

    KafkaConfig(
      consumer ++ groupId + ("bootstrap.servers" -> servers.trim),
      subscription,
      starting,
      stopping,
      o.get(FailOnDataLoss).get,
      o.get(IncludeHeaders).get,
      o.get(PartitionDiscoveryIntervalMs).get,
      o.get(PollTimeoutMs).get,
      payload,
      o.get(IncludeKey).get,
      startingOption(o),
      o.get(StartingOffsetsByTimestampStrategy).get.equalsIgnoreCase("latest"))
  }
}
