package sluice.connector.file

import org.scalatest.funsuite.AnyFunSuite

import sluice.connector.file.parquet.{RowGroupSplit, RowGroupSplitSerializer}

/** A data file's deleted rows: a row group's share of them, and their way through the offset log. */
class DeletedRowsSuite extends AnyFunSuite {
  private val rows = DeletedRows.of(Iterator(3L, 4L, 5L, 15L) ++ (20L until 30L).iterator)

  test("a row group's share: within its rows, none, or all of them") {
    assert(rows.within(0, 10).map(_.count).contains(3L))
    assert(rows.within(6, 15).isEmpty && !rows.anyIn(6, 15) && rows.anyIn(6, 16))
    assert(rows.coversAll(20, 30) && !rows.coversAll(19, 30) && !rows.coversAll(20, 31))
    assert((0L until 40L).filter(rows.contains) == Seq(3L, 4L, 5L, 15L) ++ (20L until 30L))
    assert(!rows.contains(-1L) && !rows.contains(Int.MaxValue.toLong + 3))
    assert(
      intercept[IllegalArgumentException](DeletedRows.of(Iterator(1L << 31))).getMessage
        .contains("out of a data file's int range"))
  }

  test("equal deleted rows are equal and hash alike, before and after serializing") {
    val runs = DeletedRows.of((0L until 5000L).iterator)
    val hash = runs.hashCode
    val text = runs.serialize
    assert(runs.hashCode == hash && (runs.serialize eq text)) // made once, kept
    // the same rows made otherwise (a bitmap not optimized into runs by its maker)
    val plain = new org.roaringbitmap.RoaringBitmap()
    (0 until 5000).foreach(plain.add)
    val other = DeletedRows.owning(plain)
    assert(
      other == runs && other.hashCode == hash && DeletedRows.deserialize(text).hashCode == hash)
    assert(runs.within(0, 5000).map(_.hashCode).contains(hash))
  }

  test("a split's deleted rows survive the offset log; older splits have none") {
    val split = RowGroupSplit(
      "s3a://b/t/data/a.parquet",
      2,
      4,
      20,
      10,
      900,
      1,
      4000,
      7,
      None,
      None,
      aloneAtMidpoint = true,
      deleted = rows.within(20, 30))
    val text = RowGroupSplitSerializer.serialize(split)
    assert(RowGroupSplitSerializer.deserialize(RowGroupSplitSerializer.version, text) == split)
    // version 5 has no constants (the field before the path), version 4 no partition values
    // (the field before those), version 3 no entry, version 2 no deleted rows either
    val v5 = text.stripSuffix("::" + split.path) + ":" + split.path
    assert(RowGroupSplitSerializer.deserialize(5, v5) == split)
    val v4 = v5.stripSuffix("::" + split.path) + ":" + split.path
    assert(RowGroupSplitSerializer.deserialize(4, v4) == split)
    val v3 = v4.stripSuffix("::" + split.path) + ":" + split.path
    assert(RowGroupSplitSerializer.deserialize(3, v3) == split)
    val v2 = v3.replace(":" + split.deleted.get.serialize + ":", ":")
    assert(RowGroupSplitSerializer.deserialize(2, v2) == split.copy(deleted = None))
  }
}
