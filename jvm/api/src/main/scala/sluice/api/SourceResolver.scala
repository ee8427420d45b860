package sluice.api

/**
 * Builds a source from its options (`source` naming the type). The registry of source types lives
 * in the binding, above every connector; a source made of sources (the hybrid) is handed one
 * instead of knowing the registry.
 */
trait SourceResolver extends Serializable {
  def fromOptions(options: Map[String, String]): Source[_ <: SourceSplit, _]
}
