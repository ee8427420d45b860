"""Typed source builders. Each mirrors its Scala builder (snake_case here, camelCase there) and
collects the same options, named as the JVM declares them (sluice._options); `build()` validates
them with the JVM builder when a classic SparkSession is active, so a bad value fails at once with
the JVM's message."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from sluice._durations import Duration, legacy_millis, millis, renamed
from sluice._jvm import active_classic_session, call_jvm, driver_jvm, java_map
from sluice._options import RULES, TYPE_OPTION, declared, shown

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

B = TypeVar("B", bound="_Builder[Any]")


class Source:
    """A built source: its options are all it is (they rebuild it on the JVM side).

    Built by a builder (``GeneratorSource.builder()``, ``FileSource.builder()``,
    ``KafkaSource.builder()``, ``HybridSource.builder(first)``) and read by
    :func:`sluice.from_source` or :func:`sluice.read`.

    Parameters
    ----------
    options : dict of str to str
        The options of ``format("sluice")``, ``source`` (the type) included.

    Examples
    --------
    >>> source = sluice.GeneratorSource.builder().splits(2).records_per_split(10).build()
    >>> source.source_type
    'generator'
    """

    def __init__(self, options: dict[str, str]) -> None:
        self._options = dict(options)

    @property
    def options(self) -> dict[str, str]:
        """The options that describe this source, as ``format("sluice")`` takes them."""
        return dict(self._options)

    @property
    def source_type(self) -> str:
        """The source's type, as the option ``source`` names it (``kafka``, ``file``, ...)."""
        return self._options[TYPE_OPTION]

    def __repr__(self) -> str:
        # values of options the JVM declares secret (Kafka consumer properties) are masked
        pairs = ", ".join(f"{k}={shown(k, v)}" for k, v in sorted(self._options.items()))
        return f"{type(self).__name__}({pairs})"


class _Builder(Generic[B]):
    _source_type: str = ""
    _source_class: type[Source] = Source

    def __init__(self) -> None:
        self._options: dict[str, str] = {TYPE_OPTION: self._source_type}

    @classmethod
    def _key(cls, name: str) -> str:
        """An option's name as the JVM declares it for this source type (KeyError if it does not)."""
        return declared(cls._source_type)[name].name

    def _set(self: B, name: str, value: Any) -> B:
        self._options[name] = str(value).lower() if isinstance(value, bool) else str(value)
        return self

    def option(self: B, name: str, value: Any) -> B:
        """Sets any option by its documented (camelCase) name.

        Parameters
        ----------
        name : str
            The option's name as docs/options.md lists it, e.g. ``"maxSplitBytes"``.
        value : Any
            Its value; booleans are written ``true``/``false``, anything else with ``str()``.

        Returns
        -------
        The builder, for chaining.

        Examples
        --------
        >>> sluice.KafkaSource.builder().option("kafka.bootstrap.servers", "broker:9092")
        """
        return self._set(name, value)

    def build(self) -> Source:
        """The source, its options checked.

        With a classic SparkSession active, the JVM builds the source from the options and refuses
        a bad value with its own message; otherwise (Spark Connect, no session yet) the integer
        ranges and the rules that combine options are checked here in the JVM's words.

        Returns
        -------
        Source
            The built source.

        Raises
        ------
        SluiceConfigError
            An option is missing, unknown in its place, or has a value not allowed.

        Examples
        --------
        >>> source = sluice.GeneratorSource.builder().splits(4).build()
        """
        self._validate(self._options)
        return self._source_class(self._options)

    def _validate(self, options: dict[str, str]) -> None:
        spark = active_classic_session()
        if spark is not None:
            # built only to validate: the options are the source (from_source reads them)
            jmap = java_map(spark, options)
            jvm = driver_jvm(spark)
            call_jvm(lambda: jvm.sluice.Sources.fromJavaOptions(jmap))
        else:
            # no JVM to ask (Spark Connect, or no session yet): the integer ranges the options
            # declare and the rules that combine them are checked here, worded as the JVM words
            # them; the server checks everything when the query starts
            self._check_declared_ranges()
            for declared_rule in RULES.get(self._source_type, {}).values():
                declared_rule.check_early(self._options, self._source_class.__name__)

    def _check_declared_ranges(self) -> None:
        options = declared(self._source_type)
        for key, value in self._options.items():
            if key in options and options[key].integers:
                options[key].check_early(value, self._source_class.__name__, key)


