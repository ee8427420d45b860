package sluice.hybrid

import java.util.concurrent.atomic.AtomicInteger

import org.scalatest.funsuite.AnyFunSuite

import sluice.api.{RetentionCheck, RetentionWatch}

/** The guard's decisions, with a scripted watch: when it checks, what fails a query and what never does. */
class RetentionGuardSuite extends AnyFunSuite {

  private final class Scripted(answer: () => RetentionCheck) extends RetentionWatch {
    val checks = new AtomicInteger()
    @volatile var closed = false
    override def check(startAtTimestamp: Option[Long], nowMs: Long): RetentionCheck = {
      checks.incrementAndGet()
      answer()
    }
    override def close(): Unit = closed = true
  }

  private val Known = PlannedStart(Some(1000L), known = true, "at 1000")
  private val LowerBound = PlannedStart(Some(1000L), known = false, "at least at 1000")

  /** Lets a check started in the background finish. */
  private def settle(guard: RetentionGuard): Unit = guard.awaitCheck()

  test(
    "an unreachable system never fails the query, and is asked again only after the interval") {
    var now = 0L
    val watch = new Scripted(() =>
      throw new IllegalStateException("KafkaSource: could not look up offsets within 60 s"))
    val guard = new RetentionGuard(
      1,
      "kafka",
      watch,
      intervalMs = 60000,
      warnBelowMs = 0,
      clock = () => now)
    try {
      (1 to 20).foreach { _ => guard.observe(Some(Known)); settle(guard) }
      assert(watch.checks.get == 1) // every 60 s at most, whatever the batch rate
      assert(guard.metrics.isEmpty)
      now += 60000
      guard.observe(Some(Known)); settle(guard)
      assert(watch.checks.get == 2)
    } finally guard.close()
    assert(watch.closed)
  }

  test("records found gone fail the next planning, for a known start only") {
    val gone = RetentionCheck(Some(-5000L), Some("the records it needs are gone: t-0 ..."))
    val lowerBound = new RetentionGuard(1, "kafka", new Scripted(() => gone), 0, 0)
    try {
      lowerBound.observe(Some(LowerBound)); settle(lowerBound)
      lowerBound.observe(Some(LowerBound)) // the end may still move past the loss: no failure
      assert(lowerBound.metrics(HybridMetrics.RetentionHeadroomMs) == "-5000")
    } finally lowerBound.close()

    val known = new RetentionGuard(1, "kafka", new Scripted(() => gone), 0, 0)
    try {
      known.observe(Some(Known)); settle(known)
      val e = intercept[IllegalStateException](known.observe(Some(Known)))
      assert(
        e.getMessage == "HybridSource: source 1 (kafka) will start at 1000, but the records it needs are gone: " +
          "t-0 ... The query stops now, before the switch, rather than skip those records after it. " +
          "(Checked every hybrid.retentionCheckIntervalMs = 0 ms.)")
    } finally known.close()
  }

  test(
    "a partial check (retention.ms refused) still fails on records found gone, and is no failed check") {
    val partial = Some("no DESCRIBE_CONFIGS on t: no headroom")
    // nothing found gone: the query goes on, with no headroom but the check counted as made
    val fine = new RetentionGuard(
      1,
      "kafka",
      new Scripted(() => RetentionCheck(None, None, unchecked = partial)),
      0,
      0)
    try {
      fine.observe(Some(Known)); settle(fine)
      fine.observe(Some(Known))
      assert(!fine.metrics.contains(HybridMetrics.RetentionHeadroomMs))
      assert(fine.metrics.contains(HybridMetrics.RetentionCheckedAtMs))
    } finally fine.close()
    // records found gone from the offsets alone: failOnDataLoss=true stops the query as before
    val gone = new RetentionGuard(
      1,
      "kafka",
      new Scripted(() =>
        RetentionCheck(
          None,
          Some("the records it needs are gone: t-0 ..."),
          unchecked = partial)),
      0,
      0)
    try {
      gone.observe(Some(Known)); settle(gone)
      val e = intercept[IllegalStateException](gone.observe(Some(Known)))
      assert(e.getMessage.contains("the records it needs are gone: t-0"))
    } finally gone.close()
  }

  test(
    "a loss the source tolerates (failOnDataLoss=false) never fails the query, and shows in the metrics") {
    val gone = RetentionCheck(
      Some(-5000L),
      Some("the records it needs are gone: t-0 ..."),
      tolerated = true)
    val guard = new RetentionGuard(1, "kafka", new Scripted(() => gone), 0, 0)
    try {
      guard.observe(Some(Known)); settle(guard)
      guard.observe(Some(Known))
      guard.confirmBeforeSwitch(Some(Known))
      assert(
        guard.metrics(HybridMetrics.RetentionRecordsLost) == "true" && guard.metrics(
          HybridMetrics.RetentionHeadroomMs) == "-5000")
    } finally guard.close()
    val fatal =
      new RetentionGuard(1, "kafka", new Scripted(() => gone.copy(tolerated = false)), 0, 0)
    try {
      fatal.observe(Some(Known)); settle(fatal)
      intercept[IllegalStateException](fatal.observe(Some(Known)))
    } finally fatal.close()
  }

  test("the switch checks once more and fails on a loss the periodic checks have not seen yet") {
    val gone = RetentionCheck(Some(-1L), Some("the records it needs are gone: t-0 ..."))
    var lost = false
    val watch = new Scripted(() => if (lost) gone else RetentionCheck(Some(60000L), None))
    val guard = new RetentionGuard(1, "kafka", watch, intervalMs = 3600000, warnBelowMs = 0)
    try {
      guard.observe(Some(Known)); settle(guard)
      lost = true // deleted since; the next periodic check is an hour away
      guard.observe(Some(Known))
      assert(watch.checks.get == 1)
      val e = intercept[IllegalStateException](guard.confirmBeforeSwitch(Some(Known)))
      assert(
        e.getMessage.startsWith(
          "HybridSource: source 1 (kafka) will start at 1000, but the records it needs are gone"))
      assert(watch.checks.get == 2)
    } finally guard.close()
  }

  test("a switch-time check that cannot answer in time lets the switch go ahead") {
    // a system that does not answer within the switch's wait (closing the guard interrupts it);
    // bounded, so that a guard that stopped honouring its timeout fails here rather than hangs
    val answer = new java.util.concurrent.CountDownLatch(1)
    val watch = new Scripted(() => {
      answer.await(30, java.util.concurrent.TimeUnit.SECONDS)
      RetentionCheck(None, Some("gone"))
    })
    val guard = new RetentionGuard(1, "kafka", watch, intervalMs = 3600000, warnBelowMs = 0)
    val started = System.nanoTime()
    try guard.confirmBeforeSwitch(Some(Known), timeoutMs = 100)
    finally guard.close()
    val waitedMs = (System.nanoTime() - started) / 1000000
    assert(waitedMs < 10000, s"the switch waited $waitedMs ms for a check given 100 ms")
  }

  test("nothing to check yet (no event time read) starts no check") {
    val watch = new Scripted(() => RetentionCheck(None, None))
    val guard = new RetentionGuard(1, "kafka", watch, 0, 0)
    try {
      guard.observe(None); settle(guard)
      assert(watch.checks.get == 0 && guard.metrics.isEmpty)
      guard.observe(Some(Known)); settle(guard)
      assert(
        watch.checks.get == 1 && guard.metrics.keySet == Set(
          "retentionStartMs",
          "retentionCheckedAtMs"))
    } finally guard.close()
  }
}
