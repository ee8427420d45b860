import sbt._

/**
 * What tests/test_scala_example.py runs (target/scala-example-run.json): how the Scala example's
 * `sbt run` starts it (main class, `run / javaOptions`, the class path its `run` uses, forked in
 * its base folder), or why it could not be built, which the test then fails with. A broken example
 * fails its test, not the build that every other suite waits for.
 */
object ScalaExampleRun {

  def runnable(main: String, javaOptions: Seq[String], classpath: Seq[File], base: File): String =
    obj(
      Seq(
        "main" -> quoted(main),
        "javaOptions" -> list(javaOptions),
        "classpath" -> list(classpath.map(_.getAbsolutePath)),
        "workingDirectory" -> quoted(base.getAbsolutePath)))

  def failed(why: String): String = obj(Seq("error" -> quoted(why)))

  private def obj(fields: Seq[(String, String)]): String =
    fields.map { case (k, v) => s"${quoted(k)}: $v" }.mkString("{", ", ", "}\n")

  private def list(values: Seq[String]): String = values.map(quoted).mkString("[", ", ", "]")

  // JSON's string: quote, backslash and control characters escaped
  private def quoted(value: String): String = value
    .flatMap {
      case '"' => "\\\""
      case '\\' => "\\\\"
      case c if c < ' ' => f"\\u${c.toInt}%04x"
      case c => c.toString
    }
    .mkString("\"", "", "\"")
}
