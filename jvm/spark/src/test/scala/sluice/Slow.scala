package sluice

import org.scalatest.Tag

/** End-to-end suites that take long; `make test-fast` leaves them out. */
object Slow extends Tag("sluice.Slow")

/**
 * Long fault runs (a broker killed and restarted under a query): `make chaos` runs them, `make
 * test` leaves them out (build.sbt), its reduced chaos run covering the same fault.
 */
object FaultRun extends Tag("sluice.FaultRun")
