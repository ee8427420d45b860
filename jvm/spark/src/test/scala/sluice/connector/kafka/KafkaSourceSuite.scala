package sluice.connector.kafka

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.testkit.{KafkaSuiteBase, ProducedRecord, TransactionalProducer}

class KafkaSourceSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  private def produce(topic: String, partition: Int, from: Int, until: Int): Unit =
    kafka.produce(
      topic,
      (from until until).map(i =>
        ProducedRecord.text(
          key = Some(s"k$i"),
          value = Some(s"v$i"),
          partition = Some(partition))))

  private def source(topic: String, extra: (String, String)*): DataFrame =
    spark.readStream
      .format("sluice")
      .option("source", "kafka")
      .option("kafka.bootstrap.servers", kafka.bootstrapServers)
      .option("subscribe", topic)
      .option("startingOffsets", "earliest")
      .options(extra.toMap)
      .load()

  private def ids(table: String): Seq[(Int, Long)] =
    spark
      .table(table)
      .selectExpr("partition", "offset")
      .collect()
      .toSeq
      .map(r => (r.getInt(0), r.getLong(1)))

  test("a query stopped mid-partition and restarted reads every record exactly once") {
    val topic = "restart"
    kafka.createTopic(topic, 3)
    (0 until 3).foreach(p => produce(topic, p, 0, 3000))
    val out = tempDir("sink").toString
    val ckpt = tempDir("ckpt").toString
    def start(trigger: Trigger): StreamingQuery =
      source(topic, "maxRecordsPerTrigger" -> "1000").writeStream
        .format("parquet")
        .option("path", out)
        .option("checkpointLocation", ckpt)
        .trigger(trigger)
        .start()

    val first = start(Trigger.ProcessingTime(0))
    try
      eventually("three batches of the first run", first)(
        first.recentProgress.count(_.numInputRows > 0) >= 3)
    finally first.stop()
    (0 until 3).foreach(p => produce(topic, p, 3000, 4000))
    val second = start(Trigger.AvailableNow())
    awaitEnd(second)
    assert(second.exception.isEmpty, second.exception)
    val got = spark.read
      .parquet(out)
      .selectExpr("partition", "offset", "CAST(value AS STRING)")
      .collect()
      .map(r => (r.getInt(0), r.getLong(1), r.getString(2)))
      .toSeq
    val expected = for (p <- 0 until 3; o <- 0L until 4000L) yield (p, o, s"v$o")
    assert(got.sorted == expected.sorted)
  }

  test("a partition added while the query runs is read from its start") {
    val topic = "growing"
    kafka.createTopic(topic, 2)
    produce(topic, 0, 0, 50)
    produce(topic, 1, 0, 50)
    val q = source(topic).writeStream.format("memory").queryName("growing").start()
    try {
      processAllAvailable(q)
      assert(ids("growing").size == 100)
      kafka.addPartitions(topic, 3)
      produce(topic, 2, 0, 30)
      produce(topic, 0, 50, 60)
      eventually("the 40 records produced after the partition was added", q) {
        processAllAvailable(q)
        ids("growing").size >= 140
      }
      assert(ids("growing").size == 140)
      assert(ids("growing").count(_._1 == 2) == 30)
      assert(ids("growing").filter(_._1 == 2).map(_._2).sorted == (0L until 30L))
      assert(q.lastProgress.sources.head.metrics.asScala("splits") == "3")
    } finally q.stop()
  }

  test("a retention gap fails with topic, partition and offsets when failOnDataLoss is true") {
    val topic = "gap-fail"
    kafka.createTopic(topic, 1)
    produce(topic, 0, 0, 100)
    val ckpt = tempDir("ckpt").toString
    readFirstBatch(topic, ckpt, 10)
    kafka.deleteRecords(topic, 0, 50)
    val q = source(topic).writeStream
      .format("noop")
      .option("checkpointLocation", ckpt)
      .trigger(Trigger.AvailableNow())
      .start()
    val e = intercept[Exception](q.awaitTermination(120000))
    // [10, 100), or [10, 20) when the first run had planned its second batch before it stopped
    assert(e.getMessage.contains("cannot read offsets [10, "), e.getMessage)
    assert(e.getMessage.contains(s") of topic $topic partition 0"), e.getMessage)
    assert(e.getMessage.contains("the earliest offset still in Kafka is 50"))
    assert(e.getMessage.contains("failOnDataLoss=false"))
  }

  test("a retention gap is skipped and counted when failOnDataLoss is false") {
    val topic = "gap-skip"
    kafka.createTopic(topic, 1)
    produce(topic, 0, 0, 100)
    val ckpt = tempDir("ckpt").toString
    readFirstBatch(topic, ckpt, 10)
    kafka.deleteRecords(topic, 0, 50)
    val out = tempDir("sink").toString
    val q = source(topic, "failOnDataLoss" -> "false").writeStream
      .format("parquet")
      .option("path", out)
      .option("checkpointLocation", ckpt)
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q)
    assert(q.exception.isEmpty, q.exception)
    assert(
      spark.read
        .parquet(s"$out/*.parquet")
        .select("offset")
        .collect()
        .map(_.getLong(0))
        .sorted
        .toSeq == (50L until 100L))
    val metrics = q.recentProgress.filter(_.numInputRows > 0).last.sources.head.metrics.asScala
    assert(metrics("dataLossOffsets") == "40")
  }

  test("a deleted topic fails the query when failOnDataLoss is true") {
    val topic = "deleted"
    kafka.createTopic(topic, 1)
    produce(topic, 0, 0, 10)
    val ckpt = tempDir("ckpt").toString
    readFirstBatch(topic, ckpt, 5)
    kafka.deleteTopic(topic)
    val q = source(topic).writeStream
      .format("noop")
      .option("checkpointLocation", ckpt)
      .trigger(Trigger.AvailableNow())
      .start()
    val e = intercept[Exception](q.awaitTermination(120000))
    assert(e.getMessage.contains(s"partition $topic-0 is gone"), e.getMessage)
  }

  /** Reads `topic` to its end under AvailableNow into parquet at `out`; the query, ended. */
  private def readToEnd(df: DataFrame, ckpt: String, out: String): StreamingQuery = {
    val q = df.writeStream
      .format("parquet")
      .option("path", out)
      .option("checkpointLocation", ckpt)
      .trigger(Trigger.AvailableNow())
      .start()
    // a failed query ends too: its exception is for the caller to look at
    val ended =
      try q.awaitTermination(120000)
      catch { case _: org.apache.spark.sql.streaming.StreamingQueryException => true }
    assert(ended, "the query did not end")
    q
  }

  private def values(out: String): Seq[String] =
    spark.read
      .parquet(out)
      .selectExpr("CAST(value AS STRING)")
      .collect()
      .map(_.getString(0))
      .toSeq
      .sorted

  private def sparkKafka(topic: String, failOnDataLoss: Boolean): DataFrame =
    spark.readStream
      .format("kafka")
      .option("kafka.bootstrap.servers", kafka.bootstrapServers)
      .option("subscribe", topic)
      .option("startingOffsets", "earliest")
      .option("failOnDataLoss", failOnDataLoss.toString)
      .load()

  /** Reads 100 records of `topic`, re-creates it with `records` new ones, and reads on: Sluice, then Spark. */
  private def afterRecreation(
      name: String,
      records: Int,
      failOnDataLoss: Boolean): (StreamingQuery, String, StreamingQuery, String) = {
    def run(topic: String, df: String => DataFrame): (StreamingQuery, String) = {
      val (ckpt, out) = (tempDir("ckpt").toString, tempDir("sink").toString)
      assert(readToEnd(df(topic), ckpt, out).exception.isEmpty)
      kafka.deleteTopic(topic)
      kafka.createTopic(topic, 1)
      produce(topic, 0, 1000, 1000 + records)
      (readToEnd(df(topic), ckpt, out), out)
    }
    Seq(s"$name-sluice", s"$name-spark").foreach { t =>
      kafka.createTopic(t, 1); produce(t, 0, 0, 100)
    }
    val (ours, ourOut) =
      run(s"$name-sluice", t => source(t, "failOnDataLoss" -> failOnDataLoss.toString))
    val (theirs, theirOut) = run(s"$name-spark", t => sparkKafka(t, failOnDataLoss))
    (ours, ourOut, theirs, theirOut)
  }

  private def old = (0 until 100).map(i => s"v$i")
  private def recreated(n: Int) = (1000 until 1000 + n).map(i => s"v$i")

  test(
    "a topic re-created shorter than the offsets read fails, as Spark's source does; with failOnDataLoss=false it is read from its beginning and counted") {
    val (ours, _, theirs, _) = afterRecreation("recreated-short", 10, failOnDataLoss = true)
    val e = ours.exception.getOrElse(fail("the query did not fail")).getMessage
    assert(
      e.contains("topic recreated-short-sluice was deleted and re-created") && e.contains(
        "failOnDataLoss=false"),
      e)
    assert(theirs.exception.isDefined, "Spark's Kafka source fails here too")

    val (lenient, out, _, _) =
      afterRecreation("recreated-short-lenient", 10, failOnDataLoss = false)
    assert(lenient.exception.isEmpty, lenient.exception)
    assert(values(out) == (old ++ recreated(10)).sorted)
    assert(lenient.recentProgress.last.sources.head.metrics.get("partitionsReset") == "1")
    // nothing of the old topic was left unread: no loss is counted
    assert(
      Option(lenient.recentProgress.last.sources.head.metrics.get("dataLossOffsets"))
        .forall(_ == "0"))
  }

  test(
    "a topic re-created and grown past the offsets read: Spark reads on silently; Sluice sees the new topic id") {
    val (ours, _, theirs, theirOut) =
      afterRecreation("recreated-long", 150, failOnDataLoss = true)
    assert(
      ours.exception.exists(
        _.getMessage.contains("topic recreated-long-sluice was deleted and re-created")),
      ours.exception)
    // Spark's source takes offset 100 of the new topic for where it stopped in the old one
    assert(
      theirs.exception.isEmpty && values(theirOut) == (old ++ recreated(150).drop(100)).sorted)

    val (lenient, out, _, _) =
      afterRecreation("recreated-long-lenient", 150, failOnDataLoss = false)
    assert(lenient.exception.isEmpty, lenient.exception)
    assert(values(out) == (old ++ recreated(150)).sorted)
  }

  test(
    "a partition that ends below the offset read while the query runs: an error, or a new split over the new log, made once") {
    // the enumerator alone, as planning drives it, so that the moment the topic is gone in between does not race it
    Seq(true, false).foreach { failOnDataLoss =>
      val topic = s"shrunk-$failOnDataLoss"
      kafka.createTopic(topic, 1)
      produce(topic, 0, 0, 100)
      // no discovery while it runs: the topic's id is not looked at, only where its partition ends
      val source = KafkaSource
        .builder()
        .bootstrapServers(kafka.bootstrapServers)
        .topics(topic)
        .option("failOnDataLoss", failOnDataLoss.toString)
        .option("partitionDiscoveryIntervalMs", "3600000")
        .build()
      val enumerator = source.createEnumerator()
      try {
        val Seq(split) = enumerator.discoverSplits()
        // read up to offset 100, as the runtime hands it
        val read = Seq(split -> 100L)
        assert(enumerator.availablePositions(read) == Map(split.splitId -> 100L))
        kafka.deleteTopic(topic)
        kafka.createTopic(topic, 1)
        produce(topic, 0, 1000, 1010)
        if (failOnDataLoss) {
          val e =
            intercept[IllegalStateException](enumerator.availablePositions(read)).getMessage
          assert(
            e.contains(s"topic $topic partition 0 now ends at offset 10, below offset 100") &&
              e.contains("failOnDataLoss=false"),
            e)
        } else {
          enumerator.availablePositions(read)
          // the next planning looks at the topic's id first: a re-created topic is read from its
          // beginning, once (a log merely truncated would go on from its new end, as in Spark's source)
          val Seq(next) = enumerator.discoverSplits()
          assert((next.splitId, next.startPosition, next.incarnation) == (s"$topic-0@1", 0L, 1))
          assert(enumerator.discoverSplits().isEmpty, "reset twice")
          assert(enumerator.isFinished(split, 100L) && !enumerator.isFinished(next, 0L))
          assert(enumerator.metrics("partitionsReset") == "1")
          // Spark's per-partition figures count the partition once, by its current split
          assert(
            enumerator.backlogMetrics(Seq(split -> 0L, next -> 10L)) == Map(
              "minOffsetsBehindLatest" -> "10",
              "maxOffsetsBehindLatest" -> "10",
              "avgOffsetsBehindLatest" -> "10.0"))
          // the replacement survives a restart from the enumerator's state
          val restored = source.restoreEnumerator(enumerator.snapshotState())
          try
            assert(restored.isFinished(split, 100L) && restored.metrics("partitionsReset") == "1")
          finally restored.close()
        }
      } finally enumerator.close()
    }
  }

  test(
    "a large aborted transaction under read_committed is skipped, not taken for unreachable brokers") {
    val topic = "aborted"
    kafka.createTopic(topic, 1)
    val props = new java.util.Properties()
    props.put("bootstrap.servers", kafka.bootstrapServers)
    props.put("transactional.id", "sluice-aborted")
    props.put("batch.size", "1024") // many small record batches: skipping them takes many fetches
    val serializer = new org.apache.kafka.common.serialization.ByteArraySerializer
    val producer = new org.apache.kafka.clients.producer.KafkaProducer[Array[Byte], Array[Byte]](
      props,
      serializer,
      serializer)
    try {
      producer.initTransactions()
      producer.beginTransaction()
      val payload = Array.fill[Byte](100)('x')
      (0 until 20000).foreach(_ =>
        producer.send(
          new org.apache.kafka.clients.producer.ProducerRecord(topic, 0, null, payload)))
      producer.flush() // written, then aborted (an abort drops what is still unsent)
      producer.abortTransaction()
    } finally producer.close()
    produce(topic, 0, 0, 10)
    assert(kafka.endOffsets(topic)(0) > 20000)
    // each poll skips one aborted batch and returns nothing, for far longer than the poll timeout
    // (~4 s on a quiet machine); 300 ms failed once under make test's load (a gap between two
    // polls' positions that long), so the timeout is 1 s, still a fraction of the skipping
    val q = source(
      topic,
      "kafka.isolation.level" -> "read_committed",
      "kafkaConsumer.pollTimeoutMs" -> "1000",
      "kafka.max.partition.fetch.bytes" -> "1024",
      "kafka.fetch.max.bytes" -> "1024").writeStream
      .format("memory")
      .queryName("aborted")
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    assert(q.awaitTermination(120000), "the query did not end")
    q.exception.foreach(e => throw e)
    val values = spark
      .table("aborted")
      .selectExpr("CAST(value AS STRING)")
      .collect()
      .map(_.getString(0))
      .toSeq
    assert(values.sorted == (0 until 10).map(i => s"v$i").sorted)
  }

  test(
    "under read_committed: committed transactions are read, aborted ones not; an AvailableNow run, a batch read (as Spark's) and a hybrid's switch end before an open one") {
    val topic = "transactions"
    kafka.createTopic(topic, 1)
    val ckpt = tempDir("ckpt").toString
    val out = tempDir("sink").toString
    def readAll(): Seq[String] = {
      val q = source(topic, "kafka.isolation.level" -> "read_committed").writeStream
        .format("parquet")
        .option("path", out)
        .option("checkpointLocation", ckpt)
        .trigger(Trigger.AvailableNow())
        .start()
      // an end taken past the open transaction would wait on records no reader may see yet
      assert(q.awaitTermination(120000), "the query did not end")
      q.exception.foreach(e => throw e)
      spark.read
        .parquet(out)
        .selectExpr("CAST(value AS STRING)")
        .collect()
        .map(_.getString(0))
        .toSeq
    }
    val producer = new TransactionalProducer(kafka.bootstrapServers, "sluice-transactions")
    try {
      producer.write(topic, 0, (0 until 5).map(i => s"c$i"))
      producer.commit()
      producer.write(topic, 0, (0 until 5).map(i => s"a$i"))
      producer.abort()
      producer.write(topic, 0, (5 until 10).map(i => s"c$i"))
      producer.commit()
      producer.write(topic, 0, (10 until 15).map(i => s"c$i")) // left open
      val committed = (0 until 10).map(i => s"c$i").sorted
      assert(readAll().sorted == committed)
      // a batch read to 'latest' ends where a read_committed consumer may read (the last stable
      // offset), as Spark's Kafka source's does: not a hang on records no reader may see yet
      def batch(format: String): Seq[String] = {
        val reader = spark.read.format(format)
        val df = (if (format == "sluice") reader.option("source", "kafka") else reader)
          .option("kafka.bootstrap.servers", kafka.bootstrapServers)
          .option("kafka.isolation.level", "read_committed")
          .option("subscribe", topic)
          .option("startingOffsets", "earliest")
          .option("endingOffsets", "latest")
          .load()
        val read = scala.concurrent.Future(
          df.selectExpr("CAST(value AS STRING)").collect().map(_.getString(0)).toSeq)(
          scala.concurrent.ExecutionContext.global)
        scala.concurrent.Await.result(read, scala.concurrent.duration.Duration(120, "s"))
      }
      assert(batch("kafka").sorted == committed, "Spark's Kafka source")
      assert(batch("sluice").sorted == committed)
      // a hybrid switching from files to the topic while the transaction is open: the committed
      // records now, the open transaction's once it commits, aborted ones never
      val files = tempDir("history")
      java.nio.file.Files.write(files.resolve("h.txt"), "h0\nh1\nh2\n".getBytes("UTF-8"))
      val hybrid = sluice.hybrid.HybridSource
        .builder(
          sluice.connector.file.FileSource.builder().path(files.toString).format("text").build())
        .addSource(
          KafkaSource
            .builder()
            .bootstrapServers(kafka.bootstrapServers)
            .topics(topic)
            .startingOffsets(OffsetsInitializer.earliest())
            .property("isolation.level", "read_committed")
            .option("format", "text")
            .build())
        .build()
      val live = Sluice
        .fromSource(spark, hybrid, null, "history+transactions")
        .writeStream
        .format("memory")
        .queryName("transactions_hybrid")
        .option("checkpointLocation", tempDir("hybrid-ckpt").toString)
        .trigger(Trigger.ProcessingTime("100 milliseconds"))
        .start()
      def hybridRows() = spark.table("transactions_hybrid").collect().map(_.getString(0)).toSeq
      val history = Seq("h0", "h1", "h2")
      try {
        eventually("the switch and the committed records", live)(hybridRows().size >= 13)
        processAllAvailable(live)
        assert(hybridRows().sorted == (history ++ committed).sorted)
        producer.commit()
        producer.write(topic, 0, (5 until 10).map(i => s"a$i"))
        producer.abort()
        eventually("the transaction committed after the switch", live)(hybridRows().size >= 18)
        processAllAvailable(live)
        assert(hybridRows().sorted == (history ++ (0 until 15).map(i => s"c$i")).sorted)
      } finally live.stop()
      // restarted from its checkpoint: the transaction committed since is added, once
      assert(readAll().sorted == (0 until 15).map(i => s"c$i").sorted)
    } finally producer.close()
  }

  test("bad configuration fails when the source is built, naming the option") {
    def error(b: KafkaSource.Builder) = intercept[IllegalArgumentException](b.build()).getMessage
    val base = KafkaSource.builder().bootstrapServers("127.0.0.1:1")
    assert(error(base).contains("give what to read with option 'subscribe'"))
    assert(error(base.topics("a").topicPattern("b.*")).contains("exclude each other"))
    assert(
      error(base.topics("a").option("startingOffsets", "newest")) ==
        "KafkaSource: invalid value 'newest' for option 'startingOffsets'; allowed: earliest, latest, or a JSON object of offsets per topic and partition.")
    assert(
      error(base.topics("a").property("enable.auto.commit", "true"))
        .contains("'kafka.enable.auto.commit' is not supported"))
    assert(
      error(KafkaSource.builder().topics("a"))
        .contains("missing required option 'kafka.bootstrap.servers'"))
    assert(
      error(base.topics("a").option("failOnDataLos", "false"))
        .contains("unknown option 'failOnDataLos'"))
  }

  private def readFirstBatch(topic: String, ckpt: String, records: Int): Unit = {
    val q = source(topic, "maxRecordsPerTrigger" -> records.toString).writeStream
      .format("noop")
      .option("checkpointLocation", ckpt)
      .trigger(Trigger.ProcessingTime(0))
      .start()
    try eventually(s"a first batch of $topic", q)(q.recentProgress.exists(_.numInputRows > 0))
    finally q.stop()
    assert(q.recentProgress.filter(_.numInputRows > 0).head.numInputRows == records)
  }

  test("Sluice.fromSource reads a KafkaSource built in Scala") {
    val topic = "builder"
    kafka.createTopic(topic, 2)
    produce(topic, 0, 0, 5)
    produce(topic, 1, 0, 7)
    val src = KafkaSource
      .builder()
      .bootstrapServers(kafka.bootstrapServers)
      .topics(topic)
      .startingOffsets(OffsetsInitializer.offsets(Map(KafkaSource.partition(topic, 0) -> 2L)))
      .stoppingOffsets(OffsetsInitializer.latest())
      .build()
    val q = Sluice
      .fromSource(spark, src)
      .writeStream
      .format("memory")
      .queryName("from_builder")
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q)
    assert(q.exception.isEmpty, q.exception)
    assert(ids("from_builder").sorted == (2L until 5L).map(0 -> _) ++ (0L until 7L).map(1 -> _))
  }

  test("a reader whose partition is deleted under it fails clearly, or skips and counts") {
    val context = sluice.api.ReaderContext()
    def readerOn(topic: String, failOnDataLoss: Boolean) = {
      val source = KafkaSource
        .builder()
        .bootstrapServers(kafka.bootstrapServers)
        .topics(topic)
        .failOnDataLoss(failOnDataLoss)
        .build()
      val reader = source.createReader(context)
      reader.handleSplitsChanges(
        Seq(sluice.api.SplitRange(KafkaPartitionSplit(topic, 0, 0, None), 0L, 10L)))
      reader
    }
    Seq("vanishing-a", "vanishing-b").foreach { t =>
      kafka.createTopic(t, 1)
      produce(t, 0, 0, 10)
      kafka.deleteTopic(t)
    }
    val failing = readerOn("vanishing-a", failOnDataLoss = true)
    var failure: Option[IllegalStateException] = None
    eventually("the reader of the deleted partition vanishing-a-0 to fail", timeoutMs = 60000) {
      try failing.fetch()
      catch { case e: IllegalStateException => failure = Some(e) }
      failure.nonEmpty
    }
    val e = failure.get
    assert(e.getMessage.contains("partition vanishing-a-0 is gone"), e.getMessage)
    failing.close()

    val skipping = readerOn("vanishing-b", failOnDataLoss = false)
    var finished = Set.empty[String]
    eventually(
      "the reader of the deleted partition vanishing-b-0 to finish it",
      timeoutMs = 60000) {
      finished = skipping.fetch().finishedSplits
      finished.nonEmpty
    }
    assert(finished == Set("vanishing-b-0"))
    assert(context.countersOf("vanishing-b-0") == Map("dataLossOffsets" -> 10L))
    skipping.close()
  }

  test(
    "start offsets are resolved once: a restarted query replays batch 0 from the same 'latest'") {
    val topic = "latest-once"
    kafka.createTopic(topic, 1)
    produce(topic, 0, 0, 10)
    val options = Map(
      "source" -> "kafka",
      "kafka.bootstrap.servers" -> kafka.bootstrapServers,
      "subscribe" -> topic)
    val (streamOptions, source) = sluice.spark.StreamOptions.parse(options)
    val metadata = tempDir("source-metadata").toString
    def stream() = new sluice.spark.SluiceMicroBatchStream(source, streamOptions, metadata, spark)
    val first = stream()
    val initial = sluice.spark.SluiceOffset.of(first.initialOffset())
    assert(initial.splits.map(_.position) == Seq(10L))
    assert(
      first.initialOffset() eq first.initialOffset(),
      "Spark asks twice; the answer must not change")
    first.stop()
    produce(topic, 0, 10, 15) // 'latest' has moved on
    val restarted = stream()
    assert(sluice.spark.SluiceOffset.of(restarted.initialOffset()) == initial)
    restarted.stop()
  }
  test(
    "a reader that read its range to the end returns its consumer to the pool for the next task") {
    val topic = "pooled"
    kafka.createTopic(topic, 1)
    produce(topic, 0, 0, 20)
    // a consumer property of this test only: the pool's entry for it is this test's alone
    val source = KafkaSource
      .builder()
      .bootstrapServers(kafka.bootstrapServers)
      .topics(topic)
      .property("client.rack", "pool-reuse-test")
      .build()
    // the pool's key for readers: the user's properties with the readers' fetch size
    val properties = KafkaConsumerPool.readerProperties(source.config.consumerProperties)
    def readRange(from: Long, until: Long): Seq[Long] = {
      val reader = source.createReader(sluice.api.ReaderContext())
      reader.handleSplitsChanges(
        Seq(sluice.api.SplitRange(KafkaPartitionSplit(topic, 0, 0, None), from, until)))
      val offsets = scala.collection.mutable.ArrayBuffer[Long]()
      var finished = Set.empty[String]
      eventually(s"the reader to finish $topic-0 at offset $until", timeoutMs = 60000) {
        val records = reader.fetch()
        finished = records.finishedSplits
        while (records.nextSplit() != null)
          while (records.nextRecord()) offsets += records.position - 1
        finished.nonEmpty
      }
      assert(finished == Set(s"$topic-0"))
      reader.close()
      offsets.toSeq
    }
    assert(readRange(0, 10) == (0L until 10L))
    assert(
      KafkaConsumerPool.idleCount(properties) == 1,
      "the consumer of a finished range is kept")
    assert(readRange(10, 20) == (10L until 20L))
    assert(KafkaConsumerPool.idleCount(properties) == 1, "the second reader reused it")
  }
}
