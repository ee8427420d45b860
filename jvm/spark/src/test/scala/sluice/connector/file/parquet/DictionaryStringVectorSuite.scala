package sluice.connector.file.parquet

import java.nio.charset.StandardCharsets.UTF_8

import org.apache.spark.sql.execution.vectorized.{Dictionary, OnHeapColumnVector}
import org.apache.spark.sql.types.{ArrayType, IntegerType, MapType, StringType, StructField, StructType}
import org.apache.spark.sql.vectorized.ColumnVector
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

/**
 * The dictionary view over Spark's vectors gives the strings Spark's vectors give, decodes each
 * entry once per batch, and forgets what it decoded when the next batch comes.
 */
class DictionaryStringVectorSuite extends AnyFunSuite {

  /** A dictionary whose entry `id` is `name(id)`, counting how often entries are decoded. */
  private final class CountingDictionary(name: Int => String) extends Dictionary {
    var decodes = 0
    override def decodeToBinary(id: Int): Array[Byte] = {
      decodes += 1
      name(id).getBytes(UTF_8)
    }
    override def decodeToInt(id: Int): Int = throw new UnsupportedOperationException
    override def decodeToLong(id: Int): Long = throw new UnsupportedOperationException
    override def decodeToFloat(id: Int): Float = throw new UnsupportedOperationException
    override def decodeToDouble(id: Int): Double = throw new UnsupportedOperationException
  }

  /** Fills `v` with `ids` (None: null) under `dictionary`. */
  private def fill(v: OnHeapColumnVector, dictionary: Dictionary, ids: Seq[Option[Int]]): Unit = {
    v.reset()
    v.reserve(ids.size)
    v.setDictionary(dictionary)
    val dictionaryIds = v.reserveDictionaryIds(ids.size)
    ids.zipWithIndex.foreach {
      case (Some(id), i) => dictionaryIds.putInt(i, id)
      case (None, i) => v.putNull(i)
    }
  }

  private def strings(v: ColumnVector, n: Int): Seq[String] =
    (0 until n).map(i => Option(v.getUTF8String(i)).map(_.toString).orNull)

  private def viewOf(v: OnHeapColumnVector): DictionaryStringVector =
    DictionaryStringVector.view(v).asInstanceOf[DictionaryStringVector]

  test(
    "a dictionary string column: Spark's strings, each entry decoded once per batch, afresh in the next") {
    val ids = (0 until 100).map(i => if (i % 9 == 0) None else Some(i % 4))
    val below = new OnHeapColumnVector(100, StringType)
    val first = new CountingDictionary(id => s"first-$id")
    fill(below, first, ids)
    val view = viewOf(below)
    val expected = ids.map(_.map(id => s"first-$id").orNull)
    assert(strings(view, 100) == expected)
    assert(strings(view, 100) == expected)
    assert(first.decodes == 4, "each of the 4 entries decoded once in the batch")
    assert(
      view.getUTF8String(1) eq view.getUTF8String(5),
      "the decoded string is handed out again")

    // the next batch: the reader set a new dictionary; the view must not give the last batch's strings
    val second = new CountingDictionary(id => s"second-$id")
    fill(below, second, ids)
    view.nextBatch()
    assert(strings(view, 100) == ids.map(_.map(id => s"second-$id").orNull))
    assert(second.decodes == 4)
    below.close()
  }

  test("plain strings pass through; entries at or past the cache's end are decoded per row") {
    val plain = new OnHeapColumnVector(3, StringType)
    Seq("a", "bc", "").zipWithIndex.foreach { case (s, i) =>
      plain.putByteArray(i, s.getBytes(UTF_8))
    }
    assert(strings(viewOf(plain), 3) == Seq("a", "bc", ""))
    assert(
      viewOf(plain).getChild(0) eq plain.getChild(0),
      "a string vector's bytes are Spark's child")

    val big = DictionaryStringVector.MaxCachedId
    val huge = new OnHeapColumnVector(4, StringType)
    val dictionary = new CountingDictionary(id => s"e$id")
    fill(huge, dictionary, Seq(Some(big), Some(big), Some(big - 1), Some(big - 1)))
    assert(strings(viewOf(huge), 4) == Seq(s"e$big", s"e$big", s"e${big - 1}", s"e${big - 1}"))
    assert(dictionary.decodes == 3)
    Seq(plain, huge).foreach(_.close())
  }

