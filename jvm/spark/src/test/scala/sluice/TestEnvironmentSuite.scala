package sluice

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileContext, FileSystem}
import org.scalatest.funsuite.AnyFunSuite

/** What the Spark suites' JVM runs on, as make test's time depends on it (docs/development.md). */
class TestEnvironmentSuite extends AnyFunSuite with SparkSuiteBase {
  test(
    "local files go through the forkless file system, in the session and in a bare configuration") {
    Seq(spark.sparkContext.hadoopConfiguration, new Configuration()).foreach { conf =>
      val raw = FileSystem.getLocal(conf).getRawFileSystem
      assert(raw.getClass.getName == "sluice.hadoop.ForklessRawLocalFileSystem", raw.getClass)
      val context = FileContext.getLocalFSFileContext(conf).getDefaultFileSystem
      assert(context.getClass.getName == "sluice.hadoop.ForklessLocalFs", context.getClass)
    }
  }
}
