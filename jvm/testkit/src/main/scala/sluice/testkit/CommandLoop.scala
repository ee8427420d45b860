package sluice.testkit

import java.io.{BufferedReader, PrintStream}

import scala.util.control.NonFatal

/**
 * Answers each command line from `in` with one line on `out`: `OK`, `OK <result>` or `ERR <why>`.
 * Returns when `in` ends (the parent process is gone) or on `stop`, which it does not answer: the
 * caller answers it once the broker is down.
 *
 * @return
 *   true if it stopped because of a `stop` command
 */
final class CommandLoop(in: BufferedReader, out: PrintStream, commands: String => String) {
  def run(): Boolean = {
    var line = in.readLine()
    while (line != null) {
      if (line.trim == "stop") return true
      val answer =
        try {
          val result = commands(line)
          if (result.isEmpty) "OK" else s"OK $result"
        } catch {
          case NonFatal(e) => s"ERR ${CommandLoop.describe(e)}"
        }
      out.println(answer)
      out.flush()
      line = in.readLine()
    }
    false
  }
}

object CommandLoop {

  /** A one-line description of a failure, naming Kafka's exception type (it often says most). */
  def describe(e: Throwable): String = {
    val message = Option(e.getMessage).filter(_.nonEmpty).getOrElse("(no message)")
    val text = e match {
      case _: IllegalArgumentException => message
      case _ => s"${e.getClass.getSimpleName}: $message"
    }
    text.replaceAll("[\r\n]+", " ")
  }
}
