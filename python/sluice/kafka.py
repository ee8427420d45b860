"""The Kafka source builder, mirroring ``sluice.connector.kafka.KafkaSource.builder()`` in Scala."""

from __future__ import annotations

import json

from sluice._durations import Duration, legacy_millis, millis, renamed
from sluice._options import declared, rule
from sluice.sources import Source, _Builder


class OffsetsInitializer:
    """Where partitions start or stop, as Spark's Kafka source options express it (Flink's
    ``OffsetsInitializer``); made by the static methods, given to
    :meth:`KafkaSourceBuilder.starting_offsets` and :meth:`KafkaSourceBuilder.stopping_offsets`.

    Parameters
    ----------
    option : str
        ``offsets``, ``timestamp`` or ``timestamps``: which kind of position.
    value : str
        The position, as Spark's option takes it.

    Examples
    --------
    >>> KafkaSource.builder().starting_offsets(OffsetsInitializer.earliest())
    """

    def __init__(self, option: str, value: str) -> None:
        self.option = option
        self.value = value

    @staticmethod
    def earliest() -> OffsetsInitializer:
        """Every partition at its first record still stored.

        Returns
        -------
        OffsetsInitializer

        Examples
        --------
        >>> OffsetsInitializer.earliest()
        OffsetsInitializer(offsets=earliest)
        """
        return OffsetsInitializer("offsets", "earliest")

    @staticmethod
    def latest() -> OffsetsInitializer:
        """Every partition at its end when the query starts (as a stop: when it is planned).

        Returns
        -------
        OffsetsInitializer

        Examples
        --------
        >>> OffsetsInitializer.latest()
        OffsetsInitializer(offsets=latest)
        """
        return OffsetsInitializer("offsets", "latest")

    @staticmethod
    def offsets(offsets: dict[tuple[str, int], int]) -> OffsetsInitializer:
        """Given offsets per partition.

        Parameters
        ----------
        offsets : dict of (str, int) to int
            Offset per ``(topic, partition)``; -2 means earliest, -1 latest.

        Returns
        -------
        OffsetsInitializer

        Examples
        --------
        >>> OffsetsInitializer.offsets({("events", 0): 42, ("events", 1): -2})
        OffsetsInitializer(offsets={"events":{"0":42,"1":-2}})
        """
        return OffsetsInitializer("offsets", _per_partition_json(offsets))

    @staticmethod
    def timestamp(timestamp_ms: int) -> OffsetsInitializer:
        """Every partition at its first record with a timestamp at or after ``timestamp_ms``.

        Parameters
        ----------
        timestamp_ms : int
            Milliseconds since the epoch (a point in time).

        Returns
        -------
        OffsetsInitializer

        Examples
        --------
        >>> OffsetsInitializer.timestamp(1_700_000_000_000)
        OffsetsInitializer(timestamp=1700000000000)
        """
        return OffsetsInitializer("timestamp", str(int(timestamp_ms)))

    @staticmethod
    def timestamps(timestamps: dict[tuple[str, int], int]) -> OffsetsInitializer:
        """A timestamp per partition.

        Parameters
        ----------
        timestamps : dict of (str, int) to int
            Milliseconds since the epoch per ``(topic, partition)``.

        Returns
        -------
        OffsetsInitializer

        Examples
        --------
        >>> OffsetsInitializer.timestamps({("events", 0): 1_700_000_000_000})
        OffsetsInitializer(timestamps={"events":{"0":1700000000000}})
        """
        return OffsetsInitializer("timestamps", _per_partition_json(timestamps))

    def __repr__(self) -> str:
        return f"OffsetsInitializer({self.option}={self.value})"


def _per_partition_json(values: dict[tuple[str, int], int]) -> str:
    by_topic: dict[str, dict[str, int]] = {}
    for (topic, partition), value in sorted(values.items()):
        by_topic.setdefault(topic, {})[str(partition)] = int(value)
    return json.dumps(by_topic, separators=(",", ":"))