class GeneratorSource(Source):
    """Deterministic records (id, split, timestamp, payload) over N splits; see docs/connectors.md.

    Examples
    --------
    >>> source = GeneratorSource.builder().splits(4).records_per_split(1000).build()
    >>> df = sluice.from_source(spark, source, name="numbers")
    """

    @staticmethod
    def builder() -> GeneratorSourceBuilder:
        """A builder of a generator source.

        Returns
        -------
        GeneratorSourceBuilder
            An empty builder (one split, unbounded).

        Examples
        --------
        >>> GeneratorSource.builder().splits(2).records_per_split(10).build()
        """
        return GeneratorSourceBuilder()


class GeneratorSourceBuilder(_Builder["GeneratorSourceBuilder"]):
    """Builds a :class:`GeneratorSource`; each method sets one option and returns the builder.

    Examples
    --------
    >>> GeneratorSource.builder().splits(4).rows_per_second(100).event_time_step(timedelta(seconds=1))
    """

    _source_type = "generator"
    _source_class = GeneratorSource

    def splits(self, n: int) -> GeneratorSourceBuilder:
        """Number of splits (parallel record streams).

        Parameters
        ----------
        n : int
            1 to 100000.

        Returns
        -------
        GeneratorSourceBuilder

        Examples
        --------
        >>> GeneratorSource.builder().splits(4)
        """
        return self._set(self._key("splits"), n)

    def records_per_split(self, n: int) -> GeneratorSourceBuilder:
        """Records in each split; makes the source bounded.

        Parameters
        ----------
        n : int
            Records per split.

        Returns
        -------
        GeneratorSourceBuilder

        Examples
        --------
        >>> GeneratorSource.builder().records_per_split(1000)
        """
        return self._set(self._key("recordsPerSplit"), n)

    def rows_per_second(self, n: int) -> GeneratorSourceBuilder:
        """Records per second and split that become available (unbounded sources).

        Parameters
        ----------
        n : int
            Records per second and split.

        Returns
        -------
        GeneratorSourceBuilder

        Examples
        --------
        >>> GeneratorSource.builder().rows_per_second(100)
        """
        return self._set(self._key("rowsPerSecond"), n)

    def event_time_start_ms(self, ms: int) -> GeneratorSourceBuilder:
        """The event time of each split's first record (a point in time, not a duration).

        Parameters
        ----------
        ms : int
            Milliseconds since the epoch.

        Returns
        -------
        GeneratorSourceBuilder

        Examples
        --------
        >>> GeneratorSource.builder().event_time_start_ms(1_700_000_000_000)
        """
        return self._set(self._key("eventTimeStartMs"), ms)

    def event_time_step(self, step: Duration) -> GeneratorSourceBuilder:
        """How far in event time each record of a split is after the one before.

        Parameters
        ----------
        step : datetime.timedelta or int
            A ``timedelta``, or milliseconds.

        Returns
        -------
        GeneratorSourceBuilder

        Examples
        --------
        >>> GeneratorSource.builder().event_time_step(timedelta(seconds=1))
        """
        return self._set(self._key("eventTimeStepMs"), millis(step, "step"))

    def event_time_step_ms(self, ms: int) -> GeneratorSourceBuilder:
        """Deprecated alias of :meth:`event_time_step` (removed in the next release).

        Parameters
        ----------
        ms : int
            Milliseconds.

        Returns
        -------
        GeneratorSourceBuilder

        Examples
        --------
        >>> GeneratorSource.builder().event_time_step(1000)  # instead of event_time_step_ms(1000)
        """
        renamed("event_time_step_ms", "event_time_step")
        return self.event_time_step(legacy_millis(ms))

    def split_skew(self, split: int, offset: Duration) -> GeneratorSourceBuilder:
        """Shifts one split's event times (call again for other splits).

        Parameters
        ----------
        split : int
            The split's index.
        offset : datetime.timedelta or int
            A ``timedelta`` or milliseconds; negative: the split lags behind.

        Returns
        -------
        GeneratorSourceBuilder

        Examples
        --------
        >>> GeneratorSource.builder().splits(2).split_skew(1, timedelta(hours=-1))
        """
        key = self._key("splitSkewMs")
        previous = self._options.get(key)
        pair = f"{split}:{millis(offset, 'offset', negative=True)}"
        return self._set(key, f"{previous},{pair}" if previous else pair)

    def split_skew_ms(self, split: int, offset_ms: int) -> GeneratorSourceBuilder:
        """Deprecated alias of :meth:`split_skew` (removed in the next release).

        Parameters
        ----------
        split : int
            The split's index.
        offset_ms : int
            Milliseconds; negative: the split lags behind.

        Returns
        -------
        GeneratorSourceBuilder

        Examples
        --------
        >>> GeneratorSource.builder().split_skew(1, -3_600_000)  # instead of split_skew_ms
        """
        renamed("split_skew_ms", "split_skew")
        return self.split_skew(split, legacy_millis(offset_ms))

    def payload_bytes(self, n: int) -> GeneratorSourceBuilder:
        """Size of each record's ``payload`` column.

        Parameters
        ----------
        n : int
            Bytes.

        Returns
        -------
        GeneratorSourceBuilder

        Examples
        --------
        >>> GeneratorSource.builder().payload_bytes(100)
        """
        return self._set(self._key("payloadBytes"), n)


