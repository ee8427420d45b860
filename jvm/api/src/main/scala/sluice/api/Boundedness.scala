package sluice.api

/** Whether a source ends. Only a bounded source can come before another one in a hybrid source. */
sealed trait Boundedness
object Boundedness {
  case object Bounded extends Boundedness
  case object ContinuousUnbounded extends Boundedness
}