class KafkaSource(Source):
    """One split per topic-partition; rows with Spark's Kafka schema. See docs/connectors.md.

    Examples
    --------
    >>> source = (KafkaSource.builder().bootstrap_servers("broker:9092").topics("events")
    ...           .starting_offsets(OffsetsInitializer.earliest()).build())
    """

    @staticmethod
    def builder() -> KafkaSourceBuilder:
        """A builder of a Kafka source.

        Returns
        -------
        KafkaSourceBuilder
            An empty builder: give the brokers and one of topics, a pattern or partitions.

        Examples
        --------
        >>> KafkaSource.builder().bootstrap_servers("broker:9092").topics("events").build()
        """
        return KafkaSourceBuilder()


_KAFKA = declared("kafka")
# Start and stop positions are alternatives (the JVM's KafkaConfig.Start, Stop): setting one
# removes the others, and at the start the option that qualifies a timestamp start.
_START = rule("kafka", "start")
_STOP = rule("kafka", "stop")
# The option each kind of OffsetsInitializer sets, at the start and at the end.
_STARTING = {
    "offsets": _KAFKA["startingOffsets"].name,
    "timestamp": _KAFKA["startingTimestamp"].name,
    "timestamps": _KAFKA["startingOffsetsByTimestamp"].name,
}
_ENDING = {
    "offsets": _KAFKA["endingOffsets"].name,
    "timestamp": _KAFKA["endingTimestamp"].name,
    "timestamps": _KAFKA["endingOffsetsByTimestamp"].name,
}


