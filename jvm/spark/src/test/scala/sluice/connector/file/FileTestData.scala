package sluice.connector.file

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}

/** Files with the awkward cases Spark's file sources must agree on. */
object FileTestData {
  val JsonSchema =
    "a INT, b STRING, n STRUCT<x: ARRAY<INT>, m: MAP<STRING, STRING>>, ts TIMESTAMP"
  val JsonSchemaWithCorrupt = JsonSchema + ", _corrupt_record STRING"

  /** Lines of JSON: valid, malformed, wrong types, unicode, nested, blank, CRLF, top-level arrays. */
  val jsonFiles: Seq[(String, String)] = Seq(
    "a.json" ->
      ("""{"a": 1, "b": "one", "ts": "2024-01-01T00:00:00Z"}""" + "\n" +
        """{"a": 2, "b": "héllo wörld 🌍 日本語", "ts": "2024-01-01T00:00:05Z"}""" + "\n" +
        """{"a": 3, "b": "nested", "n": {"x": [1, 2, null], "m": {"k": "v", "é": "ü"}}}""" + "\n" +
        """{"a": 4, "b": """ + "\n" +
        "\n" +
        """{"a": "not a number", "b": "wrong type"}""" + "\n" +
        "   \n" +
        """{"a": 5, "b": "crlf"}""" + "\r\n" +
        """[{"a": 6, "b": "array one"}, {"a": 7, "b": "array two"}]""" + "\r\n" +
        "not json at all\n" +
        """{"a": 8, "b": "cr only"}""" + "\r" +
        """{"a": 9, "b": "last line, no newline", "ts": "2024-01-02T00:00:00Z"}"""),
    "empty.json" -> "",
    "sub/b.json" ->
      ("""{"a": 10, "b": "in a subdirectory"}""" + "\n" +
        """{"a": 11, "b": "x", "n": {"x": "not an array"}}""" + "\n"))

  val CsvSchema = "id INT, name STRING, price DOUBLE"
  val CsvSchemaWithCorrupt = "id INT, name STRING, price DOUBLE, _corrupt_record STRING"

  val csvFiles: Seq[(String, String)] = Seq(
    "a.csv" ->
      ("id,name,price\n" +
        "1,apple,1.5\n" +
        "2,\"quoted, with comma\",2.25\n" +
        "three,bad id,3.0\n" +
        "4,too,many,columns\n" +
        "\n" +
        "5,ünïcödé 🍐,5.5\r\n" +
        "6,short\n" +
        "7,last,7.0"),
    "empty.csv" -> "",
    "b.csv" -> "id,name,price\n8,eight,8.0\n")

  def write(dir: Path, files: Seq[(String, String)]): Path = {
    files.foreach { case (name, content) =>
      val f = dir.resolve(name)
      Files.createDirectories(f.getParent)
      Files.write(f, content.getBytes(UTF_8))
    }
    dir
  }
}
