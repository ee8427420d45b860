package sluice.docs

import org.scalatest.funsuite.AnyFunSuite

/**
 * The rules by which the build rewrites or refuses a docs' Scala snippet's literals
 * (project/DocSnippetLiterals.scala, compiled here too): what a rule misses, a snippet could use
 * this machine's paths with.
 */
class DocSnippetLiteralsSuite extends AnyFunSuite {

  private def localized(code: String): (String, Seq[String]) =
    DocSnippetLiterals.localized(
      code,
      offset => s"page.md:${1 + code.take(offset).count(_ == '\n')}",
      1)

  private def refused(code: String): String =
    intercept[IllegalArgumentException](localized(code)).getMessage

  test(
    "a literal starting with a reader's place, or naming the broker, is hoisted and rewritten") {
    val (code, hoisted) =
      localized("""FileSource.builder().path("/archive/events/").build()
                  |val servers = "broker:9092"
                  |val day = "s3a://warehouse/events/day=1/a.parquet"""".stripMargin)
    assert(
      code ==
        """FileSource.builder().path(localizedLiteral1).build()
          |val servers = localizedLiteral2
          |val day = localizedLiteral3""".stripMargin)
    assert(
      hoisted == Seq(
        """val localizedLiteral1 = run.localized("/archive/events/")""",
        """val localizedLiteral2 = run.localized("broker:9092")""",
        """val localizedLiteral3 = run.localized("s3a://warehouse/events/day=1/a.parquet")"""))
  }

  test("literals that name no place are left as written") {
    val code =
      """spark.conf.set("spark.sql.shuffle.partitions", "2"); df.select("a / b", "text/plain")"""
    assert(localized(code) == (code, Nil))
  }

  test("an absolute path, a URI or another broker not rewritten fails, naming page and line") {
    assert(
      refused("val a = 1\nval p = \"/etc/events\"").startsWith(
        "page.md:2: \"/etc/events\" holds a path"))
    assert(refused("""spark.read.load("file:/data/x")""").contains("'file:/'"))
    assert(refused("""spark.sql("SELECT * FROM parquet.`/tmp/x`")""").contains("holds a path"))
    assert(refused("""val b = "broker:9093"""").contains("'broker:9093'"))
  }

  test("a relative path fails: it would resolve against the test's working folder") {
    assert(refused("""path("./events")""").contains("holds a path"))
    assert(refused("""path("data/events.json")""").contains("holds a path"))
    assert(refused("""checkpointLocation("out/")""").contains("holds a path"))
  }

  test("a broker of this machine or a home folder fails; times and settings are left") {
    assert(refused("""val s = "localhost:9092"""").contains("'localhost:9092'"))
    assert(refused("""val s = "127.0.0.1:9092"""").contains("'127.0.0.1:9092'"))
    assert(refused("""val s = "kafka-1:9092"""").contains("'kafka-1:9092'"))
    assert(refused("""servers("broker:9092,kafka-1:9092")""").contains("holds a second path"))
    assert(refused("""path("~/data")""").contains("'~/d'"))
    val code =
      """val at = "12:30"; val ts = "2023-11-14T22:13:20Z"
        |spark.conf.set("spark.sql.session.timeZone", "UTC")""".stripMargin
    assert(localized(code) == (code, Nil))
  }

  test("a relative path given to a call taking a path fails: it would write into the checkout") {
    for (code <- Seq(
        """df.writeStream.option("checkpointLocation", "checkpoints/q").start()""",
        """spark.readStream.format("json").load("data/events")""",
        """FileSource.builder().path("chk").build()""",
        """FileSource.builder().paths("/archive/a/", "data/b").build()""",
        """df.write.parquet("out")""",
        """df.write.format("delta").save("events")""",
        """df.writeStream.option("path", "out").start()""",
        """df.writeStream.start("out")""",
        """DeltaSource.builder().table("tables/events")"""))
      assert(refused(code).contains("holds a path"), code)
    // a catalog's table name, and the other arguments of the calls, name no path
    val code =
      """spark.table("db.events").writeStream.option("maxFilesPerTrigger", "1").format("json")"""
    assert(localized(code) == (code, Nil))
  }

  test("a literal starting with a place but holding a second path fails") {
    assert(
      refused("""paths("/tmp/a,/etc/b")""").contains(
        "holds a second path, or one not at its start"))
    assert(refused("""servers("broker:9092,/etc/b")""").contains("holds a second path"))
  }

  test(
    "a place inside an interpolated or triple-quoted literal fails; one without a path is left") {
    assert(refused("""path(s"/tmp/$day")""").contains("interpolated or triple-quoted"))
    assert(
      refused("val q = \"\"\"SELECT * FROM x\"\"\"\nval p = \"\"\"/archive/a\"\"\"").startsWith(
        "page.md:2:"))
    assert(refused("val q = \"\"\"LOCATION '/etc/x'\"\"\"").contains("holds a path"))
    val sql = "val q = \"\"\"SELECT \"a\" FROM t\"\"\""
    assert(localized(sql) == (sql, Nil))
  }
}
