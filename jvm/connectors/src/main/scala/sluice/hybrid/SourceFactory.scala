package sluice.hybrid

import scala.collection.concurrent.TrieMap

import sluice.api.{EnumeratorEndState, Source}

/** What the next source of a hybrid is built from: the previous source's end state (FLIP-150). */
final case class SourceSwitchContext(
    previousSourceIndex: Int,
    previousEndState: EnumeratorEndState) {

  /** The largest event time the previous source read, if it knew event times. */
  def previousMaxEventTime: Option[Long] = previousEndState.maxEventTime
}

/**
 * Builds a hybrid's next source when the switch happens (FLIP-150's SourceFactory). It runs in
 * the driver, at the switch — and after a restart again, with the recorded context, to rebuild
 * the source's configuration (never its positions, which are in the offset log).
 */
trait SourceFactory {
  def create(context: SourceSwitchContext): Source[_, _]
}

/**
 * A factory that answers with the next source's options rather than a source (a Python callback):
 * the hybrid builds the source from them with the binding's registry of source types.
 */
trait OptionsSourceFactory extends SourceFactory {
  def createOptions(context: SourceSwitchContext): Map[String, String]
  override def create(context: SourceSwitchContext): Source[_, _] =
    throw new IllegalStateException("an options factory is resolved by its hybrid source")
}

object SourceFactory {
  def apply(f: SourceSwitchContext => Source[_, _]): SourceFactory =
    (context: SourceSwitchContext) => f(context)
}

/**
 * Factories live in the driver that defines the query; only an id travels in the query's
 * options. Nothing is ever deserialized from an option, so an option (e.g. one sent through
 * Spark Connect) cannot smuggle code into the driver. A restarted application registers its
 * factories again when it defines the query again.
 */
object SourceFactories {
  private val registered = TrieMap[String, SourceFactory]()

  def register(factory: SourceFactory): String = {
    val id = java.util.UUID.randomUUID().toString
    registered(id) = factory
    id
  }

  def isRegistered(id: String): Boolean = registered.contains(id)

  /** The factories registered now: queries add none (only building a hybrid does). */
  private[sluice] def size: Int = registered.size

  /** What to do about a factory id this driver does not know. */
  val NotRegisteredFix: String =
    "factories are not stored in the checkpoint: define the query again in this " +
      "application (building the HybridSource registers its factories), or use a fixed or declarative next source"

  def get(id: String): SourceFactory = registered.getOrElse(
    id,
    throw new IllegalStateException(
      s"HybridSource: source factory $id is not registered in this driver; $NotRegisteredFix."))
}
