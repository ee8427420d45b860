"""Builders of lakehouse table sources; each mirrors its Scala builder (snake_case here, camelCase
there) and collects the same options, named as the JVM declares them (sluice._options)."""

from __future__ import annotations

from collections.abc import Mapping

from sluice._durations import Duration, millis
from sluice._options import declared
from sluice.sources import Source, _Builder

_ICEBERG = declared("iceberg")


class IcebergSource(Source):
    """A snapshot of an Iceberg table, planned by Iceberg's own library, its Parquet data files read
    as :class:`FileSource` reads Parquet (row-group splits, exact restarts). See docs/connectors.md.

    Examples
    --------
    >>> source = IcebergSource.builder().table("/tables/events").timestamp_column("ts").build()
    """

    @staticmethod
    def builder() -> IcebergSourceBuilder:
        """A builder of an Iceberg source.

        Returns
        -------
        IcebergSourceBuilder
            An empty builder (the table's current snapshot once a table is given).

        Examples
        --------
        >>> IcebergSource.builder().table("/tables/events").build()
        """
        return IcebergSourceBuilder()


class IcebergSourceBuilder(_Builder["IcebergSourceBuilder"]):
    """Builds an :class:`IcebergSource`; each method sets one option and returns the builder.

    Examples
    --------
    >>> IcebergSource.builder().table("/tables/events").snapshot_id(4113486218424958061)
    """

    _source_type = "iceberg"
    _source_class = IcebergSource

    def table(self, location: str) -> IcebergSourceBuilder:
        """The table: its directory (a Hadoop table) or a metadata file of it.

        Parameters
        ----------
        location : str
            A table directory with ``metadata/version-hint.text``, or a ``.metadata.json`` file
            (a catalog's current one, e.g. pyiceberg's ``table.metadata_location``).

        Returns
        -------
        IcebergSourceBuilder

        Examples
        --------
        >>> IcebergSource.builder().table("s3a://warehouse/db/events")
        """
        return self._set(self._key("table"), location)

    def catalog(self, name: str, properties: Mapping[str, str]) -> IcebergSourceBuilder:
        """Reads :meth:`table` from an Iceberg catalog given by its properties.

        The table is then named by its identifier in that catalog (``namespace.name``). The
        catalog is built by Iceberg's ``CatalogUtil.buildIcebergCatalog`` from these properties,
        as Spark's Iceberg catalogs are (``spark.sql.catalog.<name>.<property>``); its own jars
        (a JDBC driver) go on the class path with ``--packages``. Values are secret: ``repr``,
        query progress, ``explain()`` and error messages never show them.

        Parameters
        ----------
        name : str
            The catalog's name, as it was created with (a JDBC catalog keys its tables by it).
        properties : Mapping[str, str]
            Iceberg catalog properties, each set as option ``catalog.<property>``: ``type``
            (``jdbc``, ``hadoop``, ``hive``, ``rest``) or ``catalog-impl``, ``uri``, ``warehouse``...

        Returns
        -------
        IcebergSourceBuilder

        Examples
        --------
        >>> IcebergSource.builder().catalog(
        ...     "lake", {"type": "jdbc", "uri": "jdbc:sqlite:/data/catalog.db"}
        ... ).table("db.events")
        """
        self._set(self._key("catalogName"), name)
        for key, value in properties.items():
            self._set(_ICEBERG["catalog.<property>"].fill(property=key), value)
        return self

    def catalog_timeout(self, timeout: Duration) -> IcebergSourceBuilder:
        """With :meth:`catalog`: how long building the catalog, and loading the table from it, may
        each take, when the source is built and at every plan (default 60 s).

        Past it the read fails, naming the catalog, the table and the option
        (``catalogTimeoutMs``); a catalog library's own time-outs may be longer, or none.

        Parameters
        ----------
        timeout : datetime.timedelta or int
            A ``timedelta``, or milliseconds.

        Returns
        -------
        IcebergSourceBuilder

        Examples
        --------
        >>> IcebergSource.builder().catalog("lake", {"type": "rest", "uri": "https://catalog"}).table(
        ...     "db.events"
        ... ).catalog_timeout(timedelta(seconds=30))
        """
        return self._set(self._key("catalogTimeoutMs"), millis(timeout, "timeout"))

    def snapshot_id(self, snapshot_id: int) -> IcebergSourceBuilder:
        """The snapshot to read (default: the table's current one when the source is built).

        Parameters
        ----------
        snapshot_id : int
            An id of the table's snapshots.

        Returns
        -------
        IcebergSourceBuilder

        Examples
        --------
        >>> IcebergSource.builder().snapshot_id(4113486218424958061)
        """
        return self._set(self._key("snapshotId"), snapshot_id)

    def as_of_timestamp(self, epoch_ms: int) -> IcebergSourceBuilder:
        """Reads the snapshot that was current at a time.

        Parameters
        ----------
        epoch_ms : int
            The time, in milliseconds since the epoch.

        Returns
        -------
        IcebergSourceBuilder

        Examples
        --------
        >>> IcebergSource.builder().as_of_timestamp(1767225600000)
        """
        return self._set(self._key("asOfTimestamp"), epoch_ms)

    def timestamp_column(self, column: str) -> IcebergSourceBuilder:
        """The column whose value is a record's event time.

        Each data file's minimum and maximum of it in the table's metadata are the event-time
        index: planning opens no data file, and under watermark alignment files are read in
        event-time order. Files without those statistics are indexed by their Parquet footers,
        after a warning that says what to set.

        Parameters
        ----------
        column : str
            A ``timestamptz`` or epoch-milliseconds ``long`` column of the table.

        Returns
        -------
        IcebergSourceBuilder

        Examples
        --------
        >>> IcebergSource.builder().timestamp_column("ts")
        """
        return self._set(self._key("timestampColumn"), column)

    def ignore_missing_files(self, ignore: bool = True) -> IcebergSourceBuilder:
        """Skips data files that no longer exist (counted), instead of failing.

        Parameters
        ----------
        ignore : bool, default True
            Whether to skip them.

        Returns
        -------
        IcebergSourceBuilder

        Examples
        --------
        >>> IcebergSource.builder().ignore_missing_files()
        """
        return self._set(self._key("ignoreMissingFiles"), ignore)

    def monitor_interval(self, interval: Duration) -> IcebergSourceBuilder:
        """Makes the source unbounded: the snapshots committed after the start one are planned at
        this interval and the data files their appends added are read.

        A snapshot that deletes or rewrites rows (overwrite, delete) fails the query, naming it,
        unless :meth:`skip_changes`; a compaction (``replace``) is skipped. See docs/connectors.md.

        Parameters
        ----------
        interval : datetime.timedelta or int
            A ``timedelta``, or milliseconds.

        Returns
        -------
        IcebergSourceBuilder

        Examples
        --------
        >>> IcebergSource.builder().table("/tables/events").monitor_interval(timedelta(seconds=10))
        """
        return self._set(self._key("monitorIntervalMs"), millis(interval, "interval"))

    def skip_changes(self, skip: bool = True) -> IcebergSourceBuilder:
        """With :meth:`monitor_interval`: skips snapshots that delete or rewrite rows, instead of failing.

        A skipped snapshot is skipped whole, the rows it adds too (as Iceberg's own Spark source
        skips them); rows it deletes that were read stay read.

        Parameters
        ----------
        skip : bool, default True
            Whether to skip them.

        Returns
        -------
        IcebergSourceBuilder

        Examples
        --------
        >>> IcebergSource.builder().monitor_interval(timedelta(seconds=10)).skip_changes()
        """
        return self._set(self._key("skipChanges"), skip)


