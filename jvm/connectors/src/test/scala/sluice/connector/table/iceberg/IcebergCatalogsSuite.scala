package sluice.connector.table.iceberg

import java.nio.file.Files
import java.util.concurrent.{Callable, Executors, ThreadFactory, TimeUnit}

import org.apache.hadoop.conf.Configuration
import org.apache.iceberg.hadoop.HadoopCatalog
import org.scalatest.funsuite.AnyFunSuite

import sluice.connector.table.iceberg.IcebergCatalogs.CatalogSpec

/**
 * The catalog cache without Spark: catalogs iceberg-core builds (a REST catalog pointed at a
 * server on 127.0.0.1 that accepts and never answers, Hadoop catalogs on a temporary folder).
 */
class IcebergCatalogsSuite extends AnyFunSuite {
  private val conf = new Configuration()
  private lazy val warehouse = Files.createTempDirectory("sluice-iceberg-catalogs").toUri.toString

  private val threads = Executors.newCachedThreadPool(new ThreadFactory {
    override def newThread(r: Runnable): Thread = {
      val t = new Thread(r, "iceberg-catalogs-suite")
      t.setDaemon(true) // a stalled build must not keep the test JVM alive
      t
    }
  })

  private def async[T](body: => T) = threads.submit(new Callable[T] { def call(): T = body })

  /** Polls `done` every 20 ms until `seconds` pass. */
  private def await(seconds: Int, what: String)(done: => Boolean): Unit = {
    val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds.toLong)
    while (!done) {
      assert(System.nanoTime() < deadline, s"after $seconds s: $what")
      Thread.sleep(20)
    }
  }

  test(
    "a catalog that never answers holds no other catalog's build, one in its cache bin neither") {
    val silent = new SilentServer
    try {
      def stalled(i: Int) = CatalogSpec(
        "stalled",
        Map(
          "type" -> "rest",
          "uri" -> s"http://127.0.0.1:${silent.port}",
          "test.variant" -> s"$i"))
      def other(i: Int) =
        CatalogSpec(
          "other",
          Map("type" -> "hadoop", "warehouse" -> warehouse, "test.variant" -> s"$i"))
      def hash(s: CatalogSpec) = IcebergCatalogs.keyOf(s, conf).hashCode
      // two keys of one hash share a bin of the cache's map whatever its size (a birthday search:
      // 2^17 hashes of one side, about 2^15 tries of the other)
      val byHash = (0 until (1 << 17)).map(i => hash(stalled(i)) -> i).toMap
      val (a, b) = Iterator
        .from(0)
        .flatMap(j => byHash.get(hash(other(j))).map(_ -> j))
        .next()
      assert(hash(stalled(a)) == hash(other(b)))

      val first = async(IcebergCatalogs.catalog(stalled(a), conf))
      await(30, "the REST catalog never connected")(silent.connections > 0)
      val second = async(IcebergCatalogs.catalog(other(b), conf))
      val built =
        second.get(30, TimeUnit.SECONDS) // blocked behind the stalled build before the fix
      assert(built.isInstanceOf[HadoopCatalog])
      assert(!first.isDone, "the REST catalog's build was expected to still wait for its server")
      assert(IcebergCatalogs.catalog(other(b), conf) eq built) // kept
    } finally silent.close()
  }
}
