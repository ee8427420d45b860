package sluice.connector.file

import java.io.FileNotFoundException

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import com.fasterxml.jackson.databind.node.ArrayNode
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import sluice.api._

/**
 * A file the enumerator has found and turned into splits. `deleted` and `statistics` are what a
 * table's metadata says of a data file it planned (`sluice.connector.table`); files listed from a
 * directory have neither. Neither is kept in the enumerator's state: a known file makes no split
 * again, and the splits it made carry what they need. A table's file also has its `entry`, which
 * is kept.
 */
final case class DiscoveredFile(
    path: String,
    length: Long,
    modificationTime: Long,
    /**
     * Rows of the file its table says are deleted (Iceberg position deletes, deletion vectors),
     * which its splits never give.
     */
    deleted: Option[DeletedRows] = None,
    /** The file's rows and event-time range from the table's metadata: its split needs no footer. */
    statistics: Option[FileStatistics] = None,
    /**
     * Which of its table's entries of this path the file is (`snapshot=<id>`, `version=<v>`: of
     * a file of the first plan, the snapshot or version that plan read whole; of one planned
     * later, the commit that added it), since a table may hold one path more than once (an Iceberg
     * snapshot appending a file an earlier one appended, a Delta version adding a path removed
     * before): each entry is read, and planned again it is known. None for a listed file, and for
     * a table's file in a checkpoint of a Sluice that did not keep it.
     */
    entry: Option[String] = None,
    /**
     * The file's partition values as its table's metadata records them, by partition column
     * (None: null), in the format's text (a Delta log's `partitionValues`), read instead of the
     * file's `name=value` directories: where a table lays its files out in other directories
     * (Delta's column mapping). None: from the directories.
     */
    partitionValues: Option[Map[String, Option[String]]] = None,
    /**
     * Values its table's metadata fixes for every row of the file in data columns, by the
     * column's Parquet field id, as `FileConstants` writes them (an Iceberg identity partition's
     * value), read instead of what the file holds there.
     */
    constants: Map[Int, Option[String]] = Map.empty) {

  /** What the enumerator knows the file by: its path, and the table's entry of it if any. */
  def key: (String, Option[String]) = (path, entry)
}

/**
 * A data file's rows and its smallest and largest value of the event-time column in epoch
 * milliseconds, as a table's metadata records them (None: every value is null). The range may
 * be wider than the file's values, never narrower: it is the file's event-time index.
 */
final case class FileStatistics(rows: Long, eventTimes: Option[(Long, Long)])

/** Every file found so far, so that a restarted or monitoring enumerator adds only new ones. */
final case class FileEnumeratorState(files: Seq[DiscoveredFile], listed: Boolean)

/**
 * Lists the paths on the driver: once for a bounded source, every `monitorIntervalMs` when
 * monitoring. New files become splits in a deterministic order (path, then start byte).
 *
 * A compressed file is one split whose positions are offsets in its decompressed stream; it is
 * decompressed once when found, to learn where they end. Monitored, one that cannot be
 * decompressed to its end yet (written in place) is left for a later listing (`NotReadyFiles`).
 *
 * With a `timestampColumn`, it can tell where a range starts in event time (its first record's),
 * for alignment; positions are bytes, so it has no index to cut ranges at a time.
 */