  test("strings inside arrays, structs and maps are viewed too") {
    val arrays = new OnHeapColumnVector(3, ArrayType(StringType))
    val elements = arrays.arrayData().asInstanceOf[OnHeapColumnVector]
    val elementNames = new CountingDictionary(id => s"t$id")
    fill(elements, elementNames, Seq(Some(0), Some(1), None, Some(0), Some(1), Some(1)))
    arrays.putArray(0, 0, 2)
    arrays.putNull(1)
    arrays.putArray(2, 2, 4)
    val arrayView = DictionaryStringVector.view(arrays)
    assert(arrayView.getArray(1) == null)
    assert(
      (0 until 4).map(j =>
        Option(arrayView.getArray(2).getUTF8String(j))
          .map(_.toString)
          .orNull) == Seq(null, "t0", "t1", "t1"))
    assert(arrayView.getArray(0).getUTF8String(0).toString == "t0")
    assert(elementNames.decodes == 2)

    val structs = new OnHeapColumnVector(
      2,
      StructType(Seq(StructField("n", IntegerType), StructField("s", StringType))))
    structs.getChild(0).putInt(0, 7)
    structs.getChild(0).putInt(1, 8)
    fill(
      structs.getChild(1).asInstanceOf[OnHeapColumnVector],
      new CountingDictionary(id => s"s$id"),
      Seq(Some(3), Some(3)))
    val structView = DictionaryStringVector.view(structs)
    assert(
      (0 until 2).map(i =>
        (structView.getStruct(i).getInt(0), structView.getStruct(i).getUTF8String(1))) ==
        Seq((7, UTF8String.fromString("s3")), (8, UTF8String.fromString("s3"))))
    assert(structView.getStruct(0).getUTF8String(1) eq structView.getStruct(1).getUTF8String(1))

    val maps = new OnHeapColumnVector(1, MapType(StringType, StringType))
    fill(
      maps.getChild(0).asInstanceOf[OnHeapColumnVector],
      new CountingDictionary(id => s"k$id"),
      Seq(Some(0), Some(1)))
    fill(
      maps.getChild(1).asInstanceOf[OnHeapColumnVector],
      new CountingDictionary(id => s"v$id"),
      Seq(Some(5), Some(5)))
    maps.putArray(0, 0, 2)
    val mapView = DictionaryStringVector.view(maps)
    val map = mapView.getMap(0)
    assert(
      (0 until 2).map(j =>
        (map.keyArray().getUTF8String(j).toString, map.valueArray().getUTF8String(j).toString)) ==
        Seq(("k0", "v5"), ("k1", "v5")))

    // the next batch: nested views forget what they decoded too
    fill(
      elements,
      new CountingDictionary(id => s"u$id"),
      Seq(Some(0), Some(1), None, Some(0), Some(1), Some(1)))
    fill(
      structs.getChild(1).asInstanceOf[OnHeapColumnVector],
      new CountingDictionary(id => s"w$id"),
      Seq(Some(3), Some(3)))
    fill(
      maps.getChild(1).asInstanceOf[OnHeapColumnVector],
      new CountingDictionary(id => s"x$id"),
      Seq(Some(5), Some(5)))
    Seq(arrayView, structView, mapView).foreach(
      _.asInstanceOf[DictionaryStringVector].nextBatch())
    assert(arrayView.getArray(2).getUTF8String(3).toString == "u1")
    assert(structView.getStruct(1).getUTF8String(1).toString == "w3")
    assert(mapView.getMap(0).valueArray().getUTF8String(1).toString == "x5")

    // a column without strings is handed on as it is
    val ints = new OnHeapColumnVector(1, IntegerType)
    assert(DictionaryStringVector.view(ints) eq ints)
    Seq(arrays, structs, maps, ints).foreach(_.close())
  }
}
