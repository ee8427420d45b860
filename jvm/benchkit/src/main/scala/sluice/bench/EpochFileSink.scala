package sluice.bench

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path, Paths, StandardCopyOption}

import org.apache.spark.sql.{ForeachWriter, Row}

/**
 * A foreach sink that records batch ids, for the chaos runs of long-running modes (real-time
 * mode, continuous processing), whose only sinks are foreach-like: each task writes the `id`
 * column of its rows to `<dir>/<epoch>/<partition>`, replacing what an earlier attempt of the same
 * epoch and partition wrote. A replayed epoch therefore counts once; the checker reads only epochs
 * the query's commit log holds, so an epoch cut by a kill counts only once replayed.
 */
final class EpochFileSink(dir: String) extends ForeachWriter[Row] {
  @transient private var out: java.io.BufferedWriter = _
  @transient private var tmp: Path = _
  @transient private var target: Path = _

  override def open(partitionId: Long, epochId: Long): Boolean = {
    val epochDir = Paths.get(dir, epochId.toString)
    Files.createDirectories(epochDir)
    target = epochDir.resolve(partitionId.toString)
    tmp = epochDir.resolve(s".$partitionId.${java.util.UUID.randomUUID()}.tmp")
    out = Files.newBufferedWriter(tmp, UTF_8)
    true
  }

  override def process(row: Row): Unit = {
    out.write(row.getAs[String]("id"))
    out.write('\n')
  }

  override def close(errorOrNull: Throwable): Unit = if (out != null) {
    out.close()
    if (errorOrNull == null)
      Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE)
    else Files.deleteIfExists(tmp)
  }
}
