package sluice.compat

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path, StandardCopyOption}

import scala.jdk.CollectionConverters._

import org.apache.avro.Schema
import org.apache.avro.file.{CodecFactory, DataFileReader, DataFileWriter}
import org.apache.avro.generic.{GenericDatumReader, GenericDatumWriter, GenericRecord}
import org.apache.avro.util.Utf8
import org.apache.hadoop.conf.Configuration
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile

/**
 * The tables a fixture keeps in its input folder, moved with it. A Delta log names its data files
 * relative to the table, but Iceberg's metadata names every file by absolute path: the metadata
 * file (JSON) its manifest lists, a manifest list (Avro) its manifests and their lengths, a
 * manifest (Avro) its data files. Kept in the checkout, those paths hold the input placeholder, as
 * a kept checkpoint does; restored, the folder the suite reads.
 */
object FixtureTables {

  /**
   * Replaces `from` with `to` in every path a table under `dir` names: in its JSON files as text,
   * in its Avro files record by record (manifests first, then the manifest lists, given each
   * manifest's new length: Iceberg reads a manifest as long as its list says).
   */
  def rewritePaths(dir: Path, from: String, to: String): Unit = {
    val files = Files.walk(dir).iterator().asScala.filter(Files.isRegularFile(_)).toSeq
    files.filter(_.getFileName.toString.endsWith(".json")).foreach { f =>
      val text = new String(Files.readAllBytes(f), UTF_8)
      if (text.contains(from)) Files.write(f, text.replace(from, to).getBytes(UTF_8))
    }
    val (lists, manifests) = files
      .filter(_.getFileName.toString.endsWith(".avro"))
      .partition(_.getFileName.toString.startsWith("snap-"))
    manifests.foreach(rewriteAvro(_, from, to, _ => ()))
    val lengths = manifests.map(m => m.getFileName.toString -> Files.size(m)).toMap
    lists.foreach(
      rewriteAvro(
        _,
        from,
        to,
        { list =>
          val manifest = list.get("manifest_path").toString
          list.put("manifest_length", lengths(manifest.substring(manifest.lastIndexOf('/') + 1)))
        }))
  }

  /** Rewrites `file`'s strings, then `edit`s each record, keeping its schema, codec and metadata. */
  private def rewriteAvro(
      file: Path,
      from: String,
      to: String,
      edit: GenericRecord => Unit): Unit = {
    val reader =
      new DataFileReader[GenericRecord](file.toFile, new GenericDatumReader[GenericRecord]())
    val rewritten = file.resolveSibling(file.getFileName.toString + ".rewritten")
    try {
      val schema = reader.getSchema
      val writer =
        new DataFileWriter[GenericRecord](new GenericDatumWriter[GenericRecord](schema))
      Option(reader.getMetaString("avro.codec")).foreach(c =>
        writer.setCodec(CodecFactory.fromString(c)))
      reader.getMetaKeys.asScala
        .filterNot(_.startsWith("avro."))
        .foreach(k => writer.setMeta(k, reader.getMeta(k)))
      writer.create(schema, rewritten.toFile)
      try
        reader.iterator().asScala.foreach { r =>
          val record = replace(r, schema, from, to).asInstanceOf[GenericRecord]
          edit(record)
          writer.append(record)
        }
      finally writer.close()
    } finally reader.close()
    Files.move(rewritten, file, StandardCopyOption.REPLACE_EXISTING)
  }

  private def replace(value: Any, schema: Schema, from: String, to: String): Any =
    (value, schema.getType) match {
      case (null, _) => null
      case (s: CharSequence, _) => new Utf8(s.toString.replace(from, to))
      case (r: GenericRecord, _) =>
        r.getSchema.getFields.asScala.foreach(f =>
          r.put(f.pos, replace(r.get(f.pos), f.schema, from, to)))
        r
      case (a: java.util.List[_], Schema.Type.ARRAY) =>
        val items = new java.util.ArrayList[Any]()
        a.asScala.foreach(v => items.add(replace(v, schema.getElementType, from, to)))
        items
      case (m: java.util.Map[_, _], Schema.Type.MAP) =>
        val entries = new java.util.HashMap[Any, Any]()
        m.asScala.foreach { case (k, v) =>
          entries.put(
            replace(k, Schema.create(Schema.Type.STRING), from, to),
            replace(v, schema.getValueType, from, to))
        }
        entries
      case (v, Schema.Type.UNION) =>
        val branch = schema.getTypes.asScala
          .find(s => s.getType != Schema.Type.NULL && matches(v, s))
          .getOrElse(schema.getTypes.asScala.last)
        replace(v, branch, from, to)
      case (v, _) => v // numbers, booleans, bytes (statistics' bounds), fixed, enums
    }

  private def matches(value: Any, schema: Schema): Boolean = (value, schema.getType) match {
    case (_: GenericRecord, Schema.Type.RECORD) => true
    case (_: java.util.List[_], Schema.Type.ARRAY) => true
    case (_: java.util.Map[_, _], Schema.Type.MAP) => true
    case (_: CharSequence, Schema.Type.STRING) => true
    case (
          _: GenericRecord | _: java.util.List[_] | _: java.util.Map[_, _] | _: CharSequence,
          _) =>
      false
    case _ => true
  }

  /** The data files (Parquet) under `dir`, each with its rows and the smallest value of `column`. */
  def dataFiles(dir: Path, column: String): Seq[(Path, Long, Long)] =
    Files
      .walk(dir)
      .iterator()
      .asScala
      .filter(f => Files.isRegularFile(f) && f.getFileName.toString.endsWith(".parquet"))
      .toSeq
      .map { f =>
        val reader = ParquetFileReader.open(
          HadoopInputFile.fromPath(new org.apache.hadoop.fs.Path(f.toUri), new Configuration()))
        try {
          val blocks = reader.getFooter.getBlocks.asScala
          val min = blocks
            .flatMap(_.getColumns.asScala.filter(_.getPath.toDotString == column))
            .map(_.getStatistics.genericGetMin.asInstanceOf[java.lang.Long].longValue)
            .min
          (f, blocks.map(_.getRowCount).sum, min)
        } finally reader.close()
      }
}
