package sluice.api

import sluice.errors.{ErrorClasses, SluiceRuntimeException}

/**
 * Serialises splits and enumerator state into the Spark offset log. Text, not bytes, so that an
 * offset stays readable in `<checkpoint>/offsets`. The version is stored next to the text; a
 * serializer must keep reading every version it ever wrote.
 */
trait VersionedSerializer[T] extends Serializable {
  def version: Int
  def serialize(value: T): String
  def deserialize(version: Int, text: String): T
}

object VersionedSerializer {

  /** Thrown when stored state has a version this build cannot read. */
  def unsupported(what: String, found: Int, supported: Int): SluiceRuntimeException =
    new SluiceRuntimeException(
      ErrorClasses.CheckpointTooNew,
      Map("what" -> what, "found" -> found.toString, "supported" -> supported.toString))
}
