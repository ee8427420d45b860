package sluice.spark

/**
 * Where checkpoints too large for Spark's offset log are kept: immutable files named by their
 * content, so an offset that names one always reads the checkpoint it was written with, and
 * writing the same checkpoint twice (a replanned batch, a restart) writes nothing.
 */
trait CheckpointBodies {

  /** Keeps `json` (unless kept already) and returns the name an offset refers to it by. */
  def keep(json: String): String

  /** The checkpoint kept under `name`; fails, naming the file, when it is not there. */
  def load(name: String): String

  /** Deletes every kept checkpoint but those named: the ones offsets Spark may still hand back name. */
  def retainOnly(names: Set[String]): Unit

  /** The bytes `keep` wrote since this was made (what kept checkpoints cost the query's storage). */
  def bytesWritten: Long
}

object CheckpointBodies {

  /** The source metric that reports `bytesWritten` (absent while nothing was kept). */
  val BytesWrittenMetric = "checkpointBytesWritten"
}
