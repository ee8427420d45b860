"""Typed source builders. Each mirrors its Scala builder (snake_case here, camelCase there) and
collects the same options, named as the JVM declares them (sluice._options); `build()` validates
them with the JVM builder when a classic SparkSession is active, so a bad value fails at once with
the JVM's message."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from sluice._jvm import active_classic_session, call_jvm, java_map
from sluice._options import RULES, TYPE_OPTION, declared, shown

B = TypeVar("B", bound="_Builder")


class Source:
    """A built source: its options are all it is (they rebuild it on the JVM side)."""

    def __init__(self, options: dict[str, str]) -> None:
        self._options = dict(options)

    @property
    def options(self) -> dict[str, str]:
        """The options that describe this source, as ``format("sluice")`` takes them."""
        return dict(self._options)

    @property
    def source_type(self) -> str:
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
        """Sets any option by its documented (camelCase) name."""
        return self._set(name, value)

    def build(self) -> Source:
        self._validate(self._options)
        return self._source_class(self._options)

    def _validate(self, options: dict[str, str]) -> None:
        spark = active_classic_session()
        if spark is not None:
            # built only to validate: the options are the source (from_source reads them)
            jmap = java_map(spark, options)
            call_jvm(lambda: spark._jvm.sluice.Sources.fromJavaOptions(jmap))  # noqa: SLF001
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
    """Deterministic records (id, split, timestamp, payload) over N splits; see docs/connectors.md."""

    @staticmethod
    def builder() -> GeneratorSourceBuilder:
        return GeneratorSourceBuilder()


class GeneratorSourceBuilder(_Builder["GeneratorSourceBuilder"]):
    _source_type = "generator"
    _source_class = GeneratorSource

    def splits(self, n: int) -> GeneratorSourceBuilder:
        """Number of splits (parallel record streams), 1 to 100000."""
        return self._set(self._key("splits"), n)

    def records_per_split(self, n: int) -> GeneratorSourceBuilder:
        """Records in each split; makes the source bounded."""
        return self._set(self._key("recordsPerSplit"), n)

    def rows_per_second(self, n: int) -> GeneratorSourceBuilder:
        """Records per second and split that become available (unbounded sources)."""
        return self._set(self._key("rowsPerSecond"), n)

    def event_time_start_ms(self, ms: int) -> GeneratorSourceBuilder:
        return self._set(self._key("eventTimeStartMs"), ms)

    def event_time_step_ms(self, ms: int) -> GeneratorSourceBuilder:
        return self._set(self._key("eventTimeStepMs"), ms)

    def split_skew_ms(self, split: int, offset_ms: int) -> GeneratorSourceBuilder:
        """Shifts one split's event times by ``offset_ms`` (negative: it lags behind)."""
        key = self._key("splitSkewMs")
        previous = self._options.get(key)
        pair = f"{split}:{offset_ms}"
        return self._set(key, f"{previous},{pair}" if previous else pair)

    def payload_bytes(self, n: int) -> GeneratorSourceBuilder:
        return self._set(self._key("payloadBytes"), n)


class FileSource(Source):
    """JSON, CSV or text lines from files, parsed as ``spark.read.json/csv/text`` parse them; or
    Parquet files (``format("parquet")``), read by Spark's own Parquet reader, one split per row
    group."""

    @staticmethod
    def builder() -> FileSourceBuilder:
        return FileSourceBuilder()


class FileSourceBuilder(_Builder["FileSourceBuilder"]):
    _source_type = "file"
    _source_class = FileSource

    def path(self, path: str) -> FileSourceBuilder:
        """Adds a file, directory or glob (call again to add more)."""
        return self.paths(path)

    def paths(self, *paths: str) -> FileSourceBuilder:
        key = self._key("path")
        previous = [p for p in [self._options.get(key)] if p]
        return self._set(key, ",".join(previous + list(paths)))

    def format(self, fmt: str) -> FileSourceBuilder:
        """``json`` (default), ``csv``, ``text`` or ``parquet``."""
        return self._set(self._key("format"), fmt)

    def schema(self, schema: Any) -> FileSourceBuilder:
        """A DDL string (``"a INT, b STRING"``) or a ``pyspark.sql.types.StructType``; optional for
        parquet (read from the files' footers, as ``spark.read.parquet`` does)."""
        return self._set(self._key("schema"), schema if isinstance(schema, str) else schema.json())

    def timestamp_column(self, column: str) -> FileSourceBuilder:
        """A TIMESTAMP or epoch-milliseconds BIGINT column whose value is the event time."""
        return self._set(self._key("timestampColumn"), column)

    def monitor_interval_ms(self, ms: int) -> FileSourceBuilder:
        """Lists the paths again at this interval for new files; makes the source unbounded."""
        return self._set(self._key("monitorIntervalMs"), ms)

    def ignore_missing_files(self, ignore: bool = True) -> FileSourceBuilder:
        """A file gone between listing and reading is skipped and counted, instead of failing."""
        return self._set(self._key("ignoreMissingFiles"), ignore)

    def ignore_changed_files(self, ignore: bool = True) -> FileSourceBuilder:
        """A file changed after it was listed has its unread part skipped and counted, instead of
        failing the query (files must be complete when they appear: write, then rename)."""
        return self._set(self._key("ignoreChangedFiles"), ignore)

    def max_split_bytes(self, n: int) -> FileSourceBuilder:
        """Files larger than this are read as several byte-range splits (line formats; Parquet
        files are split by row group)."""
        return self._set(self._key("maxSplitBytes"), n)

    def max_open_compressed_files(self, n: int) -> FileSourceBuilder:
        """Per executor, how many compressed files a batch that stopped inside them leaves open
        for the next batch, which then reads on instead of decompressing from the start (0: none)."""
        return self._set(self._key("maxOpenCompressedFiles"), n)

    def open_compressed_file_idle_ms(self, ms: int) -> FileSourceBuilder:
        """How long a compressed file left open waits for the next batch before it is closed;
        keep it above the trigger interval."""
        return self._set(self._key("openCompressedFileIdleMs"), ms)

    def not_ready_timeout_ms(self, ms: int) -> FileSourceBuilder:
        """Monitored: how long a file found but not readable yet (still being written in place)
        may stay unchanged before it fails the query."""
        return self._set(self._key("notReadyTimeoutMs"), ms)

    def merge_schema(self, merge: bool = True) -> FileSourceBuilder:
        """Parquet: merge the schema from every file's footer, as Spark's ``mergeSchema``."""
        return self._set(self._key("mergeSchema"), merge)