class DeltaSource(Source):
    """A version of a Delta table, planned by Delta Kernel, its Parquet data files read as
    :class:`FileSource` reads Parquet (row-group splits, exact restarts). See docs/connectors.md.

    Examples
    --------
    >>> source = DeltaSource.builder().table("/tables/events").timestamp_column("ts").build()
    """

    @staticmethod
    def builder() -> DeltaSourceBuilder:
        """A builder of a Delta source.

        Returns
        -------
        DeltaSourceBuilder
            An empty builder (the table's latest version once a table is given).

        Examples
        --------
        >>> DeltaSource.builder().table("/tables/events").build()
        """
        return DeltaSourceBuilder()


class DeltaSourceBuilder(_Builder["DeltaSourceBuilder"]):
    """Builds a :class:`DeltaSource`; each method sets one option and returns the builder.

    Examples
    --------
    >>> DeltaSource.builder().table("/tables/events").version_as_of(3)
    """

    _source_type = "delta"
    _source_class = DeltaSource

    def table(self, location: str) -> DeltaSourceBuilder:
        """The table: its directory, the one holding ``_delta_log/``.

        Parameters
        ----------
        location : str
            A Delta table's directory (a local path or any file system Hadoop reads, e.g. ``s3a://``).

        Returns
        -------
        DeltaSourceBuilder

        Examples
        --------
        >>> DeltaSource.builder().table("s3a://warehouse/events")
        """
        return self._set(self._key("table"), location)

    def version_as_of(self, version: int) -> DeltaSourceBuilder:
        """The version to read (default: the table's latest when the source is built).

        Parameters
        ----------
        version : int
            A version the table's log still keeps.

        Returns
        -------
        DeltaSourceBuilder

        Examples
        --------
        >>> DeltaSource.builder().version_as_of(3)
        """
        return self._set(self._key("versionAsOf"), version)

    def as_of_timestamp(self, epoch_ms: int) -> DeltaSourceBuilder:
        """Reads the version that was current at a time.

        Parameters
        ----------
        epoch_ms : int
            The time, in milliseconds since the epoch.

        Returns
        -------
        DeltaSourceBuilder

        Examples
        --------
        >>> DeltaSource.builder().as_of_timestamp(1767225600000)
        """
        return self._set(self._key("asOfTimestamp"), epoch_ms)

    def timestamp_column(self, column: str) -> DeltaSourceBuilder:
        """The column whose value is a record's event time.

        Each data file's minimum and maximum of it in the table's metadata are the event-time
        index: planning opens no data file, and under watermark alignment files are read in
        event-time order. Files without those statistics are indexed by their Parquet footers,
        after a warning that says what to set.

        Parameters
        ----------
        column : str
            A ``timestamp`` or epoch-milliseconds ``long`` data column of the table.

        Returns
        -------
        DeltaSourceBuilder

        Examples
        --------
        >>> DeltaSource.builder().timestamp_column("ts")
        """
        return self._set(self._key("timestampColumn"), column)

    def ignore_missing_files(self, ignore: bool = True) -> DeltaSourceBuilder:
        """Skips data files that no longer exist (counted), instead of failing.

        Parameters
        ----------
        ignore : bool, default True
            Whether to skip them.

        Returns
        -------
        DeltaSourceBuilder

        Examples
        --------
        >>> DeltaSource.builder().ignore_missing_files()
        """
        return self._set(self._key("ignoreMissingFiles"), ignore)

    def monitor_interval(self, interval: Duration) -> DeltaSourceBuilder:
        """Makes the source unbounded: the versions committed after the start one are planned at
        this interval and the files their appends added are read.

        A version that removes rows (DELETE, UPDATE, MERGE, an overwrite, deletion vectors) fails
        the query, naming it, unless :meth:`skip_changes`; one that only rewrites files
        (OPTIMIZE) is skipped. See docs/connectors.md.

        Parameters
        ----------
        interval : datetime.timedelta or int
            A ``timedelta``, or milliseconds.

        Returns
        -------
        DeltaSourceBuilder

        Examples
        --------
        >>> DeltaSource.builder().table("/tables/events").monitor_interval(timedelta(seconds=10))
        """
        return self._set(self._key("monitorIntervalMs"), millis(interval, "interval"))

    def skip_changes(self, skip: bool = True) -> DeltaSourceBuilder:
        """With :meth:`monitor_interval`: skips versions that remove rows, instead of failing.

        A skipped version is skipped whole, the rows it adds too (as Delta's own ``skipChangeCommits``
        does); rows it deletes that were read stay read.

        Parameters
        ----------
        skip : bool, default True
            Whether to skip them.

        Returns
        -------
        DeltaSourceBuilder

        Examples
        --------
        >>> DeltaSource.builder().monitor_interval(timedelta(seconds=10)).skip_changes()
        """
        return self._set(self._key("skipChanges"), skip)
