package sluice.connector.file

/** The keys the file enumerators report in query progress (declared by these names in the binding). */
object FileMetrics {

  /** Monitored files found but not readable yet (`NotReadyFiles`), and an Iceberg table's newest metadata files not settled. */
  val FilesNotReady = "filesNotReady"
}
