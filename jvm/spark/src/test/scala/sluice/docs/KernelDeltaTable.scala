package sluice.docs

import java.util.{Collections, Optional}

import io.delta.kernel.{Operation, Table, Transaction}
import io.delta.kernel.data.{ColumnVector, ColumnarBatch, FilteredColumnarBatch}
import io.delta.kernel.defaults.engine.DefaultEngine
import io.delta.kernel.expressions.Literal
import io.delta.kernel.types.{DataType, StructType}
import io.delta.kernel.utils.{CloseableIterable, CloseableIterator}
import org.apache.hadoop.conf.Configuration

/**
 * A Delta table written by Delta Kernel's own write path, as a Delta writer other than Sluice
 * writes it (the house rule for test tables): Kernel creates the table, turns the rows into its
 * physical data, writes them with its default engine's Parquet writer (which gathers the files'
 * statistics) and commits their add actions as version 0. Kernel 4.4 keeps its engine's column
 * batches internal (`io.delta.kernel.defaults.internal.data`), so the rows reach it through the
 * small batch below, made of its public interfaces.
 */
object KernelDeltaTable {

  /**
   * Creates the table at `dir` with `schema` and one data file holding `rows` (values as Kernel
   * reads them: a timestamp as microseconds since the epoch): the version committed.
   */
  def create(dir: String, schema: StructType, rows: Seq[Seq[Any]]): Long = {
    val engine = DefaultEngine.create(new Configuration())
    val txn = Table
      .forPath(engine, dir)
      .createTransactionBuilder(engine, "sluice-tests", Operation.CREATE_TABLE)
      .withSchema(engine, schema)
      .build(engine)
    val state = txn.getTransactionState(engine)
    val unpartitioned = Collections.emptyMap[String, Literal]()
    val logical = new FilteredColumnarBatch(new RowsBatch(schema, rows), Optional.empty())
    val physical =
      Transaction.transformLogicalData(engine, state, closeable(Iterator(logical)), unpartitioned)
    val context = Transaction.getWriteContext(engine, state, unpartitioned)
    val files = engine.getParquetHandler
      .writeParquetFiles(context.getTargetDirectory, physical, context.getStatisticsColumns)
    val actions = Transaction.generateAppendActions(engine, state, files, context)
    txn.commit(engine, CloseableIterable.inMemoryIterable(actions)).getVersion
  }

  private def closeable[T](it: Iterator[T]): CloseableIterator[T] = new CloseableIterator[T] {
    def hasNext: Boolean = it.hasNext
    def next(): T = it.next()
    def close(): Unit = ()
  }

  /** `rows` as one Kernel batch: column `c` of row `r` is `rows(r)(c)`. */
  private final class RowsBatch(schema: StructType, rows: Seq[Seq[Any]]) extends ColumnarBatch {
    def getSchema: StructType = schema
    def getSize: Int = rows.size
    def getColumnVector(c: Int): ColumnVector =
      new Values(schema.at(c).getDataType, rows.map(_(c)).toIndexedSeq)
  }

  /** One column's values; Kernel calls the getter of the column's type. */
  private final class Values(dataType: DataType, values: IndexedSeq[Any]) extends ColumnVector {
    def getDataType: DataType = dataType
    def getSize: Int = values.size
    def close(): Unit = ()
    def isNullAt(r: Int): Boolean = values(r) == null
    override def getLong(r: Int): Long = values(r).asInstanceOf[Long]
    override def getDouble(r: Int): Double = values(r).asInstanceOf[Double]
    override def getString(r: Int): String = values(r).asInstanceOf[String]
  }
}
