package sluice.connector.file.parquet

import java.time.ZoneId

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.execution.datasources.PartitioningUtils

import sluice.errors.SluiceError

/**
 * The partition values of a file from its Hive-style directories (`.../date=2026-11-01/hour=7/`),
 * read as Spark reads them once it knows the partition columns' types: the directories between
 * the file and its root, each value converted by Spark's own `castPartValueToDesiredType`
 * (`__HIVE_DEFAULT_PARTITION__` is null).
 */
private[parquet] final class PartitionDirectories(config: ParquetConfig) {
  private val schema = config.partitionSchema
  private val roots = config.partitionRoots.map(new Path(_)).toSet
  private val zone = ZoneId.of(config.timeZoneId, ZoneId.SHORT_IDS)
  private def key(name: String) = if (config.caseSensitive) name else name.toLowerCase

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
      try PartitioningUtils.castPartValueToDesiredType(f.dataType, value, zone)
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
