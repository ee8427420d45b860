package org.apache.spark.sluice

import scala.concurrent.Future
import scala.concurrent.duration._

import org.apache.spark.SparkEnv
import org.apache.spark.rpc.{RpcCallContext, RpcEndpointRef, RpcEnv, RpcTimeout, ThreadSafeRpcEndpoint}
import org.apache.spark.util.RpcUtils

/**
 * A named request/reply channel from tasks to the driver over Spark's own RPC, the way Spark's
 * continuous engine talks to its readers (`EpochCoordinator`). Spark's RPC classes are private
 * to Spark, hence this small bridge in Spark's package; Sluice code uses only what it exposes.
 *
 * Requests and replies are strings: Spark's RPC threads deserialise messages with a class loader
 * that need not see user jars, so no Sluice class ever travels.
 */
object DriverChannel {

  /** Endpoints served per RPC environment (a new SparkContext has a new one). */
  private val served = new java.util.WeakHashMap[RpcEnv, java.util.Set[String]]()

  /** On the driver: serves `name` with `handler`, once per running SparkContext. */
  def serve(name: String)(handler: String => String): Unit = {
    val env = SparkEnv.get.rpcEnv
    served.synchronized {
      val names = served.computeIfAbsent(env, _ => new java.util.HashSet[String]())
      if (names.add(name)) env.setupEndpoint(name, new Endpoint(env, handler))
    }
  }

  /** On an executor (or the driver): a client of the driver's endpoint `name`. */
  def connect(name: String, timeout: FiniteDuration): Client = {
    val env = SparkEnv.get
    new Client(
      RpcUtils.makeDriverRef(name, env.conf, env.rpcEnv),
      new RpcTimeout(timeout, "sluice.driverChannel.timeout"))
  }

  final class Client private[DriverChannel] (ref: RpcEndpointRef, timeout: RpcTimeout) {

    /** Sends `request`; the future fails if the driver does not answer within the timeout. */
    def ask(request: String): Future[String] = ref.ask[String](request, timeout)
  }

  private final class Endpoint(override val rpcEnv: RpcEnv, handler: String => String)
      extends ThreadSafeRpcEndpoint {
    override def receiveAndReply(context: RpcCallContext): PartialFunction[Any, Unit] = {
      case request: String =>
        try context.reply(handler(request))
        catch { case e: Exception => context.sendFailure(e) }
    }
  }
}
