package sluice.connector.file

import java.io.{FileNotFoundException, InputStream}

import scala.collection.mutable

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FSDataInputStream, Path}
import org.apache.hadoop.io.compress.CompressionCodec
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.unsafe.types.UTF8String

import sluice.api.{PausableSplitReader, ReaderContext, RecordsWithSplitIds, SplitRange}
import sluice.config.RecordLayout
import sluice.connector.format.Provenance
import sluice.errors.SluiceError

/**
 * Reads split ranges one after the other: a range `[from, until)` yields the rows of every line
 * that starts in it, parsed by the shared payload parser, followed by the provenance columns.
 * A compressed file is decompressed through Spark's codec for it; positions are offsets in the
 * decompressed stream. A range that starts past its beginning takes up the file where the range
 * before it left it open (`OpenDecompressedFiles`), else decompresses up to there.
 * Counts per split the records dropped as malformed, a missing file skipped and each time a
 * compressed file is decompressed from its start (`compressedFileOpens`: once per file when every
 * range takes it up where the last one left it). A paused range
 * (FLIP-217) is set aside, still open, and the next one is read meanwhile.
 */
final class FileReader(
    config: FileConfig,
    context: ReaderContext,
    hadoopConf: () => Configuration,
    /** Takes up and leaves open compressed files between ranges: readers of tasks, not the driver's look-ups. */
    keepFilesOpen: Boolean = true)
    extends PausableSplitReader[FileSplit] {
  import FileReader._

  private val parser = config.payload.newParser()
  // One configuration per reader, not per file (the source's builds a copy of Hadoop's defaults)
  private lazy val conf: Configuration = hadoopConf()
  private val appender = new Provenance.Appender
  private val tsIndex = config.timestampIndex
  private val tsMillis = config.timestampIsMillis
  private val pending = mutable.Queue[SplitRange[FileSplit]]()
  private val compact = context.recordLayout == RecordLayout.Compact
  private var current: Cursor = _

  /** Splits paused by alignment (FLIP-217), and the open ranges set aside while paused. */
  private val paused = mutable.Set[String]()
  private val parked = mutable.LinkedHashMap[String, Cursor]()

  /** An open range: where its lines are, and the dropped-record count when it was opened. */
  private final class Cursor(val range: SplitRange[FileSplit]) {
    val split: FileSplit = range.split
    val id: UTF8String = UTF8String.fromString(split.splitId)
    val mtimeMicros: Long = split.modificationTime * 1000L
    // The parser is shared: count what it dropped while this range was the one being read.
    private var droppedBefore = 0L
    private var baseline = parser.malformedDropped
    private var reading = true
    private var stream: InputStream = _

    /** Spark's codec for a compressed file: positions are then in its decompressed stream. */
    private val codec: Option[CompressionCodec] =
      if (split.compressed)
        Some(
          Compression
            .codecOf(new Path(split.path), conf)
            .getOrElse(throw SluiceError.sourceFault(
              s"FileSource: '${split.path}' was listed as compressed, but no codec " +
                "decompresses it now: the Hadoop configuration (io.compression.codecs) changed since it was listed.")))
      else None
    var lines: LineReader = _
    var done = false
    var missing = 0L
    var changed = 0L

    /** 1 when this range opened its compressed file at the start (did not take it up where left open). */
    var opened = 0L

    /** Start of the csv header line of this file, if this range holds it; -1 otherwise. */
    var headerStart = -1L

    locally {
      try {
        val path = new Path(split.path)
        if (changedSinceListing()) done = true
        else if (split.compressed && keepFilesOpen && range.from > 0 && resumeOpen()) ()
        else {
          stream = open(path)
          if (split.compressed) opened = 1L
          if (config.payload.hasHeader) headerStart = findHeader(path)
        }
        if (done || lines != null) ()
        else if (range.from > 0) {
          decompressing {
            stream match {
              case seekable: FSDataInputStream => seekable.seek(range.from - 1)
              case decompressed =>
                Compression.discard(decompressed, range.from - 1) // no way into it but through it
            }
            lines = new LineReader(stream, range.from - 1)
            lines.skipToLineStartAfterPreviousByte()
          }
        } else {
          lines = new LineReader(stream, 0L)
        }
      } catch {
        case e: FileNotFoundException =>
          close()
          if (!config.ignoreMissingFiles) {
            throw new FileNotFoundException(
              s"FileSource: file '${split.path}' was listed but no " +
                "longer exists. Set option 'ignoreMissingFiles' to true to skip such files (they " +
                s"are counted as $MissingFilesSkipped). (${e.getMessage})")
          }
          missing = 1L
          done = true
      }
    }

    /** Takes up the compressed file where the range before this one left it open, if it did. */
    private def resumeOpen(): Boolean = OpenDecompressedFiles.take(split, range.from) match {
      case Some(parked) =>
        stream = parked.stream
        lines = parked.lines
        headerStart = parked.headerStart
        true
      case None => false
    }

    /** The file's bytes, decompressed if it is compressed. */
    private def open(path: Path): InputStream = {
      val raw = path.getFileSystem(conf).open(path, BufferBytes)
      codec.fold[InputStream](raw)(c => decompressing(Compression.decompress(path, raw, c)))
    }

    /** Reading a compressed file fails on a corrupt or truncated one: the error names the file. */
    private def decompressing[T](read: => T): T = codec match {
      case None => read
      case Some(c) =>
        try read
        catch {
          case e: FileNotFoundException => throw e
          case e @ (_: java.io.IOException | _: RuntimeException) =>
            throw Compression.unreadable(split.path, c, e)
        }
    }

    // The header is the first line Spark's csv reader does not skip; it may precede `from`.
    private def findHeader(path: Path): Long = {
      val in = open(path)
      try
        decompressing {
          val r = new LineReader(in, 0L, 8192)
          var header = -1L
          while (header < 0 && r.next())
            if (!parser.skipsLine(r.bytes, r.offset, r.length)) header = r.lineStart
          header
        }
      finally in.close()
    }

    /**
     * Whether the file is no longer what was listed (length or modification time): positions
     * were planned on the listed bytes, and a file still being written would give half lines.
     * An error, or with `ignoreChangedFiles` the unread part is skipped and counted.
     */
    private def changedSinceListing(): Boolean = {
      val changedNow = ListedFileCheck.changed(
        "FileSource",
        split.path,
        split.fileLength,
        split.modificationTime,
        config.ignoreChangedFiles,
        conf)
      if (changedNow) changed = 1L
      changedNow
    }

    /** Moves to the next line of the range; false once the range is read. */
    def nextLine(): Boolean = {
      if (done) return false
      val rangeRead = lines.position >= range.until
      // (no closure per line for plain files)
      if (rangeRead || !(if (codec.isEmpty) lines.next() else decompressing(lines.next()))) {
        done = true
        // the next batch reads on from here: a compressed file is kept open for it
        if (rangeRead && split.compressed && keepFilesOpen && config.maxOpenCompressedFiles > 0 &&
          range.until < split.end) {
          OpenDecompressedFiles.park(
            split,
            range.until,
            new OpenDecompressedFiles.Parked(stream, lines, headerStart),
            config.maxOpenCompressedFiles,
            config.openCompressedFileIdleMs)
          stream = null
        }
        close()
        // the file's last range: the lines read up to its end must have been the listed ones
        // (a file removed once read is fine)
        if (split.endsFile && range.until >= split.end) {
          try changedSinceListing()
          catch { case _: FileNotFoundException => false }
        }
        return false
      }
      true
    }

    def dropped: Long = droppedBefore + (if (reading) parser.malformedDropped - baseline else 0L)

    /** Set aside while paused: what was dropped so far stays with this range. */
    def park(): Unit = { droppedBefore = dropped; reading = false }
    def resume(): Unit = { baseline = parser.malformedDropped; reading = true }

    def close(): Unit = if (stream != null) { stream.close(); stream = null }
  }

  override def handleSplitsChanges(ranges: Seq[SplitRange[FileSplit]]): Unit = pending ++= ranges

  override def fetch(): RecordsWithSplitIds = {
    var finished = Set.empty[String]
    if (current != null && current.done) {
      finish(current)
      finished = Set(current.split.splitId)
      current = null
    }
    if (current != null && paused.contains(current.split.splitId)) {
      current.park()
      parked(current.split.splitId) = current // keeps its place in the file
      current = null
    }
    if (current == null) current = nextUnpaused()
    if (current == null) RecordsWithSplitIds.empty(finished) else new Batch(current, finished)
  }

  /** A resumed range first (it is open already), else the next range not paused. */
  private def nextUnpaused(): Cursor =
    parked
      .find { case (id, _) => !paused.contains(id) }
      .map { case (id, c) => parked.remove(id); c.resume(); c }
      .orElse(pending.dequeueFirst(r => !paused.contains(r.split.splitId)).map(new Cursor(_)))
      .orNull

  override def pauseOrResumeSplits(toPause: Seq[FileSplit], toResume: Seq[FileSplit]): Unit = {
    // Splits this reader does not own (any more) are ignored, never an error (FLINK-39728).
    val owned =
      pending.map(_.split.splitId).toSet ++ parked.keySet ++ Option(current).map(_.split.splitId)
    paused ++= toPause.map(_.splitId).filter(owned.contains)
    paused --= toResume.map(_.splitId)
  }

  private def finish(c: Cursor): Unit = {
    c.close()
    context.count(c.split.splitId, MalformedRecordsDropped, c.dropped)
    context.count(c.split.splitId, MissingFilesSkipped, c.missing)
    context.count(c.split.splitId, ChangedFilesSkipped, c.changed)
    if (c.split.compressed) context.count(c.split.splitId, CompressedFileOpens, c.opened)
  }

  override def close(): Unit = {
    if (current != null) { current.close() }
    parked.values.foreach(_.close())
    parked.clear()
    pending.clear()
  }

  /** Up to `LinesPerFetch` lines of one range, parsed lazily as the engine pulls records. */
  private final class Batch(c: Cursor, override val finishedSplits: Set[String])
      extends RecordsWithSplitIds {
    private var splitGiven = false
    private var budget = LinesPerFetch
    private var rows: Iterator[InternalRow] = Iterator.empty
    private var lineStart = 0L
    private var current: InternalRow = _
    private var ts = RecordsWithSplitIds.NoTimestamp

    override def nextSplit(): String =
      if (splitGiven) null
      else {
        splitGiven = true
        if (!compact) appender.split(c.id)
        c.split.splitId
      }

    override def nextRecord(): Boolean = {
      while (!rows.hasNext) {
        if (budget <= 0 || !c.nextLine()) return false
        budget -= 1
        val l = c.lines
        lineStart = l.lineStart
        if (lineStart == c.headerStart) {
          parser.checkHeader(l.bytes, l.offset, l.length, s"CSV file: ${c.split.path}")
        } else {
          rows = parser.parse(l.bytes, l.offset, l.length, c.split.splitId, lineStart)
        }
      }
      val data = rows.next()
      if (compact) current = data
      else {
        ts = eventTime(data)
        current = appender(data, lineStart, c.mtimeMicros, hasTimestamp = true)
      }
      true
    }

    private def eventTime(data: InternalRow): Long =
      if (tsIndex < 0 || data.isNullAt(tsIndex)) RecordsWithSplitIds.NoTimestamp
      else if (tsMillis) data.getLong(tsIndex)
      else Math.floorDiv(data.getLong(tsIndex), 1000L)

    override def row: InternalRow = current
    override def eventTime: Long = ts
    override def arrivalTime: Long = c.mtimeMicros / 1000L
    override def position: Long = c.lines.position
    override def recordHasMoreRows: Boolean = rows.hasNext
  }
}

object FileReader {
  val MalformedRecordsDropped: String = sluice.api.ReaderCounters.MalformedRecordsDropped
  val MissingFilesSkipped: String = sluice.api.ReaderCounters.MissingFilesSkipped
  val ChangedFilesSkipped: String = sluice.api.ReaderCounters.ChangedFilesSkipped
  val CompressedFileOpens: String = sluice.api.ReaderCounters.CompressedFileOpens
  private val LinesPerFetch = 8192
  private val BufferBytes = 64 * 1024
}
