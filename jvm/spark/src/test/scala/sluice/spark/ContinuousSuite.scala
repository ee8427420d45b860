package sluice.spark

import java.nio.file.Files

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, Slow, SparkSuiteBase}
import sluice.connector.file.FileSource
import sluice.connector.kafka.{KafkaSource, OffsetsInitializer}
import sluice.eventtime.WatermarkStrategy
import sluice.hybrid.HybridSource
import sluice.testkit.{KafkaSuiteBase, ProducedRecord, TransactionalProducer}

/**
 * Continuous processing (`Trigger.Continuous`) against the real broker: tasks that read until the
 * query stops, epochs whose offsets come from where the readers got, and a restart of the tasks
 * when the set of splits changes.
 */
class ContinuousSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  private def kafkaSource(topic: String): DataFrame =
    Sluice.fromSource(
      spark,
      KafkaSource
        .builder()
        .bootstrapServers(kafka.bootstrapServers)
        .topics(topic)
        .startingOffsets(OffsetsInitializer.earliest())
        .option("partitionDiscoveryIntervalMs", "500")
        .build())

  private def startContinuous(df: DataFrame, sink: String, checkpoint: String): StreamingQuery =
    df.writeStream
      .foreach(RealTimeSink.writer(sink))
      .option("checkpointLocation", checkpoint)
      .trigger(Trigger.Continuous("1 second"))
      .start()

  private def produce(topic: String, partitions: Int, from: Int, until: Int): Unit =
    kafka.produce(
      topic,
      (from until until).map(i =>
        ProducedRecord.text(
          key = Some(s"k$i"),
          value = Some(s"v$i"),
          partition = Some(i % partitions))))

  private def values(rows: Seq[Row]): Seq[String] =
    rows.map(r => new String(r.getAs[Array[Byte]]("value"), "UTF-8"))

  test(
    "Kafka in continuous mode: every record, a partition added while running, nothing lost across a restart",
    Slow) {
    val topic = "cont-rows"
    kafka.createTopic(topic, 2)
    produce(topic, 2, 0, 100)
    val ckpt = tempDir("ckpt").toString
    val first = startContinuous(kafkaSource(topic), "cont", ckpt)
    try {
      RealTimeSink.await("cont", "the first 100 records", first)(_.size >= 100)
      kafka.addPartitions(topic, 3)
      produce(topic, 3, 100, 160) // a third of them in the new partition
      val got = RealTimeSink.await("cont", "the records of the new partition too", first)(rows =>
        values(rows).toSet.size >= 160)
      assert(values(got).toSet == (0 until 160).map(i => s"v$i").toSet)
      // let epochs commit what was read, then stop
      def committed = Option(new java.io.File(ckpt, "commits").listFiles())
        .map(_.count(_.getName.forall(_.isDigit)))
        .getOrElse(0)
      val before = committed
      eventually(
        s"two more epochs committed after epoch ${before - 1}",
        first,
        timeoutMs = 30000)(committed >= before + 2)
    } finally first.stop()
    produce(topic, 3, 160, 200)
    val second = startContinuous(kafkaSource(topic), "cont", ckpt)
    try {
      val got = RealTimeSink.await("cont", "the records produced while stopped", second)(rows =>
        values(rows).toSet.size >= 200)
      assert(values(got).toSet == (0 until 200).map(i => s"v$i").toSet, "nothing lost")
    } finally second.stop()
    // the same rows as a micro-batch read of the topic, column for column (duplicates aside); after
    // the continuous query stopped, whose tasks held every task slot
    val micro = kafkaSource(topic).writeStream
      .format("memory")
      .queryName("cont_micro")
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(micro)
    def key(r: Row) = (
      r.getAs[Int]("partition"),
      r.getAs[Long]("offset"),
      values(Seq(r)).head,
      r.getAs[java.sql.Timestamp]("timestamp"),
      r.getAs[Int]("timestampType"))
    val continuousRows =
      RealTimeSink.arrivals("cont").map(_.row).map(key).distinct.sortBy(k => (k._1, k._2))
    assert(
      continuousRows == spark
        .table("cont_micro")
        .collect()
        .toSeq
        .map(key)
        .sortBy(k => (k._1, k._2)))
  }

  test(
    "files in continuous mode: the micro-batch rows; a file added while running is read after a reconfiguration",
    Slow) {
    val dir = tempDir("cont-plain-files")
    Files.write(
      dir.resolve("a.csv"),
      (0 until 30).map(i => s"$i,name$i").mkString("\n").getBytes("UTF-8"))
    def files = Sluice.fromSource(
      spark,
      FileSource
        .builder()
        .path(dir.toString)
        .format("csv")
        .schema("id BIGINT, name STRING")
        .option("monitorIntervalMs", "200")
        .build())
    val q = startContinuous(files, "cont-files", tempDir("ckpt").toString)
    // distinct ids: the reconfiguration replays from the last committed epoch (at least once), so
    // 45 arrivals may come before the added file's last row
    def ids(rows: Seq[Row]) = rows.map(_.getAs[Long]("id")).distinct.size
    try {
      RealTimeSink.await("cont-files", "the first file", q)(ids(_) >= 30)
      Files.write(
        dir.resolve("b.csv"),
        (30 until 45).map(i => s"$i,name$i").mkString("\n").getBytes("UTF-8"))
      RealTimeSink.await("cont-files", "the file added while the query ran", q)(ids(_) >= 45)
    } finally q.stop()
    val micro = files.writeStream
      .format("memory")
      .queryName("cont_files_micro")
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(micro)
    def key(r: Row) = (
      r.getAs[Long]("id"),
      r.getAs[String]("name"),
      r.getAs[String]("_split"),
      r.getAs[Long]("_position"))
    // at least once: the reconfiguration restarts the tasks from the last committed epoch
    val continuousRows = RealTimeSink.arrivals("cont-files").map(a => key(a.row)).distinct
    assert(
      continuousRows.sorted == spark.table("cont_files_micro").collect().toSeq.map(key).sorted)
  }

  test(
    "a files-then-Kafka hybrid in continuous mode switches by restarting its tasks: at least once, duplicates only of the re-read tail",
    Slow) {
    val dir = tempDir("cont-files")
    Files.write(
      dir.resolve("a.json"),
      (0 until 40).map(i => s"""{"id":$i}""").mkString("\n").getBytes("UTF-8"))
    val topic = "cont-tail"
    kafka.createTopic(topic, 2)
    kafka.produce(
      topic,
      (100 until 130).map(i =>
        ProducedRecord.text(value = Some(s"""{"id":$i}"""), partition = Some(i % 2))))
    val files = FileSource.builder().path(dir.toString).format("json").schema("id BIGINT").build()
    val tail = KafkaSource
      .builder()
      .bootstrapServers(kafka.bootstrapServers)
      .topics(topic)
      .startingOffsets(OffsetsInitializer.earliest())
      .option("format", "json")
      .option("schema", "id BIGINT")
      .build()
    val q = startContinuous(
      Sluice.fromSource(spark, HybridSource.builder(files).addSource(tail).build()).select("id"),
      "cont-hybrid",
      tempDir("ckpt").toString)
    try {
      // at least once, no gap: every id, however many came twice
      val got = RealTimeSink.await("cont-hybrid", "the file rows, then the Kafka rows", q)(
        _.map(_.getLong(0)).distinct.size >= 70)
      val counts = got.groupBy(_.getLong(0)).map { case (id, rows) => id -> rows.size }
      assert(counts.keySet == ((0L until 40L) ++ (100L until 130L)).toSet, counts)
      // The switch restarts the tasks from the last epoch's offset, so the files' rows read after
      // that epoch come again (once), and only those: a tail of the one file, none of Kafka's,
      // which is read only after the restart.
      val twice = counts.filter(_._2 > 1).keys.toSeq.sorted
      assert(counts.values.max <= 2, s"a row came more than twice: $counts")
      assert(
        twice.isEmpty || twice == (twice.head until 40L),
        s"rows that came twice are not a tail of the file's rows: $twice")
    } finally q.stop()
  }

  test(
    "continuous alignment: a partition two hours ahead is held until the lagging one turns idle, then read in full",
    Slow) {
    val topic = "cont-aligned"
    val base = 1700000000000L
    kafka.createTopic(topic, 2)
    def records(partition: Int, start: Long) = (0 until 100).map(i =>
      ProducedRecord.text(
        value = Some(s"p$partition-$i"),
        partition = Some(partition),
        timestamp = Some(start + i * 5000L)))
    // partition 0 ends eight minutes after `base`, far behind partition 1 (1-minute drift)
    kafka.produce(topic, records(1, base + 7200000L) ++ records(0, base))
    val idleMs = 2000L
    val strategy = WatermarkStrategy
      .forMonotonousTimestamps()
      .withIdleness(java.time.Duration.ofMillis(idleMs))
      .withWatermarkAlignment(
        "cont",
        java.time.Duration.ofMinutes(1),
        java.time.Duration.ofMillis(100))
    val source = KafkaSource
      .builder()
      .bootstrapServers(kafka.bootstrapServers)
      .topics(topic)
      .startingOffsets(OffsetsInitializer.earliest())
      .option("kafka.max.poll.records", "10")
      .build()
    val q = startContinuous(
      Sluice
        .fromSource(spark, source, strategy, topic)
        .selectExpr("CAST(value AS STRING) AS value", "partition"),
      "cont-aligned",
      tempDir("ckpt").toString)
    try {
      RealTimeSink.await("cont-aligned", "both partitions in full", q)(_.size >= 200)
      val arrivals = RealTimeSink.arrivals("cont-aligned")
      assert(arrivals.map(_.row.getString(0)).sorted ==
        (records(0, base) ++ records(1, base)).map(r => new String(r.value.get, "UTF-8")).sorted)
      // held: what a few polls let through before the first alignment update may pass; the rest
      // comes only once partition 0, read to its end, turned idle (idleMs after its last record)
      val lastLagging = arrivals.filter(_.row.getInt(1) == 0).map(_.atMs).max
      val early = arrivals.count(a => a.row.getInt(1) == 1 && a.atMs < lastLagging + idleMs / 2)
      assert(
        early <= 50,
        s"$early records of the partition ahead came before the lagging one turned idle")
    } finally q.stop()
  }

  test(
    "under read_committed in continuous mode: committed transactions arrive once, aborted ones never, an open one when it commits, and epochs go on meanwhile",
    Slow) {
    val topic = "cont-transactions"
    kafka.createTopic(topic, 1)
    val source = Sluice.fromSource(
      spark,
      KafkaSource
        .builder()
        .bootstrapServers(kafka.bootstrapServers)
        .topics(topic)
        .startingOffsets(OffsetsInitializer.earliest())
        .option("kafka.isolation.level", "read_committed")
        .build())
    def committed(until: Int) = (0 until until).map(i => s"c$i").sorted
    def arrived = values(RealTimeSink.arrivals(topic).map(_.row))
    val ckpt = tempDir("ckpt").toString
    def epochsCommitted = Option(new java.io.File(ckpt, "commits").listFiles())
      .map(_.count(_.getName.forall(_.isDigit)))
      .getOrElse(0)
    val producer = new TransactionalProducer(kafka.bootstrapServers, "sluice-cont-transactions")
    try {
      producer.write(topic, 0, (0 until 5).map(i => s"c$i"))
      producer.commit()
      producer.write(topic, 0, (0 until 5).map(i => s"a$i"))
      producer.abort()
      producer.write(topic, 0, (5 until 10).map(i => s"c$i"))
      producer.commit()
      producer.write(topic, 0, (10 until 15).map(i => s"c$i")) // left open
      val q = startContinuous(source, topic, ckpt)
      try {
        RealTimeSink.await(topic, "the committed transactions", q)(_.size >= 10)
        // a reader stuck before the open transaction would stall the epochs
        val before = epochsCommitted
        eventually("two more epochs committed while the transaction is open", q) {
          epochsCommitted >= before + 2
        }
        assert(arrived.sorted == committed(10))
        producer.commit()
        RealTimeSink.await(topic, "the transaction committed while the query ran", q)(
          _.size >= 15)
        producer.write(topic, 0, (5 until 10).map(i => s"a$i"))
        producer.abort()
        // a transaction committed after the aborted one: the reader got past the aborted records
        producer.write(topic, 0, (15 until 20).map(i => s"c$i"))
        producer.commit()
        RealTimeSink.await(topic, "the transaction after an aborted one", q)(_.size >= 20)
        assert(arrived.sorted == committed(20), "each committed record once, no aborted one")
      } finally q.stop()
    } finally producer.close()
  }
}