final class FileEnumerator(
    config: FileConfig,
    restored: FileEnumeratorState,
    hadoopConf: () => Configuration,
    clock: () => Long)
    extends SplitEnumerator[FileSplit, FileEnumeratorState]
    with SupportsStartEventTime[FileSplit] {

  private val known = mutable.LinkedHashMap[String, DiscoveredFile]()
  restored.files.foreach(f => known(f.path) = f)
  private var listed = restored.listed
  private var lastListingMs = Long.MinValue
  private val notReady = new NotReadyFiles(
    FileConfig.Context,
    config.monitorIntervalMs.isDefined,
    clock,
    config.notReadyTimeoutMs)

  override def discoverSplits(): Seq[FileSplit] = {
    val due = config.monitorIntervalMs match {
      case None => !listed
      case Some(interval) => lastListingMs == Long.MinValue || clock() - lastListingMs >= interval
    }
    if (!due) return Nil
    // A bounded source needs its paths to exist; a monitored one may wait for them.
    val found =
      FileListing.list(
        config.paths,
        hadoopConf(),
        mustExist = config.monitorIntervalMs.isEmpty,
        config.listing)
    lastListingMs = clock()
    listed = true
    notReady.retainFound(found)
    val fresh = found
      .filterNot(f => known.contains(f.path) || notReady.unchangedSinceFailure(f))
      .sortBy(_.path)
    val measured = decompressedLengths(fresh)
    val kept = fresh.filter { f =>
      measured.get(f.path) match {
        case None => true // not compressed
        // vanished before it was measured: not found (ignoreMissingFiles, or monitored: never read)
        case Some(Right(length)) => length.isDefined
        // a compressed file written in place is cut short until its writer is done: monitored, it
        // is tried again at the next listings (NotReadyFiles says until when)
        case Some(Left(e)) =>
          !notReady.retryLater(
            f,
            s"could not decompress file '${f.path}' (${codecName(f)})",
            "it is corrupt or truncated",
            e)
      }
    }
    kept.foreach { f => known(f.path) = f; notReady.ready(f.path) }
    kept.flatMap(f => splitsOf(f, measured.get(f.path).flatMap(_.toOption).flatten))
  }

  /**
   * The decompressed length of each compressed file, where its positions end: each is
   * decompressed once here, on the driver (a compressed stream does not say its length), a few at
   * a time (decompressing is CPU-bound). Right(None) for a file that vanished; Left for one that
   * cannot be decompressed to its end.
   */
  private def decompressedLengths(
      files: Seq[DiscoveredFile]): Map[String, Either[Throwable, Option[Long]]] = {
    val conf = hadoopConf()
    val compressed = files.filter(f => Compression.codecOf(new Path(f.path), conf).isDefined)
    val threads = Runtime.getRuntime.availableProcessors()
    val monitored = config.monitorIntervalMs.isDefined
    ListedFileReads
      .inParallel(compressed, threads, "sluice-file-decompressed-length") { f =>
        // no compressed format is empty: a writer created it and has not written yet
        if (monitored && f.length == 0) throw new java.io.EOFException("the file is empty")
        Compression.decompressedLength(new Path(f.path), conf, f.length, f.modificationTime)
      }
      .map { case (f, length) =>
        // a file that vanished before it was ever read, while monitored, is simply not found
        if (length == Right(None) && !config.ignoreMissingFiles && !monitored) {
          throw new FileNotFoundException(
            s"FileSource: file '${f.path}' was listed but no longer exists. Set option " +
              s"'ignoreMissingFiles' to true to skip such files.")
        }
        f.path -> length
      }
      .toMap
  }

  private def codecName(f: DiscoveredFile): String =
    Compression
      .codecOf(new Path(f.path), hadoopConf())
      .map(_.getClass.getSimpleName)
      .getOrElse("?")

  /** A compressed file is one split (it cannot be entered mid-way), whatever its length. */
  private def splitsOf(f: DiscoveredFile, decompressedLength: Option[Long]): Seq[FileSplit] =
    if (decompressedLength.isDefined) {
      Seq(
        FileSplit(
          f.path,
          0L,
          decompressedLength.get,
          f.length,
          f.modificationTime,
          compressed = true))
    } else if (f.length <= config.maxSplitBytes)
      Seq(FileSplit(f.path, 0L, f.length, f.length, f.modificationTime))
    else
      (0L until f.length by config.maxSplitBytes).map { start =>
        FileSplit(
          f.path,
          start,
          math.min(start + config.maxSplitBytes, f.length),
          f.length,
          f.modificationTime)
      }

  override def availablePositions(splits: Seq[(FileSplit, Long)]): Map[String, Long] =
    splits.map { case (s, _) => s.splitId -> s.end }.toMap

  override def noMoreSplits: Boolean = config.monitorIntervalMs.isEmpty && listed

  /** Monitored: how many files are left out of listings until they can be decompressed (`filesNotReady`). */
  override def metrics: Map[String, String] = notReady.metrics

  override def firstEventTimes(ranges: Seq[SplitRange[FileSplit]]): Map[String, Long] =
    if (config.timestampColumn.isEmpty) Map.empty
    else
      ranges.filterNot(_.isEmpty).flatMap(r => firstEventTime(r).map(r.split.splitId -> _)).toMap

  /**
   * Reads the range's first records with the source's own reader until one has an event time.
   * (It leaves compressed files their executors keep open: in local mode they share this JVM.)
   */
  private def firstEventTime(range: SplitRange[FileSplit]): Option[Long] = {
    val reader = new FileReader(config, ReaderContext(), hadoopConf, keepFilesOpen = false)
    try {
      reader.handleSplitsChanges(Seq(range))
      var looked = 0
      var finished = false
      while (!finished && looked < FileEnumerator.RecordsToFindStartTime) {
        val batch = reader.fetch()
        while (batch.nextSplit() != null) {
          while (looked < FileEnumerator.RecordsToFindStartTime && batch.nextRecord()) {
            looked += 1
            if (batch.eventTime != RecordsWithSplitIds.NoTimestamp) return Some(batch.eventTime)
          }
        }
        finished = batch.finishedSplits.nonEmpty
      }
      None
    } finally reader.close()
  }

  override def snapshotState(): FileEnumeratorState =
    FileEnumeratorState(known.values.toSeq, listed)

  /** Adds the files read (a JSON array of paths) and their count for the next source of a hybrid. */
  override def endState(finished: Seq[SplitProgress]): EnumeratorEndState = {
    val files = FileEnumeratorStateSerializer.mapper.createArrayNode()
    known.keys.toSeq.sorted.foreach(p => files.add(p))
    EnumeratorEndState(
      finished,
      Map("files" -> files.toString, "fileCount" -> known.size.toString))
  }
}

private[file] object FileEnumeratorStateSerializer
    extends VersionedSerializer[FileEnumeratorState] {
  override val version: Int = 1
  val mapper = new ObjectMapper()

  override def serialize(state: FileEnumeratorState): String = {
    val root = mapper.createObjectNode()
    root.put("listed", state.listed)
    val files = root.putArray("files")
    state.files.foreach { f =>
      files
        .addObject()
        .put("path", f.path)
        .put("length", f.length)
        .put("modificationTime", f.modificationTime)
    }
    mapper.writeValueAsString(root)
  }

  override def deserialize(version: Int, text: String): FileEnumeratorState = {
    if (version > this.version) {
      throw VersionedSerializer.unsupported("file enumerator state", version, this.version)
    }
    val root = mapper.readTree(text)
    val files = root
      .get("files")
      .asInstanceOf[ArrayNode]
      .elements()
      .asScala
      .map { n =>
        DiscoveredFile(
          n.get("path").asText,
          n.get("length").asLong,
          n.get("modificationTime").asLong)
      }
      .toSeq
    FileEnumeratorState(files, root.get("listed").asBoolean)
  }
}

private object FileEnumerator {

  /** Records looked at, at most, to find where a range starts in event time. */
  val RecordsToFindStartTime = 1000
}
