package sluice.connector.kafka

import org.scalatest.funsuite.AnyFunSuite

/**
 * The schedule of the attempts of an offset look-up (`KafkaAdminLookups.offsetInfos`), without a
 * broker; `BrokerFailoverSuite` shows why attempts are cut at all (a SIGKILLed leader).
 */
class KafkaAdminLookupsSuite extends AnyFunSuite {

  test(
    "offset look-ups: attempts of 10 s, 20 s, then the rest; never below the user's time-out") {
    import KafkaAdminLookups.{attemptMs, offsetsLimitMs}
    // the default: 60 s in all, so a dead leader is looked up anew after 10 s, then after 20 s
    val limit = offsetsLimitMs(None)
    assert(limit == 60000L)
    def schedule(user: Option[Long], limit: Long): Seq[Long] = {
      // each attempt timing out after all the time it was given
      Iterator
        .iterate((0, limit, Seq.empty[Long])) { case (i, left, done) =>
          val ms = attemptMs(i, left, user)
          (i + 1, left - ms, done :+ ms)
        }
        .dropWhile(_._2 > 0)
        .next()
        ._3
    }
    assert(schedule(None, limit) == Seq(10000L, 20000L, 30000L))
    // a user allowing 30 s a request gets it from the first attempt; 45 s, once, then the rest
    assert(schedule(Some(30000L), offsetsLimitMs(Some(30000L))) == Seq(30000L, 30000L))
    assert(schedule(Some(45000L), offsetsLimitMs(Some(45000L))) == Seq(45000L, 15000L))
    // a user's longer time-out makes the whole look-up longer too
    assert(offsetsLimitMs(Some(120000L)) == 120000L)
    assert(schedule(Some(120000L), 120000L) == Seq(120000L))
    // a little time left: that, never 0
    assert(attemptMs(0, 3000L, None) == 3000L)
    assert(attemptMs(5, 0L, None) == 1L)
  }

  test(
    "no broker answering: the partitions' look-up names kafka.bootstrap.servers and its value") {
    // a port nothing listens on: the Admin client's own time-out ("Timed out waiting for a node
    // assignment") ends the call; the message must say where the brokers were looked for
    val port = {
      val socket = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress)
      try socket.getLocalPort
      finally socket.close()
    }
    val config = KafkaConfig.fromOptions(
      Map(
        "kafka.bootstrap.servers" -> s"127.0.0.1:$port",
        "subscribe" -> "events",
        "kafka.default.api.timeout.ms" -> "1500",
        "kafka.request.timeout.ms" -> "1000"))
    val lookups = new KafkaAdminLookups(config)
    val message =
      try intercept[sluice.errors.SluiceRuntimeException](lookups.partitions()).getMessage
      finally lookups.close()
    Seq(
      "could not list topics and partitions",
      "Timed out",
      s"kafka.bootstrap.servers=127.0.0.1:$port",
      "reachable").foreach(word => assert(message.contains(word), s"'$word' not in: $message"))
  }
}
