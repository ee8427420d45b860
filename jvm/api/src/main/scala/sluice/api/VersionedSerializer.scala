package sluice.api

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
  def unsupported(what: String, found: Int, supported: Int): IllegalStateException =
    new IllegalStateException(
      s"Cannot read $what of serializer version $found: this build of Sluice reads versions up to " +
        s"$supported. The checkpoint was written by a newer Sluice; run that version or start a " +
        "new checkpoint.")
}
