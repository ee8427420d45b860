package sluice.connector.table.delta

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import io.delta.kernel.CommitActions
import io.delta.kernel.data.ColumnVector
import io.delta.kernel.internal.DeltaLogActionUtils.DeltaAction
import io.delta.kernel.internal.actions.{AddFile, RemoveFile}
import io.delta.kernel.internal.data.StructRow

/**
 * What one commit of a Delta table did to its rows, from its `add`, `remove` and `commitInfo`
 * actions as Kernel reads them: the files it added with a data change, whether it removed any
 * with one (or added a deletion vector), and its operation as the writer named it.
 */
private[delta] final case class DeltaCommit(
    added: Seq[AddFile],
    removesData: Boolean,
    operation: String)

private[delta] object DeltaCommit {

  /** The commit's actions, read whole (Kernel gives them as column batches). */
  def of(commit: CommitActions): DeltaCommit = {
    val added = mutable.ArrayBuffer[AddFile]()
    var removesData = false
    var operation: Option[String] = None
    val batches = commit.getActions
    try
      batches.asScala.foreach { batch =>
        def column(action: DeltaAction): Option[ColumnVector] =
          Option(batch.getSchema.indexOf(action.colName))
            .filter(_ >= 0)
            .map(at => batch.getColumnVector(at))
        val adds = column(DeltaAction.ADD)
        val removes = column(DeltaAction.REMOVE)
        val infos = column(DeltaAction.COMMITINFO)
        (0 until batch.getSize).foreach { i =>
          adds.filterNot(_.isNullAt(i)).foreach { v =>
            val add = new AddFile(StructRow.fromStructVector(v, i))
            // dataChange=false: OPTIMIZE, compaction, a purge: the same rows in other files
            if (add.getDataChange) {
              added += add
              if (add.getDeletionVector.isPresent) removesData = true
            }
          }
          removes.filterNot(_.isNullAt(i)).foreach { v =>
            if (new RemoveFile(StructRow.fromStructVector(v, i)).getDataChange) removesData = true
          }
          infos.filterNot(_.isNullAt(i)).foreach { v =>
            val info = StructRow.fromStructVector(v, i)
            val at = info.getSchema.indexOf("operation")
            if (at >= 0 && !info.isNullAt(at)) operation = Some(info.getString(at))
          }
        }
      }
    finally batches.close()
    DeltaCommit(added.toSeq, removesData, operation.getOrElse("no commitInfo"))
  }
}
