package sluice.connector.file

import java.net.{URL, URLClassLoader}

import org.apache.hadoop.conf.Configuration
import org.scalatest.funsuite.AnyFunSuite

/**
 * The Hadoop configuration of file readers on executors: copies of Hadoop's defaults, parsed once
 * per JVM, each loading classes as a new Configuration would, through the loader of the thread
 * that asks (a task's, which sees its session's jars).
 */
class ExecutorHadoopConfSuite extends AnyFunSuite {

  private def inThreadWith[T](loader: ClassLoader)(body: => T): T = {
    var result: Option[T] = None
    val thread = new Thread(() => result = Some(body))
    thread.setContextClassLoader(loader)
    thread.start()
    thread.join()
    result.getOrElse(fail("the thread ended without a result"))
  }

  test(
    "each copy holds Hadoop's defaults and the loader of the thread that asked, not the first's") {
    val first = new URLClassLoader(Array.empty[URL], getClass.getClassLoader)
    val second = new URLClassLoader(Array.empty[URL], getClass.getClassLoader)
    val a = inThreadWith(first)(FileSource.executorHadoopConf())
    val b = inThreadWith(second)(FileSource.executorHadoopConf())
    assert(a.getClassLoader eq first)
    assert(b.getClassLoader eq second)
    // what core-default.xml sets, read from the copy
    val fresh = new Configuration()
    assert(a.get("fs.file.impl.disable.cache") == fresh.get("fs.file.impl.disable.cache"))
    assert(
      a.get("io.file.buffer.size") == fresh.get("io.file.buffer.size") && a.get(
        "io.file.buffer.size") != null)
  }

  test("copies are independent: a setting in one is in no other") {
    val a = FileSource.executorHadoopConf()
    a.set("sluice.test.only", "a")
    val b = FileSource.executorHadoopConf()
    assert(b.get("sluice.test.only") == null)
    assert(a.get("sluice.test.only") == "a")
  }
}
