package sluice.hybrid

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, ObjectInputStream, ObjectOutputStream}
import java.util.Base64

import sluice.api.{EnumeratorEndState, Source}

/** What the next source of a hybrid is built from: the previous source's end state (FLIP-150). */
final case class SourceSwitchContext(previousSourceIndex: Int, previousEndState: EnumeratorEndState) {
  /** The largest event time the previous source read, if it knew event times. */
  def previousMaxEventTime: Option[Long] = previousEndState.maxEventTime
}

/**
 * Builds a hybrid's next source when the switch happens (FLIP-150's SourceFactory). It runs in
 * the driver, once per switch — again only if the query stops before the switch is recorded, and
 * then it sees the same context. Must be serializable: it travels in the query's options.
 */
trait SourceFactory extends Serializable {
  def create(context: SourceSwitchContext): Source[_, _]
}

object SourceFactory {
  def apply(f: SourceSwitchContext => Source[_, _]): SourceFactory = (context: SourceSwitchContext) => f(context)

  private[hybrid] def encode(factory: SourceFactory): String = {
    val bytes = new ByteArrayOutputStream()
    val out = new ObjectOutputStream(bytes)
    try out.writeObject(factory) finally out.close()
    Base64.getEncoder.encodeToString(bytes.toByteArray)
  }

  private[hybrid] def decode(text: String): SourceFactory = {
    val in = new ObjectInputStream(new ByteArrayInputStream(Base64.getDecoder.decode(text))) {
      // Classes of the user's factory come from the application's class loader, not the JDK's.
      override def resolveClass(desc: java.io.ObjectStreamClass): Class[_] =
        Class.forName(desc.getName, false, Thread.currentThread().getContextClassLoader)
    }
    try in.readObject().asInstanceOf[SourceFactory] finally in.close()
  }
}
