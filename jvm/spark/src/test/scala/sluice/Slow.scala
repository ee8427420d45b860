package sluice

import org.scalatest.Tag

/** End-to-end suites that take long; `make test-fast` leaves them out. */
object Slow extends Tag("sluice.Slow")
