package sluice

import java.lang.management.ManagementFactory
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths, StandardOpenOption}

/**
 * The CPU each test costs its JVM (Spark's threads, the JIT and the collector included; a broker in
 * a JVM of its own is not), one line per test in `target/test-cpu/<pid>.tsv`: make test keeps two
 * cores busy from end to end, so its time is its CPU, and a test's wall time under that load says
 * little about its own cost. build/scala_log_summary.py prints the costliest.
 */
object TestCpu {
  private val os =
    ManagementFactory.getOperatingSystemMXBean
      .asInstanceOf[com.sun.management.OperatingSystemMXBean]
  private lazy val file = {
    val dir = Paths.get("target", "test-cpu")
    Files.createDirectories(dir)
    dir.resolve(s"${ProcessHandle.current.pid}.tsv")
  }

  /** The JVM's CPU so far, in nanoseconds. */
  def now(): Long = os.getProcessCpuTime

  /** Records that `test` of `suite` cost the CPU since `cpuStart` and the time since `wallStart`. */
  def record(suite: String, test: String, cpuStart: Long, wallStart: Long): Unit = synchronized {
    val line =
      f"${(now() - cpuStart) / 1e9}%.2f\t${(System.nanoTime() - wallStart) / 1e9}%.2f\t" +
        s"$suite\t${test.replaceAll("\\s", " ")}\n"
    Files.write(file, line.getBytes(UTF_8), StandardOpenOption.CREATE, StandardOpenOption.APPEND)
  }
}
