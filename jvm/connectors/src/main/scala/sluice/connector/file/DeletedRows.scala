package sluice.connector.file

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, DataInputStream, DataOutputStream}
import java.util.Base64

import org.roaringbitmap.RoaringBitmap

/**
 * The rows of a data file a table says are deleted (Iceberg's position deletes and deletion vectors), by row index in
 * the file (what Spark's `_metadata.row_index` and a `RowGroupSplit`'s positions count). A
 * Roaring bitmap keeps them compact: runs of deleted rows take a few bytes, and a row group's
 * share of them travels with its split (so in the offset log) in Roaring's portable format.
 *
 * Row indexes fit in an int: positions at or past a data file's record count are ignored where
 * deletes are planned (as Iceberg does), and a data file of more than 2^31 rows with deletes is
 * refused there. Serializable (Roaring bitmaps are): splits go to executors in tasks.
 *
 * Immutable: the bitmap is run-optimized once, when made, and never changed after, so a split's
 * hash and serialized text stay the same across checkpoints; equality and hash are of content
 * (equal sets in different container forms are equal and hash alike).
 */
final class DeletedRows private (private val rows: RoaringBitmap) extends Serializable {

  def contains(row: Long): Boolean = row >= 0 && row <= Int.MaxValue && rows.contains(row.toInt)

  def count: Long = rows.getLongCardinality

  /** The deleted rows in `[from, until)`, or None when none is. */
  def within(from: Long, until: Long): Option[DeletedRows] = {
    val lo = math.max(from, 0L)
    val hi = math.min(until, Int.MaxValue.toLong + 1)
    if (lo >= hi) None
    else {
      val part = RoaringBitmap.and(rows, RoaringBitmap.bitmapOfRange(lo, hi))
      if (part.isEmpty) None else Some(DeletedRows.owning(part))
    }
  }

  /** Whether some row of `[from, until)` is deleted. */
  def anyIn(from: Long, until: Long): Boolean = {
    val lo = math.max(from, 0L)
    val hi = math.min(until, Int.MaxValue.toLong + 1)
    lo < hi && rows.intersects(lo, hi)
  }

  /** Whether every row of `[from, until)` is deleted. */
  def coversAll(from: Long, until: Long): Boolean =
    until > from && until <= Int.MaxValue.toLong + 1 && from >= 0 &&
      rows.rangeCardinality(from, until) == until - from

  /**
   * Roaring's portable format, in base64 (no ':' or newline: a field of a serialized split). Made
   * once and kept (the rows never change): each batch's offset serializes its splits again.
   */
  def serialize: String = text

  @transient private lazy val text: String = {
    val bytes = new ByteArrayOutputStream()
    val out = new DataOutputStream(bytes)
    rows.serialize(out)
    out.close()
    Base64.getEncoder.encodeToString(bytes.toByteArray)
  }

  override def equals(other: Any): Boolean = other match {
    case d: DeletedRows => d.rows == rows
    case _ => false
  }
  // of content, not of Roaring's containers (whose hash depends on their form), and cheap
  override def hashCode: Int =
    if (rows.isEmpty) 0
    else
      java.util.Objects.hash(
        Long.box(rows.getLongCardinality),
        Int.box(rows.first),
        Int.box(rows.last))
  override def toString: String = s"DeletedRows($count rows)"
}

object DeletedRows {

  /** The rows at these indexes; an index beyond an int fails (no Parquet file Sluice reads has such). */
  def of(indexes: Iterator[Long]): DeletedRows = {
    val rows = new RoaringBitmap()
    indexes.foreach { i =>
      require(i >= 0 && i <= Int.MaxValue, s"row index $i is out of a data file's int range")
      rows.add(i.toInt)
    }
    owning(rows)
  }

  /** The rows of this bitmap, which the caller hands over: it must never change it after. */
  def owning(rows: RoaringBitmap): DeletedRows = {
    rows.runOptimize()
    new DeletedRows(rows)
  }

  def deserialize(text: String): DeletedRows = {
    val rows = new RoaringBitmap()
    rows.deserialize(
      new DataInputStream(new ByteArrayInputStream(Base64.getDecoder.decode(text))))
    owning(rows)
  }
}
