package sluice.spark

import java.nio.charset.StandardCharsets

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import sluice.api.SplitProgress

/**
 * Persists the progress readers reported, next to the source's checkpoint, once a batch is
 * committed. Without it a driver that dies after a batch but before the next offset is written
 * would forget what that batch read (DESIGN.md, "the executor feedback is part of the state").
 */
final class ProgressStore(metadataPath: String, hadoopConf: Configuration) {
  private val file = new Path(metadataPath, "sluice-progress.json")
  private val mapper = new ObjectMapper()

  def write(progress: Seq[SplitProgress]): Unit = {
    val root = mapper.createObjectNode()
    root.put("version", 1)
    val splits = root.putArray("splits")
    progress.foreach { p =>
      val n = splits.addObject()
      n.put("id", p.splitId)
      n.put("position", p.position)
      p.maxEventTime.foreach(n.put("maxEventTime", _))
      n.put("records", p.records)
      val counters = n.putObject("counters")
      p.counters.foreach { case (k, v) => counters.put(k, v) }
    }
    val fs = file.getFileSystem(hadoopConf)
    val tmp = new Path(metadataPath, s".sluice-progress-${java.util.UUID.randomUUID()}.tmp")
    val out = fs.create(tmp, true)
    try out.write(mapper.writeValueAsString(root).getBytes(StandardCharsets.UTF_8)) finally out.close()
    fs.delete(file, false)
    if (!fs.rename(tmp, file)) throw new java.io.IOException(s"Sluice: could not write $file")
  }

  def read(): Seq[SplitProgress] = {
    val fs = file.getFileSystem(hadoopConf)
    if (!fs.exists(file)) return Nil
    val in = fs.open(file)
    val root = try mapper.readTree(in) finally in.close()
    root.get("splits").elements().asScala.map { n =>
      val counters = Option(n.get("counters")).toSeq.flatMap(_.properties().asScala.map(f => f.getKey -> f.getValue.asLong))
      SplitProgress(n.get("id").asText, n.get("position").asLong,
        Option(n.get("maxEventTime")).map(_.asLong), n.get("records").asLong, counters.toMap)
    }.toSeq
  }
}
