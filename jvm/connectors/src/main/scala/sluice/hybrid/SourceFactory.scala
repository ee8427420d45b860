package sluice.hybrid

import scala.collection.mutable

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
 * A definition's claim on a factory it registered (`SourceFactories.register`); the definition
 * keeps it (never its options) and gives it up with `release()`. Releasing twice is harmless.
 */
final class SourceFactoryHandle private[hybrid] (val id: String) extends Serializable {
  def release(): Unit = SourceFactories.release(id)
  override def toString: String = s"SourceFactoryHandle($id)"
}

/**
 * Factories live in the driver that defines the query; only an id travels in the query's
 * options. Nothing is ever deserialized from an option, so an option (e.g. one sent through
 * Spark Connect) cannot smuggle code into the driver. A restarted application registers its
 * factories again when it defines the query again.
 *
 * An entry lives while someone needs it, and goes when no one does:
 *   - the definition that registered it owns it until it releases its handle (`HybridSource.release`);
 *   - every running query that reads it pins it (the binding pins when it builds a stream and unpins
 *     when the stream stops), so releasing a definition never breaks a running query's switch,
 *     and stopping a query never breaks restarting the same definition;
 *   - as a backstop for definitions never released, the binding ties an entry to the application
 *     that first reads it (`adopt`) and releases that application's entries when it ends
 *     (`releaseScope`). This module knows no Spark: a scope is just a name.
 * Weak references would not do: the DataFrame a user keeps to restart a query holds only the id.
 */
object SourceFactories {
  private final case class Entry(
      factory: SourceFactory,
      owned: Boolean,
      pins: Int,
      scope: Option[String]) {
    def needed: Boolean = owned || pins > 0
  }

  // every change goes through `update` under this object's lock: checks and changes are one step
  private val registered = mutable.HashMap[String, Entry]()

  private def update(id: String)(change: Entry => Entry): Unit = synchronized {
    registered.get(id).map(change).foreach { e =>
      if (e.needed) registered(id) = e else registered.remove(id)
    }
  }

  /** Registers `factory`, owned by the definition that keeps the handle. */
  def register(factory: SourceFactory): SourceFactoryHandle = synchronized {
    val id = java.util.UUID.randomUUID().toString
    registered(id) = Entry(factory, owned = true, pins = 0, scope = None)
    new SourceFactoryHandle(id)
  }

  /** The definition gives `id` up; the entry goes now, or when the last query using it stops. */
  def release(id: String): Unit = update(id)(_.copy(owned = false))

  /**
   * A query about to read `ids` pins them, all or none: a factory already gone fails the query
   * before it starts, with what to do.
   */
  def pin(ids: Seq[String]): Unit = synchronized {
    ids.find(id => !registered.contains(id)).foreach(id => throw notRegistered(id))
    ids.foreach(id => update(id)(e => e.copy(pins = e.pins + 1)))
  }

  /** A stopped query lets go of what it pinned. */
  def unpin(ids: Seq[String]): Unit = synchronized {
    ids.foreach(id => update(id)(e => e.copy(pins = math.max(0, e.pins - 1))))
  }

  /** Ties each of `ids` not tied yet to `scope` (the application that first reads it). */
  def adopt(ids: Seq[String], scope: String): Unit = synchronized {
    ids.foreach(id => update(id)(e => if (e.scope.isEmpty) e.copy(scope = Some(scope)) else e))
  }

  /** `scope` ended: its definitions release their entries (queries still running keep theirs). */
  def releaseScope(scope: String): Unit = synchronized {
    registered.collect { case (id, e) if e.scope.contains(scope) => id }.foreach(release)
  }

  def isRegistered(id: String): Boolean = synchronized(registered.contains(id))

  /** The factories registered now: queries add none (only building a hybrid does). For tests. */
  def size: Int = synchronized(registered.size)

  /** What to do about a factory id this driver does not know. */
  val NotRegisteredFix: String =
    "factories are not stored in the checkpoint, and a released HybridSource gives its factories up: " +
      "define the query again in this application (building the HybridSource registers its factories), " +
      "or use a fixed or declarative next source"

  private def notRegistered(id: String) = new IllegalStateException(
    s"HybridSource: source factory $id is not registered in this driver; $NotRegisteredFix.")

  def get(id: String): SourceFactory =
    synchronized(registered.get(id)).map(_.factory).getOrElse(throw notRegistered(id))
}