class KafkaSourceBuilder(_Builder["KafkaSourceBuilder"]):
    """Builds a :class:`KafkaSource`; each method sets options and returns the builder.

    Examples
    --------
    >>> KafkaSource.builder().bootstrap_servers("broker:9092").topic_pattern("events-.*")
    """

    _source_type = "kafka"
    _source_class = KafkaSource

    def bootstrap_servers(self, servers: str) -> KafkaSourceBuilder:
        """The brokers to connect to first.

        Parameters
        ----------
        servers : str
            Comma-separated ``host:port`` pairs.

        Returns
        -------
        KafkaSourceBuilder

        Examples
        --------
        >>> KafkaSource.builder().bootstrap_servers("broker-1:9092,broker-2:9092")
        """
        return self._set(self._key("kafka.bootstrap.servers"), servers)

    def topics(self, *topics: str) -> KafkaSourceBuilder:
        """Reads these topics, every partition (give this, ``topic_pattern`` or ``partitions``).

        Parameters
        ----------
        *topics : str
            Topic names.

        Returns
        -------
        KafkaSourceBuilder

        Examples
        --------
        >>> KafkaSource.builder().topics("orders", "payments")
        """
        return self._set(self._key("subscribe"), ",".join(topics))

    def topic_pattern(self, regex: str) -> KafkaSourceBuilder:
        """Reads every topic whose name matches, including topics created later.

        Parameters
        ----------
        regex : str
            A Java regular expression.

        Returns
        -------
        KafkaSourceBuilder

        Examples
        --------
        >>> KafkaSource.builder().topic_pattern("events-.*")
        """
        return self._set(self._key("subscribePattern"), regex)

    def partitions(self, assigned: dict[str, list[int]]) -> KafkaSourceBuilder:
        """Spark's ``assign``: these partitions only (give this, ``topics`` or ``topic_pattern``).

        Parameters
        ----------
        assigned : dict of str to list of int
            Partitions per topic.

        Returns
        -------
        KafkaSourceBuilder

        Examples
        --------
        >>> KafkaSource.builder().partitions({"events": [0, 1]})
        """
        by_topic = {topic: sorted(parts) for topic, parts in sorted(assigned.items())}
        return self._set(self._key("assign"), json.dumps(by_topic, separators=(",", ":")))

    def property(self, key: str, value: str) -> KafkaSourceBuilder:
        """A Kafka consumer property, passed to every consumer.

        Parameters
        ----------
        key : str
            The consumer property, without Spark's ``kafka.`` prefix.
        value : str
            Its value (secret ones are masked in ``repr``).

        Returns
        -------
        KafkaSourceBuilder

        Examples
        --------
        >>> KafkaSource.builder().property("security.protocol", "SASL_SSL")
        """
        return self._set(_KAFKA["kafka.<property>"].fill(property=key), value)

    def starting_offsets(self, initializer: OffsetsInitializer) -> KafkaSourceBuilder:
        """Where a new query starts (a restarted one goes on from its checkpoint).

        A timestamp start begins a partition with no record at or after it at its end, as Flink's
        ``OffsetsInitializer.timestamp`` does (the raw option ``startingOffsetsByTimestampStrategy``
        defaults to Spark's ``error``; set it after this to fail instead).

        Parameters
        ----------
        initializer : OffsetsInitializer
            The start; replaces any start given before.

        Returns
        -------
        KafkaSourceBuilder

        Examples
        --------
        >>> KafkaSource.builder().starting_offsets(OffsetsInitializer.timestamp(1_700_000_000_000))
        """
        strategy = _KAFKA["startingOffsetsByTimestampStrategy"].name
        for name in _START.replaced:
            self._options.pop(name, None)
        if initializer.option in ("timestamp", "timestamps"):
            self._set(strategy, "latest")
        return self._set(_STARTING[initializer.option], initializer.value)

    def stopping_offsets(self, initializer: OffsetsInitializer) -> KafkaSourceBuilder:
        """Makes the source bounded: it ends at these positions.

        Parameters
        ----------
        initializer : OffsetsInitializer
            The end (not ``earliest``); replaces any end given before.

        Returns
        -------
        KafkaSourceBuilder

        Examples
        --------
        >>> KafkaSource.builder().stopping_offsets(OffsetsInitializer.latest())
        """
        for name in _STOP.replaced:
            self._options.pop(name, None)
        return self._set(_ENDING[initializer.option], initializer.value)

    def fail_on_data_loss(self, fail: bool) -> KafkaSourceBuilder:
        """Whether records deleted before they were read fail the query (the default) or are
        skipped and counted.

        Parameters
        ----------
        fail : bool

        Returns
        -------
        KafkaSourceBuilder

        Examples
        --------
        >>> KafkaSource.builder().fail_on_data_loss(False)
        """
        return self._set(self._key("failOnDataLoss"), fail)

    def include_headers(self, include: bool) -> KafkaSourceBuilder:
        """Whether rows carry the records' headers (column ``headers``).

        Parameters
        ----------
        include : bool

        Returns
        -------
        KafkaSourceBuilder

        Examples
        --------
        >>> KafkaSource.builder().include_headers(True)
        """
        return self._set(self._key("includeHeaders"), include)

    def include_key(self, include: bool = True) -> KafkaSourceBuilder:
        """Compact rows (``forceTimestampSupport=false``) hold ``value`` only unless this is set.

        Parameters
        ----------
        include : bool, default True

        Returns
        -------
        KafkaSourceBuilder

        Examples
        --------
        >>> KafkaSource.builder().include_key()
        """
        return self._set(self._key("includeKey"), include)

    def partition_discovery_interval(self, interval: Duration) -> KafkaSourceBuilder:
        """How often new partitions (and topics matching a pattern) are looked for.

        Parameters
        ----------
        interval : datetime.timedelta or int
            A ``timedelta``, or milliseconds.

        Returns
        -------
        KafkaSourceBuilder

        Examples
        --------
        >>> KafkaSource.builder().partition_discovery_interval(timedelta(minutes=1))
        """
        return self._set(self._key("partitionDiscoveryIntervalMs"), millis(interval, "interval"))

    def partition_discovery_interval_ms(self, ms: int) -> KafkaSourceBuilder:
        """Deprecated alias of :meth:`partition_discovery_interval` (removed in the next release).

        Parameters
        ----------
        ms : int
            Milliseconds.

        Returns
        -------
        KafkaSourceBuilder

        Examples
        --------
        >>> KafkaSource.builder().partition_discovery_interval(60_000)
        """
        renamed("partition_discovery_interval_ms", "partition_discovery_interval")
        return self.partition_discovery_interval(legacy_millis(ms))
