package sluice.spark

import scala.collection.concurrent.TrieMap

import org.apache.spark.SparkContext
import org.apache.spark.scheduler.{SparkListener, SparkListenerApplicationEnd}

import sluice.api.Source
import sluice.hybrid.{HybridSource, SourceFactories}

/**
 * Ties the factories of a hybrid to the Spark side of their lives (`SourceFactories` knows no
 * Spark): a query pins the factories it reads while it runs, and a definition never released is
 * given up when the application that first read it ends, its SparkContext stopping.
 */
private[spark] object HybridFactories {

  /** The factory ids `source` reads through (none unless it is a hybrid built by factories). */
  def idsOf(source: Source[_, _]): Seq[String] = source match {
    case h: HybridSource => h.factoryIds
    case _ => Nil
  }

  /** The applications whose end is watched; each leaves when it ends. */
  private val watched = TrieMap[String, Unit]()

  /** Ties `ids` (those not tied yet) to the application of `sc`, watching it end. */
  def adopt(ids: Seq[String], sc: SparkContext): Unit = if (ids.nonEmpty) {
    // the start time tells apart two contexts of one application id (local mode reuses ids)
    val scope = s"${sc.applicationId}@${sc.startTime}"
    if (watched.putIfAbsent(scope, ()).isEmpty) {
      sc.addSparkListener(new SparkListener {
        override def onApplicationEnd(end: SparkListenerApplicationEnd): Unit = {
          watched.remove(scope)
          SourceFactories.releaseScope(scope)
        }
      })
    }
    SourceFactories.adopt(ids, scope)
  }

  /**
   * Builds the stream of a query reading `source` with its factories pinned (and tied to the
   * query's application, if nothing has tied them yet): the stream gives them back in `stop()`,
   * one that fails to build gives them back at once (Spark never stops a stream it did not get).
   */
  def pinnedWhile[T](source: Source[_, _], sc: SparkContext)(build: => T): T = {
    val ids = idsOf(source)
    if (ids.nonEmpty) {
      SourceFactories.pin(ids)
      adopt(ids, sc)
    }
    try build
    catch {
      case e: Throwable =>
        SourceFactories.unpin(ids)
        throw e
    }
  }
}
