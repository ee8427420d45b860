package sluice.spark

import java.nio.charset.StandardCharsets.UTF_8

import org.scalatest.funsuite.AnyFunSuite

class ContentChunksSuite extends AnyFunSuite {
  import ContentChunks._

  /** A checkpoint-like text: a long list of files, as a file enumerator's state holds. */
  private def files(from: Int, until: Int): String =
    (from until until)
      .map(i =>
        s"""{"path":"/archive/date=2026-11-${i % 28}/part-$i.json","length":${i * 7 % 9000}}""")
      .mkString("[", ",", "]")

  private val GoldenCuts = Seq(12893, 20526, 21296, 17911, 8409, 9991)

  private def chunked(text: String): Seq[String] =
    split(text.getBytes(UTF_8)).map(new String(_, UTF_8))

  test(
    "chunks put together are the input; each is between the minimum and the maximum but the last") {
    Seq(files(0, 20000), "", "x", "y" * (3 * MaxBytes + 5)).foreach { text =>
      val chunks = split(text.getBytes(UTF_8))
      assert(chunks.flatMap(_.toSeq).toArray.sameElements(text.getBytes(UTF_8)))
      assert(
        chunks.dropRight(1).forall(c => c.length >= MinBytes && c.length <= MaxBytes),
        chunks.map(_.length))
      assert(chunks.lastOption.forall(_.length <= MaxBytes))
    }
    val sizes = split(files(0, 20000).getBytes(UTF_8)).map(_.length)
    val mean = sizes.sum / sizes.size
    assert(
      mean > MinBytes && mean < 4 * 8192,
      s"mean chunk $mean bytes over ${sizes.size} chunks")
  }

  test("a change in one place changes the chunks around it only, wherever it is") {
    val text = files(0, 20000)
    val before = chunked(text).toSet
    def changed(after: String): Int = (chunked(after).toSet -- before).size
    assert(changed(text.patch(1000, "inserted", 0)) <= 2)
    assert(changed(text.patch(text.length / 2, "", 40)) <= 2)
    assert(changed(text.replace("part-12345.json", "part-12345.json.gz")) <= 2)
    assert(
      changed(text.dropRight(1) + "," + files(20000, 20100).drop(1)) <= 3,
      "files appended to the list")
  }

  test(
    "the cut points are fixed: a release that moved them would write every kept checkpoint again") {
    // taken from this implementation once; any JVM must cut this text at the same places
    assert(split(files(0, 2000).getBytes(UTF_8)).map(_.length).take(6) == Seq(GoldenCuts: _*))
  }
}
