package sluice

import java.nio.file.{Files, Path}

import org.apache.spark.sql.SparkSession
import org.scalatest.{BeforeAndAfterAll, Suite}

/** One local[2] SparkSession per suite, sized for a 2-core machine. */
trait SparkSuiteBase extends BeforeAndAfterAll { self: Suite =>
  @transient protected var spark: SparkSession = _

  /** Spark's master; a suite whose queries run all their tasks at once may need more task slots. */
  protected def master: String = "local[2]"

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark = SparkSession.builder()
      .master(master)
      .appName(getClass.getSimpleName)
      .config("spark.sql.shuffle.partitions", "2")
      .config("spark.ui.enabled", "false")
      .config("spark.sql.streaming.stopTimeout", "30s")
      .config("spark.sql.extensions", "sluice.spark.SluiceExtensions")
      .getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
  }

  override protected def afterAll(): Unit = {
    try if (spark != null) spark.stop() finally super.afterAll()
  }

  protected def tempDir(prefix: String): Path = {
    val dir = Files.createTempDirectory(prefix)
    dir.toFile.deleteOnExit()
    dir
  }
}
