package sluice.testkit

import java.util.{Collections, Optional}
import java.util.concurrent.{ExecutionException, TimeUnit}

import scala.jdk.CollectionConverters._

import org.apache.kafka.clients.admin.{Admin, NewPartitionReassignment, TopicDescription}
import org.apache.kafka.common.{ElectionType, TopicPartition}
import org.apache.kafka.common.errors.ElectionNotNeededException

/**
 * Where the test cluster's partitions live and which node leads them: the look-ups and moves the
 * fault scenarios (`chaos/`) drive over [[KafkaClusterMain]]'s commands. Every move waits until
 * the cluster has carried it out, so that a scenario's next step meets the placement it asked for.
 */
final class ClusterPlacement(bootstrap: String, timeoutMs: Long) extends AutoCloseable {
  private lazy val admin: Admin = Admin.create(Broker.adminProps(bootstrap))

  private def get[T](f: org.apache.kafka.common.KafkaFuture[T]): T =
    try f.get(timeoutMs, TimeUnit.MILLISECONDS)
    catch { case e: ExecutionException if e.getCause != null => throw e.getCause }

  private def describe(topic: String): TopicDescription =
    get(admin.describeTopics(Collections.singletonList(topic)).allTopicNames()).get(topic)

  /** The node leading the partition now (`none` if it has none). */
  def leader(topic: String, partition: Int): String =
    describe(topic)
      .partitions()
      .asScala
      .find(_.partition() == partition)
      .getOrElse(throw new IllegalArgumentException(s"$topic has no partition $partition"))
      .leader() match {
      case null => "none"
      case l if l.isEmpty => "none"
      case l => l.id().toString
    }

  /**
   * Each partition's leader and replicas, `p0=1:1,2,3 p1=2:2,3,1` (leader, then the replicas in
   * order of preference; leader `none` while it has none).
   */
  def placement(topic: String): String =
    describe(topic)
      .partitions()
      .asScala
      .sortBy(_.partition())
      .map { p =>
        val leader =
          Option(p.leader()).filterNot(_.isEmpty).map(_.id().toString).getOrElse("none")
        s"p${p.partition()}=$leader:${p.replicas().asScala.map(_.id()).mkString(",")}"
      }
      .mkString(" ")

  /**
   * Moves the partition's replicas to `replicas` (`Admin.alterPartitionReassignments`), waits
   * until the move is complete and every new replica is in sync, then has the first of them lead
   * (a preferred election). Returns the leader.
   */
  def reassign(topic: String, partition: Int, replicas: Seq[Int]): String = {
    val tp = new TopicPartition(topic, partition)
    val target = replicas.map(Int.box).asJava
    get(
      admin
        .alterPartitionReassignments(
          Collections.singletonMap(tp, Optional.of(new NewPartitionReassignment(target))))
        .all())
    await(s"$tp to move to replicas ${replicas.mkString(",")}") {
      val ongoing =
        get(admin.listPartitionReassignments(Collections.singleton(tp)).reassignments())
      val p = describe(topic).partitions().asScala.find(_.partition() == partition).get
      !ongoing.containsKey(tp) &&
      p.replicas().asScala.map(_.id()) == replicas &&
      p.isr().asScala.map(_.id()).toSet == replicas.toSet
    }
    electPreferred(Seq(tp))
    leader(topic, partition)
  }

  /**
   * Has every partition of the topics led by its preferred replica again (a node restarted leads
   * nothing until then): what Kafka's automatic rebalance does after minutes, done now.
   */
  def electPreferredLeaders(topics: Seq[String]): Unit =
    electPreferred(topics.flatMap { t =>
      describe(t).partitions().asScala.map(p => new TopicPartition(t, p.partition()))
    })

  private def electPreferred(partitions: Seq[TopicPartition]): Unit = {
    await(s"preferred leaders of ${partitions.mkString(", ")}") {
      val results = get(
        admin.electLeaders(ElectionType.PREFERRED, partitions.toSet.asJava).partitions()).asScala
      // a preferred replica not yet in sync is refused this round; asked again until it is
      results.values.forall(r => !r.isPresent || r.get.isInstanceOf[ElectionNotNeededException])
    }
  }

  /**
   * Waits until every partition of every topic (internal ones too) has all its replicas in sync:
   * a rolling restart stops the next node only then, or `min.insync.replicas` refuses writes.
   */
  def awaitInSync(): Unit = await("every replica in sync") {
    val topics = get(
      admin
        .listTopics(new org.apache.kafka.clients.admin.ListTopicsOptions()
          .listInternal(true))
        .names())
    get(admin.describeTopics(topics).allTopicNames()).values().asScala.forall { d =>
      d.partitions().asScala.forall(p => p.isr().size() == p.replicas().size())
    }
  }

  private def await(what: String)(done: => Boolean): Unit = {
    val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs)
    while (!done) {
      if (System.nanoTime() > deadline)
        throw new IllegalStateException(s"timed out after $timeoutMs ms waiting for $what")
      Thread.sleep(100) // the cluster's metadata, which notifies no one
    }
  }

  override def close(): Unit = admin.close(java.time.Duration.ofSeconds(2))
}
