package sluice.connector.file.parquet

import org.scalatest.funsuite.AnyFunSuite

import sluice.connector.file.DiscoveredFile
import sluice.errors.SluiceRuntimeException

/**
 * The enumerator state in the offset log: version 2 keeps the last table snapshot or version
 * planned (version 3 each file's table entry, `TableEntriesSuite`, and the table's identity),
 * and a version 1 state (every checkpoint written before, a bounded table read's too)
 * still reads, with none.
 */
class ParquetEnumeratorStateSuite extends AnyFunSuite {
  private val files = Seq(DiscoveredFile("s3a://b/t/data/0.parquet", 100L, 1700000000000L))
  private val serializer = ParquetEnumeratorStateSerializer

  test("the last table version planned and the table's identity survive the offset log") {
    assert(serializer.version == 3)
    for (version <- Seq(Some(4113486218424958061L), Some(PlannedFiles.EmptyTable), None);
      id <- Seq(Some("3f6d1d6c-0c8b-4d0e-9a5e-0d3c2b1a0f00"), None)) {
      val state = ParquetEnumeratorState(
        files,
        listed = true,
        indexed = false,
        tableVersion = version,
        tableId = id)
      assert(serializer.deserialize(3, serializer.serialize(state)) == state)
    }
  }

  test("a version 1 state, as the bounded build wrote it, reads with no table version") {
    val v1 =
      """{"listed":true,"indexed":true,"files":[{"path":"s3a://b/t/data/0.parquet",""" +
        """"length":100,"modificationTime":1700000000000}]}"""
    assert(
      serializer
        .deserialize(1, v1) == ParquetEnumeratorState(files, listed = true, tableVersion = None))
    // a newer one is refused (with advice), never read as something else
    intercept[SluiceRuntimeException](serializer.deserialize(4, v1))
  }
}
