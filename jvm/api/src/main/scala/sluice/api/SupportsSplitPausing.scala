package sluice.api

/**
 * A source whose readers can pause and resume splits (`PausableSplitReader`): what aligning
 * several splits of one source needs (FLIP-182 refuses split alignment otherwise, unless
 * unaligned splits are allowed).
 */
trait SupportsSplitPausing[SplitT <: SourceSplit] { self: Source[SplitT, _] =>

  /** Whether the readers of these splits can pause them; a hybrid asks the splits' own sources. */
  def canPauseSplits(splits: Seq[SplitT]): Boolean = true
}