class FileSource(Source):
    """JSON, CSV or text lines from files, parsed as ``spark.read.json/csv/text`` parse them; or
    Parquet files (``format("parquet")``), read by Spark's own Parquet reader, one split per row
    group. See docs/connectors.md.

    Examples
    --------
    >>> source = (FileSource.builder().path("/archive/events").format("json")
    ...           .schema("id BIGINT, ts TIMESTAMP").timestamp_column("ts").build())
    """

    @staticmethod
    def builder() -> FileSourceBuilder:
        """A builder of a file source.

        Returns
        -------
        FileSourceBuilder
            An empty builder (format ``json``).

        Examples
        --------
        >>> FileSource.builder().path("/archive/events").format("parquet").build()
        """
        return FileSourceBuilder()


class FileSourceBuilder(_Builder["FileSourceBuilder"]):
    """Builds a :class:`FileSource`; each method sets one option and returns the builder.

    Examples
    --------
    >>> FileSource.builder().path("/landing").format("csv").schema("a INT").monitor_interval(timedelta(seconds=10))
    """

    _source_type = "file"
    _source_class = FileSource

    def path(self, path: str) -> FileSourceBuilder:
        """Adds a file, directory or glob (call again to add more).

        Parameters
        ----------
        path : str
            A path Hadoop's file systems understand (``s3a://``, ``hdfs://``, local).

        Returns
        -------
        FileSourceBuilder

        Examples
        --------
        >>> FileSource.builder().path("/archive/events/2024/*")
        """
        return self.paths(path)

    def paths(self, *paths: str) -> FileSourceBuilder:
        """Adds files, directories or globs.

        Parameters
        ----------
        *paths : str
            Paths, as :meth:`path` takes them.

        Returns
        -------
        FileSourceBuilder

        Examples
        --------
        >>> FileSource.builder().paths("/archive/2023", "/archive/2024")
        """
        key = self._key("path")
        previous = [p for p in [self._options.get(key)] if p]
        return self._set(key, ",".join(previous + list(paths)))

    def format(self, fmt: str) -> FileSourceBuilder:
        """The files' format.

        Parameters
        ----------
        fmt : str
            ``json`` (default), ``csv``, ``text`` or ``parquet``.

        Returns
        -------
        FileSourceBuilder

        Examples
        --------
        >>> FileSource.builder().format("parquet")
        """
        return self._set(self._key("format"), fmt)

    def schema(self, schema: StructType | str) -> FileSourceBuilder:
        """The rows' schema; optional for parquet (read from the files' footers, as
        ``spark.read.parquet`` does).

        Parameters
        ----------
        schema : pyspark.sql.types.StructType or str
            A ``StructType``, or a DDL string such as ``"a INT, b STRING"``.

        Returns
        -------
        FileSourceBuilder

        Examples
        --------
        >>> FileSource.builder().schema("id BIGINT, user STRING, ts TIMESTAMP")
        """
        return self._set(self._key("schema"), schema if isinstance(schema, str) else schema.json())

    def timestamp_column(self, column: str) -> FileSourceBuilder:
        """The column whose value is a record's event time.

        Parameters
        ----------
        column : str
            A TIMESTAMP or epoch-milliseconds BIGINT column.

        Returns
        -------
        FileSourceBuilder

        Examples
        --------
        >>> FileSource.builder().timestamp_column("ts")
        """
        return self._set(self._key("timestampColumn"), column)

    def monitor_interval(self, interval: Duration) -> FileSourceBuilder:
        """Lists the paths again at this interval for new files; makes the source unbounded.

        Parameters
        ----------
        interval : datetime.timedelta or int
            A ``timedelta``, or milliseconds.

        Returns
        -------
        FileSourceBuilder

        Examples
        --------
        >>> FileSource.builder().monitor_interval(timedelta(seconds=10))
        """
        return self._set(self._key("monitorIntervalMs"), millis(interval, "interval"))

    def monitor_interval_ms(self, ms: int) -> FileSourceBuilder:
        """Deprecated alias of :meth:`monitor_interval` (removed in the next release).

        Parameters
        ----------
        ms : int
            Milliseconds.

        Returns
        -------
        FileSourceBuilder

        Examples
        --------
        >>> FileSource.builder().monitor_interval(10_000)  # instead of monitor_interval_ms(10_000)
        """
        renamed("monitor_interval_ms", "monitor_interval")
        return self.monitor_interval(legacy_millis(ms))

    def ignore_missing_files(self, ignore: bool = True) -> FileSourceBuilder:
        """A file gone between listing and reading is skipped and counted, instead of failing.

        Parameters
        ----------
        ignore : bool, default True

        Returns
        -------
        FileSourceBuilder

        Examples
        --------
        >>> FileSource.builder().ignore_missing_files()
        """
        return self._set(self._key("ignoreMissingFiles"), ignore)

    def ignore_changed_files(self, ignore: bool = True) -> FileSourceBuilder:
        """A file changed after it was listed has its unread part skipped and counted, instead of
        failing the query (files must be complete when they appear: write, then rename).

        Parameters
        ----------
        ignore : bool, default True

        Returns
        -------
        FileSourceBuilder

        Examples
        --------
        >>> FileSource.builder().ignore_changed_files()
        """
        return self._set(self._key("ignoreChangedFiles"), ignore)

    def max_split_bytes(self, n: int) -> FileSourceBuilder:
        """Files larger than this are read as several byte-range splits (line formats; Parquet
        files are split by row group).

        Parameters
        ----------
        n : int
            Bytes.

        Returns
        -------
        FileSourceBuilder

        Examples
        --------
        >>> FileSource.builder().max_split_bytes(128 * 1024 * 1024)
        """
        return self._set(self._key("maxSplitBytes"), n)

    def max_open_compressed_files(self, n: int) -> FileSourceBuilder:
        """Per executor, how many compressed files a batch that stopped inside them leaves open
        for the next batch, which then reads on instead of decompressing from the start.

        Parameters
        ----------
        n : int
            Files; 0 keeps none open.

        Returns
        -------
        FileSourceBuilder

        Examples
        --------
        >>> FileSource.builder().max_open_compressed_files(8)
        """
        return self._set(self._key("maxOpenCompressedFiles"), n)

    def open_compressed_file_idle(self, idle: Duration) -> FileSourceBuilder:
        """How long a compressed file left open waits for the next batch before it is closed;
        keep it above the trigger interval.

        Parameters
        ----------
        idle : datetime.timedelta or int
            A ``timedelta``, or milliseconds.

        Returns
        -------
        FileSourceBuilder

        Examples
        --------
        >>> FileSource.builder().open_compressed_file_idle(timedelta(minutes=5))
        """
        return self._set(self._key("openCompressedFileIdleMs"), millis(idle, "idle"))

    def open_compressed_file_idle_ms(self, ms: int) -> FileSourceBuilder:
        """Deprecated alias of :meth:`open_compressed_file_idle` (removed in the next release).

        Parameters
        ----------
        ms : int
            Milliseconds.

        Returns
        -------
        FileSourceBuilder

        Examples
        --------
        >>> FileSource.builder().open_compressed_file_idle(300_000)
        """
        renamed("open_compressed_file_idle_ms", "open_compressed_file_idle")
        return self.open_compressed_file_idle(legacy_millis(ms))

    def not_ready_timeout(self, timeout: Duration) -> FileSourceBuilder:
        """Monitored: how long a file found but not readable yet (still being written in place)
        may stay unchanged before it fails the query.

        Parameters
        ----------
        timeout : datetime.timedelta or int
            A ``timedelta``, or milliseconds.

        Returns
        -------
        FileSourceBuilder

        Examples
        --------
        >>> FileSource.builder().not_ready_timeout(timedelta(minutes=10))
        """
        return self._set(self._key("notReadyTimeoutMs"), millis(timeout, "timeout"))

    def not_ready_timeout_ms(self, ms: int) -> FileSourceBuilder:
        """Deprecated alias of :meth:`not_ready_timeout` (removed in the next release).

        Parameters
        ----------
        ms : int
            Milliseconds.

        Returns
        -------
        FileSourceBuilder

        Examples
        --------
        >>> FileSource.builder().not_ready_timeout(600_000)
        """
        renamed("not_ready_timeout_ms", "not_ready_timeout")
        return self.not_ready_timeout(legacy_millis(ms))

    def merge_schema(self, merge: bool = True) -> FileSourceBuilder:
        """Parquet: merge the schema from every file's footer, as Spark's ``mergeSchema``.

        Parameters
        ----------
        merge : bool, default True

        Returns
        -------
        FileSourceBuilder

        Examples
        --------
        >>> FileSource.builder().format("parquet").merge_schema()
        """
        return self._set(self._key("mergeSchema"), merge)
