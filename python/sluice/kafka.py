"""The Kafka source builder, mirroring ``sluice.connector.kafka.KafkaSource.builder()`` in Scala."""

from __future__ import annotations

import json

from sluice._options import declared, rule
from sluice.sources import Source, _Builder


class OffsetsInitializer:
    """Where partitions start or stop, as Spark's Kafka source options express it."""

    def __init__(self, option: str, value: str) -> None:
        self.option = option
        self.value = value

    @staticmethod
    def earliest() -> OffsetsInitializer:
        return OffsetsInitializer("offsets", "earliest")

    @staticmethod
    def latest() -> OffsetsInitializer:
        return OffsetsInitializer("offsets", "latest")

    @staticmethod
    def offsets(offsets: dict[tuple[str, int], int]) -> OffsetsInitializer:
        """Offsets per ``(topic, partition)``; -2 means earliest, -1 latest."""
        return OffsetsInitializer("offsets", _per_partition_json(offsets))

    @staticmethod
    def timestamp(timestamp_ms: int) -> OffsetsInitializer:
        """Every partition at its first record with a timestamp >= ``timestamp_ms``."""
        return OffsetsInitializer("timestamp", str(int(timestamp_ms)))

    @staticmethod
    def timestamps(timestamps: dict[tuple[str, int], int]) -> OffsetsInitializer:
        """A timestamp per ``(topic, partition)``."""
        return OffsetsInitializer("timestamps", _per_partition_json(timestamps))

    def __repr__(self) -> str:
        return f"OffsetsInitializer({self.option}={self.value})"


def _per_partition_json(values: dict[tuple[str, int], int]) -> str:
    by_topic: dict[str, dict[str, int]] = {}
    for (topic, partition), value in sorted(values.items()):
        by_topic.setdefault(topic, {})[str(partition)] = int(value)
    return json.dumps(by_topic, separators=(",", ":"))


class KafkaSource(Source):
    """One split per topic-partition; rows with Spark's Kafka schema. See docs/options.md."""

    @staticmethod
    def builder() -> KafkaSourceBuilder:
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
    _source_type = "kafka"
    _source_class = KafkaSource

    def bootstrap_servers(self, servers: str) -> KafkaSourceBuilder:
        return self._set(self._key("kafka.bootstrap.servers"), servers)

    def topics(self, *topics: str) -> KafkaSourceBuilder:
        return self._set(self._key("subscribe"), ",".join(topics))

    def topic_pattern(self, regex: str) -> KafkaSourceBuilder:
        return self._set(self._key("subscribePattern"), regex)

    def partitions(self, assigned: dict[str, list[int]]) -> KafkaSourceBuilder:
        """Spark's ``assign``: these partitions only, e.g. ``{"events": [0, 1]}`` (give this,
        ``topics`` or ``topic_pattern``)."""
        by_topic = {topic: sorted(parts) for topic, parts in sorted(assigned.items())}
        return self._set(self._key("assign"), json.dumps(by_topic, separators=(",", ":")))

    def property(self, key: str, value: str) -> KafkaSourceBuilder:
        """A Kafka consumer property (e.g. ``security.protocol``), passed to every consumer."""
        return self._set(_KAFKA["kafka.<property>"].fill(property=key), value)

    def starting_offsets(self, initializer: OffsetsInitializer) -> KafkaSourceBuilder:
        """Where a new query starts. A timestamp start begins a partition with no record at or
        after it at its end, as Flink's ``OffsetsInitializer.timestamp`` does (the raw option
        ``startingOffsetsByTimestampStrategy`` defaults to Spark's ``error``; set it after this
        to fail instead)."""
        strategy = _KAFKA["startingOffsetsByTimestampStrategy"].name
        for name in _START.replaced:
            self._options.pop(name, None)
        if initializer.option in ("timestamp", "timestamps"):
            self._set(strategy, "latest")
        return self._set(_STARTING[initializer.option], initializer.value)

    def stopping_offsets(self, initializer: OffsetsInitializer) -> KafkaSourceBuilder:
        """Makes the source bounded: it ends at these positions."""
        for name in _STOP.replaced:
            self._options.pop(name, None)
        return self._set(_ENDING[initializer.option], initializer.value)

    def fail_on_data_loss(self, fail: bool) -> KafkaSourceBuilder:
        return self._set(self._key("failOnDataLoss"), fail)

    def include_headers(self, include: bool) -> KafkaSourceBuilder:
        return self._set(self._key("includeHeaders"), include)

    def include_key(self, include: bool = True) -> KafkaSourceBuilder:
        """Compact rows (``forceTimestampSupport=false``) hold ``value`` only unless this is set."""
        return self._set(self._key("includeKey"), include)

    def partition_discovery_interval_ms(self, ms: int) -> KafkaSourceBuilder:
        return self._set(self._key("partitionDiscoveryIntervalMs"), ms)
