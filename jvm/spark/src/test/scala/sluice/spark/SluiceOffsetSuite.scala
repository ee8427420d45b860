package sluice.spark

import org.scalatest.funsuite.AnyFunSuite

import sluice.runtime.{SourceCheckpoint, SplitEntry}

class SluiceOffsetSuite extends AnyFunSuite {

  private val offset = SluiceOffset(
    SourceCheckpoint(
      "generator",
      1,
      "1700000000000:true",
      Seq(
        SplitEntry("0", 1, "0:100", 40, 20, Some(1700000019000L), 20),
        SplitEntry("1", 1, "1:100", 100, 100, None, 100))),
    Some("sources/0"))

  test("an offset survives a JSON round trip") {
    assert(SluiceOffset.fromJson(offset.json()) == offset)
  }

  test("a version-1 offset written by an earlier build is still read") {
    val v1 = scala.io.Source.fromResource("offsets/v1-generator.json").mkString
    val read = SluiceOffset.fromJson(v1)
    assert(read.sourceType == "generator")
    assert(read.checkpoint.enumeratorState == "1700000000000:true")
    assert(read.member.isEmpty, "offsets written before they named their member have none")
    assert(
      read.splits.map(s => (s.splitId, s.position, s.records, s.maxEventTime)) == Seq(
        ("0", 4000L, 3000L, Some(1700002999000L)),
        ("1", 4000L, 3000L, Some(1700002999000L))))
  }

  test("an offset of a newer version is refused with a clear message") {
    val e = intercept[IllegalStateException](
      SluiceOffset.fromJson("""{"version":99,"source":"generator"}"""))
    assert(e.getMessage.contains("version 99"))
    assert(e.getMessage.contains("written by a newer Sluice"))
    assert(
      e.asInstanceOf[sluice.errors.SluiceRuntimeException].errorClass ==
        sluice.errors.ErrorClasses.InvalidCheckpoint)
  }

  test("an offset that is not Sluice's is refused, not read as empty") {
    val e = intercept[IllegalStateException](SluiceOffset.fromJson("""{"topic":{"0":12}}"""))
    assert(e.getMessage.contains("without a version"))
    assert(
      e.asInstanceOf[sluice.errors.SluiceRuntimeException].errorClass ==
        sluice.errors.ErrorClasses.InvalidCheckpoint)
  }
}
