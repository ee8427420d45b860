package sluice

import java.nio.file.{Path, Paths}

/**
 * Files of the checkout that suites compare with what the code declares (the option reference,
 * the Python package's option file). build.sbt passes the checkout's root to the test JVMs, which
 * run in the subproject's own folder.
 */
object CheckoutFiles {
  def apply(first: String, more: String*): Path =
    Paths.get(sys.props.getOrElse("sluice.repoRoot", "."), first +: more: _*)
}
