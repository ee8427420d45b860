package sluice.connector.file.parquet

import java.time.ZoneId

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.execution.datasources.PartitioningUtils
import org.apache.spark.sql.types.{Decimal, DecimalType, StringType, StructField}
import org.apache.spark.unsafe.types.UTF8String

import sluice.errors.SluiceError

/**
 * The partition values of a file from its Hive-style directories (`.../date=2026-11-01/hour=7/`),
 * read as Spark reads them once it knows the partition columns' types: the directories between
 * the file and its root, each value converted by Spark's own `castPartValueToDesiredType`
 * (`__HIVE_DEFAULT_PARTITION__` is null). A table's file whose metadata gives its partition
 * values (`DiscoveredFile.partitionValues`: a Delta table under column mapping, whose files lie
 * in directories that do not name them) has those instead, each converted as a directory's
 * value is, a string as it is (a directory's is unescaped first), an empty one null (Delta's
 * protocol); its directories are not looked at.
 */
private[parquet] final class PartitionDirectories(config: ParquetConfig) {
  private val schema = config.partitionSchema
  private val roots = config.partitionRoots.map(new Path(_)).toSet
  private val zone = ZoneId.of(config.timeZoneId, ZoneId.SHORT_IDS)
  private def key(name: String) = if (config.caseSensitive) name else name.toLowerCase

  def valuesOf(file: String, logged: Option[Map[String, Option[String]]]): InternalRow =
    logged.fold(valuesOf(file))(fromMetadata(file, _))

  private def fromMetadata(file: String, logged: Map[String, Option[String]]): InternalRow = {
    if (schema.isEmpty) return InternalRow.empty
    val byKey = logged.map { case (k, v) => key(k) -> v }
    new GenericInternalRow(schema.fields.map { f =>
      val value = byKey.getOrElse(
        key(f.name),
        throw SluiceError.sourceFault(
          s"${ParquetConfig.Context}: the table's metadata gives file '$file' no value of " +
            s"partition column '${f.name}' (it gives ${logged.keys.mkString(", ")}): the table's " +
            "partition columns changed since the file was planned. Read the table on a new checkpoint."))
      value.filter(_.nonEmpty) match {
        case None => null
        case Some(v) if f.dataType == StringType => UTF8String.fromString(v)
        case Some(v) =>
          try typed(f, v)
          catch {
            case NonFatal(e) =>
              throw SluiceError.sourceFault(
                s"${ParquetConfig.Context}: the table's metadata gives file '$file' partition " +
                  s"value '$v' of column '${f.name}', which is not a ${f.dataType.sql}, the " +
                  s"column's type in the table's schema. (${e.getMessage})",
                e)
          }
      }
    })
  }

  /**
   * `value` as a value of `f`'s type, by Spark's own conversion, a decimal then at the column's
   * scale: Spark's gives a decimal the scale of its text ('1.5' is 1.5, not the 1.50 of a
   * DECIMAL(10,2)), and its vectorized reader fills a partition column from the unscaled digits,
   * so `spark.read.parquet` reads 0.15 there (its row reader 1.50). A value with more fractional
   * digits than the column takes, or too many digits, is refused rather than rounded.
   */
  private def typed(f: StructField, value: String): Any =
    (PartitioningUtils.castPartValueToDesiredType(f.dataType, value, zone), f.dataType) match {
      case (d: Decimal, t: DecimalType) =>
        val scaled = d.toJavaBigDecimal.setScale(t.scale, java.math.RoundingMode.UNNECESSARY)
        if (scaled.precision > t.precision)
          throw new ArithmeticException(
            s"$value has more than ${t.precision} digits at scale ${t.scale}")
        Decimal(scaled, t.precision, t.scale)
      case (other, _) => other
    }

  def valuesOf(file: String): InternalRow = {
    if (schema.isEmpty) return InternalRow.empty
    val raw = mutable.Map[String, String]()
    var dir = new Path(file).getParent
    while (dir != null && !roots.contains(dir) && dir.getName.contains('=')) {
      val name = dir.getName
      val eq = name.indexOf('=')
      // the innermost directory of a column wins, as in Spark's path parsing
      raw.getOrElseUpdate(
        key(ExternalCatalogUtils.unescapePathName(name.substring(0, eq))),
        name.substring(eq + 1))
      dir = dir.getParent
    }
    new GenericInternalRow(schema.fields.map { f =>
      val value = raw.getOrElse(
        key(f.name),
        throw SluiceError.sourceFault(s"${ParquetConfig.Context}: file " +
          s"'$file' is not under a '${f.name}=<value>' directory, but '${f.name}' is a partition column of this source " +
          s"(found when the source was defined, from its paths). Keep files of one source in one directory layout."))
      try typed(f, value)
      catch {
        case NonFatal(e) =>
          throw SluiceError.sourceFault(
            s"${ParquetConfig.Context}: file '$file' is under " +
              s"'${f.name}=$value', which is not a ${f.dataType.sql}, the type of partition column '${f.name}' (inferred " +
              "from the directories found when the source was defined, or given in its schema). Give the column a " +
              s"type every value fits (option 'schema', e.g. STRING). (${e.getMessage})",
            e)
      }
    })
  }
}
