"""A real single-node Apache Kafka broker (KRaft) for tests, the demo and benchmarks.

The broker runs in its own JVM (``sluice.testkit.KafkaBrokerMain`` from the ``testkit``
sbt project), listens on 127.0.0.1 only and keeps its data in a temporary directory
deleted when it stops::

    from sluice.testing import EmbeddedKafka

    with EmbeddedKafka() as kafka:
        kafka.create_topic("events", partitions=3)
        kafka.produce("events", [("k1", "v1"), {"value": "v2", "partition": 2}])
        print(kafka.consume("events"))

Records are dicts with the optional fields ``key`` and ``value`` (``str``, ``bytes``
or ``None``), ``partition`` (``int``), ``timestamp`` (milliseconds since the epoch)
and ``headers`` (a list of ``(name, value)`` pairs, the value ``str``, ``bytes`` or
``None``), or ``(key, value)`` tuples.

The broker's classpath comes from the environment variable ``SLUICE_BROKER_CLASSPATH``, from
``jvm/testkit/target/broker-classpath.txt`` of a checkout (written by ``make build``), or, in an
installed wheel, from the broker's launcher the wheel carries and Kafka's jars resolved from Maven
Central the way ``--packages`` resolves them (once; see :func:`find_broker_classpath`).
"""

from __future__ import annotations

import base64
import collections
import contextlib
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sluice.testing._resolve import packaged_launcher, resolve_classpath

__all__ = [
    "CLASSPATH_ENV",
    "DEFAULT_JVM_OPTIONS",
    "EmbeddedKafka",
    "KafkaBrokerError",
    "Record",
    "find_broker_classpath",
]

#: Environment variable holding the broker's classpath (overrides the classpath file).
CLASSPATH_ENV = "SLUICE_BROKER_CLASSPATH"
_CLASSPATH_FILE = Path("jvm") / "testkit" / "target" / "broker-classpath.txt"
_MAIN_CLASS = "sluice.testkit.KafkaBrokerMain"
#: Serial GC and the C1 compiler only: they start faster and leave more of a small
#: machine to Spark than the defaults.
DEFAULT_JVM_OPTIONS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
_READY_PREFIX = "SLUICE_KAFKA_READY bootstrap="
_EXIT_PORT_IN_USE = 3  # KafkaBrokerMain's exit code when a port was taken
_FIXED_PORT_WAIT_S = 60  # how long start() tries a given port that is taken
_STDERR_TAIL_LINES = 60
_EOF = None  # what the stdout reader queues when the broker's stdout closes

Bytes = str | bytes | None
#: A record to produce: a dict (see the module docstring) or a (key, value) tuple.
Record = Mapping[str, Any] | tuple[Bytes, Bytes]


class KafkaBrokerError(RuntimeError):
    """The broker could not be found or started, or it rejected a command.

    Examples
    --------
    >>> try:
    ...     kafka.delete_topic("no-such-topic")
    ... except KafkaBrokerError as e:
    ...     print(e)
    """


def find_broker_classpath() -> str:
    """Returns the embedded broker's classpath.

    Looks at ``$SLUICE_BROKER_CLASSPATH``; then for ``jvm/testkit/target/broker-classpath.txt``
    (a checkout where ``make build`` ran) in the current directory, the directory of this
    package and all their parents; then for the broker's launcher an installed wheel carries
    (``sluice/jars/sluice-testkit_2.13-<version>.jar`` and its POM), whose dependencies (Kafka's
    broker, about 48 MB) are resolved by PySpark's own Ivy into the cache ``--packages`` uses
    (``~/.ivy2.5.2``), from ``~/.m2``, Maven Central and where ``spark.jars.repositories`` and
    ``spark.jars.ivySettings`` say, chained in ``--packages``' order
    (``_resolve.ivy_settings_xml``): the first start downloads them, later ones find them.

    Returns
    -------
    str
        The classpath, entries separated by ``os.pathsep``.

    Raises
    ------
    KafkaBrokerError
        Nothing was found, or the wheel's broker jars could not be resolved; the message says
        what to do.

    Examples
    --------
    >>> from sluice.testing import find_broker_classpath
    >>> "kafka_2.13" in find_broker_classpath()
    True
    """
    from_env = os.environ.get(CLASSPATH_ENV, "").strip()
    if from_env:
        return from_env
    package = Path(__file__).resolve().parent
    starts = [Path.cwd(), package]
    for start in starts:
        for directory in [start, *start.parents]:
            candidate = directory / _CLASSPATH_FILE
            if candidate.is_file():
                classpath = candidate.read_text(encoding="utf-8").strip()
                if classpath:
                    return classpath
    launcher = packaged_launcher(package.parent)
    if launcher is not None:
        try:
            return resolve_classpath(*launcher, java=_java_executable())
        except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
            raise KafkaBrokerError(f"The embedded Kafka broker's jars could not be resolved: {e}") from e
    raise KafkaBrokerError(
        "The embedded Kafka broker's classpath was not found: install the spark-sluice wheel "
        "(it carries the broker's launcher), run `make build` in the Sluice checkout (it writes "
        f"{_CLASSPATH_FILE}), or set {CLASSPATH_ENV} to the broker's classpath. Looked in the "
        f"current directory, {package} and their parents, and for {package.parent / 'jars'}/"
        "sluice-testkit_*.pom."
    )


def _java_executable() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("java")
    if found is None:
        raise KafkaBrokerError("`java` (17 or later) was not found: install it or set JAVA_HOME.")
    return found


def _bytes_field(record: dict[str, Any], name: str, value: Bytes) -> None:
    if isinstance(value, bytes | bytearray | memoryview):
        record[name + "_b64"] = base64.b64encode(bytes(value)).decode("ascii")
    elif value is None or isinstance(value, str):
        record[name] = value
    else:
        raise TypeError(f"record {name} must be str, bytes or None, not {type(value).__name__}")


def _header_value(value: Bytes) -> str | dict[str, str] | None:
    if isinstance(value, bytes | bytearray | memoryview):
        return {"b64": base64.b64encode(bytes(value)).decode("ascii")}
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"header values must be str, bytes or None, not {type(value).__name__}")


def _to_json(record: Record) -> str:
    """One line of the broker's ``produce`` input format."""
    if isinstance(record, tuple):
        if len(record) != 2:
            raise ValueError(f"a record tuple must be (key, value), got {len(record)} items")
        record = {"key": record[0], "value": record[1]}
    elif not isinstance(record, Mapping):
        raise TypeError("a record must be a dict or a (key, value) tuple, " f"not {type(record).__name__}")
    unknown = set(record) - {
        "key",
        "value",
        "partition",
        "timestamp",
        "headers",
        "offset",
    }
    if unknown:
        raise ValueError(
            f"unknown record fields {sorted(unknown)}; "
            "known: key, value, partition, timestamp, headers (offset is ignored)"
        )
    out: dict[str, Any] = {}
    _bytes_field(out, "key", record.get("key"))
    _bytes_field(out, "value", record.get("value"))
    for name in ("partition", "timestamp"):
        number = record.get(name)
        if number is not None:
            if isinstance(number, bool) or not isinstance(number, int):
                raise TypeError(f"record {name} must be an int or None, not {type(number).__name__}")
            out[name] = number
    headers = record.get("headers")
    if headers is not None:
        out["headers"] = [[str(name), _header_value(value)] for name, value in headers]
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def _from_json(line: str) -> dict[str, Any]:
    """A record of the broker's ``consume`` output, base64 fields decoded into bytes."""
    raw = json.loads(line)
    record: dict[str, Any] = {}
    for name in ("key", "value"):
        encoded = raw.get(name + "_b64")
        record[name] = base64.b64decode(encoded) if encoded is not None else raw.get(name)
    record["partition"] = raw["partition"]
    record["offset"] = raw["offset"]
    record["timestamp"] = raw["timestamp"]
    headers: list[tuple[str, Bytes]] = []
    for name, value in raw.get("headers") or []:
        if isinstance(value, dict):
            value = base64.b64decode(value["b64"])
        headers.append((name, value))
    record["headers"] = headers
    return record


class EmbeddedKafka:
    """A single-node Kafka broker in a child JVM, controlled over its stdin and stdout.

    Use it as a context manager, or call :meth:`start` and :meth:`stop`. Methods may be
    called from several threads. If this Python process dies, the broker notices its
    closed stdin and stops.

    Parameters
    ----------
    port : int, optional
        The client port on 127.0.0.1; a free one if not given.
    data_dir : str or os.PathLike, optional
        Where the broker keeps its data (kept after stop, reused on the next start); a
        temporary directory, deleted on stop, if not given.
    classpath : str, optional
        The broker's classpath; :func:`find_broker_classpath` if not given.
    heap : str
        The JVM's maximum heap (``-Xmx``).
    jvm_options : sequence of str
        Further options for the broker's JVM.
    start_timeout : float
        Seconds to wait for the broker to accept clients.
    command_timeout : float
        Seconds to wait for the answer to one command.

    Examples
    --------
    >>> with EmbeddedKafka() as kafka:
    ...     kafka.create_topic("events", partitions=2)
    ...     kafka.produce("events", [Record(value="a"), Record(value="b", partition=1)])
    ...     servers = kafka.bootstrap_servers  # for kafka.bootstrap.servers
    2
    """

    #: the JVM's main class: a subclass may drive another speaker of the same protocol
    _main_class = _MAIN_CLASS

    def __init__(
        self,
        *,
        port: int | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        classpath: str | None = None,
        heap: str = "512m",
        jvm_options: Sequence[str] = DEFAULT_JVM_OPTIONS,
        start_timeout: float = 60.0,
        command_timeout: float = 120.0,
    ) -> None:
        self._port = port
        self._data_dir = data_dir
        self._classpath = classpath
        self._heap = heap
        self._jvm_options = list(jvm_options)
        self._start_timeout = start_timeout
        self._command_timeout = command_timeout
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._stdout: queue.Queue[str | None] = queue.Queue()
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL_LINES)
        self._bootstrap_servers: str | None = None
        self._workdir: Path | None = None
        self._file_counter = 0
        #: Seconds from launching the JVM until the broker accepted clients.
        self.startup_seconds: float | None = None

    # -- life cycle ------------------------------------------------------------------

    def start(self) -> EmbeddedKafka:
        """Starts the broker and waits until clients can use it.

        Returns
        -------
        EmbeddedKafka
            ``self``, started.

        Examples
        --------
        >>> kafka = EmbeddedKafka().start()
        >>> kafka.running
        True
        """
        with self._lock:
            if self._process is not None:
                raise KafkaBrokerError("this EmbeddedKafka is already started")
            command = [_java_executable(), f"-Xmx{self._heap}", *self._jvm_options]
            command += ["-cp", self._classpath or find_broker_classpath(), self._main_class]
            if self._port is not None:
                command += ["--port", str(self._port)]
            if self._data_dir is not None:
                command += ["--data-dir", os.fspath(self._data_dir)]
            began = time.monotonic()
            # The broker picks free ports, which another process may take before it binds them;
            # a port given (a restart on the same port) may be held for a while by a client's
            # connection on a busy machine: tried again for up to _FIXED_PORT_WAIT_S.
            attempts = 3
            deadline = time.monotonic() + _FIXED_PORT_WAIT_S
            attempt = 0
            while True:
                attempt += 1
                try:
                    line = self._launch(command)
                    break
                except KafkaBrokerError:
                    code = self._process.returncode if self._process else None
                    self._terminate()
                    self._process = None
                    if code != _EXIT_PORT_IN_USE:
                        raise
                    if self._port is None and attempt >= attempts:
                        raise
                    if self._port is not None:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(1.0)
            self._bootstrap_servers = line[len(_READY_PREFIX) :].strip()
            self.startup_seconds = time.monotonic() - began
            self._workdir = Path(tempfile.mkdtemp(prefix="sluice-kafka-io-"))
        return self

    def _launch(self, command: list[str]) -> str:
        """Starts the broker's JVM; returns its ready line."""
        self._stdout = queue.Queue()
        self._stderr_tail.clear()
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._pump(self._process.stdout, self._stdout.put, self._stdout.put, "stdout")
        self._pump(self._process.stderr, self._stderr_tail.append, None, "stderr")
        line = self._next_line(self._start_timeout, "to start")
        while not line.startswith(_READY_PREFIX):
            line = self._next_line(self._start_timeout, "to start")
        return line

    def stop(self) -> None:
        """Stops the broker, deleting its temporary data; no-op if not running.

        Examples
        --------
        >>> kafka.stop()
        >>> kafka.running
        False
        """
        with self._lock:
            process = self._process
            if process is None:
                return
            try:
                if process.poll() is None and process.stdin is not None:
                    process.stdin.write("stop\n")
                    process.stdin.flush()
                    process.stdin.close()
                process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self._terminate()
            finally:
                self._process = None
                self._bootstrap_servers = None
                if self._workdir is not None:
                    shutil.rmtree(self._workdir, ignore_errors=True)
                    self._workdir = None

    def __enter__(self) -> EmbeddedKafka:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def bootstrap_servers(self) -> str:
        """``127.0.0.1:PORT``, for ``kafka.bootstrap.servers``."""
        if self._bootstrap_servers is None:
            raise KafkaBrokerError("the broker is not running: call start() first")
        return self._bootstrap_servers

    @property
    def running(self) -> bool:
        """Whether the broker process is alive."""
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int:
        """The broker JVM's process id (to measure what the broker costs, as the benchmarks' profiles do)."""
        if self._process is None:
            raise KafkaBrokerError("the broker is not running: call start() first")
        return self._process.pid

    # -- commands --------------------------------------------------------------------

    def create_topic(
        self, name: str, partitions: int = 1, config: Mapping[str, object] | None = None
    ) -> None:
        """Creates a topic (replication factor 1).

        Parameters
        ----------
        name : str
            The topic.
        partitions : int
            How many partitions it has.
        config : mapping, optional
            Topic configs, e.g. ``{"retention.ms": 60000}`` (no whitespace in names or values).

        Examples
        --------
        >>> kafka.create_topic("events", partitions=4, config={"retention.ms": 3_600_000})
        """
        pairs = [f"{key}={value}" for key, value in (config or {}).items()]
        for pair in pairs:
            if any(c.isspace() for c in pair):
                raise ValueError(f"topic config entries must not contain whitespace: {pair!r}")
        self._command("create-topic", _word(name), str(int(partitions)), *pairs)

    def add_partitions(self, name: str, total: int) -> None:
        """Grows a topic.

        Parameters
        ----------
        name : str
            The topic.
        total : int
            How many partitions it has afterwards.

        Examples
        --------
        >>> kafka.add_partitions("events", 8)
        """
        self._command("add-partitions", _word(name), str(int(total)))

    def delete_topic(self, name: str) -> None:
        """Deletes a topic and waits until the broker no longer lists it.

        Parameters
        ----------
        name : str
            The topic.

        Examples
        --------
        >>> kafka.delete_topic("events")
        """
        self._command("delete-topic", _word(name))

    def produce(self, topic: str, records: Iterable[Record]) -> int:
        """Writes the records (acks=all, in order).

        Parameters
        ----------
        topic : str
            The topic.
        records : iterable of Record
            What to write: key, value, partition, timestamp and headers each may be given.

        Returns
        -------
        int
            How many records were written.

        Examples
        --------
        >>> kafka.produce("events", [Record(key="k", value="v", timestamp=1_700_000_000_000)])
        1
        """
        path = self._io_file("produce")
        try:
            with open(path, "w", encoding="utf-8") as out:
                for record in records:
                    out.write(_to_json(record))
                    out.write("\n")
            return int(self._command("produce", _word(topic), str(path)))
        finally:
            path.unlink(missing_ok=True)

    def consume(self, topic: str) -> list[dict[str, Any]]:
        """Every record of the topic up to its current end, by partition, then offset.

        Parameters
        ----------
        topic : str
            The topic.

        Returns
        -------
        list of dict
            Each record with ``key``, ``value``, ``partition``, ``offset``, ``timestamp`` and
            ``headers`` (a list of ``(name, value)`` tuples). Keys and values are ``str`` when
            they are UTF-8, otherwise ``bytes``; ``None`` when null. Aborted transactional
            records are left out.

        Examples
        --------
        >>> [r["value"] for r in kafka.consume("events")]
        ['v']
        """
        path = self._io_file("consume")
        try:
            self._command("consume", _word(topic), str(path))
            with open(path, encoding="utf-8") as lines:
                return [_from_json(line) for line in lines if line.strip()]
        finally:
            path.unlink(missing_ok=True)

    def delete_records(self, topic: str, partition: int, before_offset: int) -> int:
        """Deletes a partition's records before an offset, as retention would.

        Parameters
        ----------
        topic : str
            The topic.
        partition : int
            The partition.
        before_offset : int
            The first offset kept.

        Returns
        -------
        int
            The partition's new start offset.

        Examples
        --------
        >>> kafka.delete_records("events", 0, before_offset=100)
        100
        """
        answer = self._command("delete-records", _word(topic), str(int(partition)), str(int(before_offset)))
        return int(answer)

    def end_offsets(self, topic: str) -> dict[int, int]:
        """The offset after the last record of each partition.

        Parameters
        ----------
        topic : str
            The topic.

        Returns
        -------
        dict of int to int
            Partition to end offset.

        Examples
        --------
        >>> kafka.end_offsets("events")
        {0: 1, 1: 0}
        """
        return _parse_offsets(self._command("end-offsets", _word(topic)))

    def start_offsets(self, topic: str) -> dict[int, int]:
        """The first offset still stored in each partition.

        Parameters
        ----------
        topic : str
            The topic.

        Returns
        -------
        dict of int to int
            Partition to start offset.

        Examples
        --------
        >>> kafka.start_offsets("events")
        {0: 0, 1: 0}
        """
        return _parse_offsets(self._command("start-offsets", _word(topic)))

    def produce_generated(
        self, topic: str, count: int, value_bytes: int = 100, base_timestamp_ms: int = 1_700_000_000_000
    ) -> int:
        """Benchmark load made inside the broker, without passing records through Python.

        Parameters
        ----------
        topic : str
            The topic.
        count : int
            How many records, round-robin over the partitions; the key is the record's number.
        value_bytes : int
            The size of each value.
        base_timestamp_ms : int
            The first record's timestamp; each next one is a millisecond later.

        Returns
        -------
        int
            How many records were written.

        Examples
        --------
        >>> kafka.produce_generated("load", 1_000_000)
        1000000
        """
        return int(
            self._command(
                "produce-generated",
                _word(topic),
                str(int(count)),
                str(int(value_bytes)),
                str(int(base_timestamp_ms)),
                timeout=max(self._command_timeout, count / 20_000),
            )
        )

    def produce_steady(
        self, topic: str, records_per_second: int, seconds: int, timestamp_shift_ms: int = 0
    ) -> None:
        """Starts a producer inside the broker at a steady rate and returns at once.

        Parameters
        ----------
        topic : str
            The topic, written round-robin over its partitions.
        records_per_second : int
            The rate.
        seconds : int
            How long it produces.
        timestamp_shift_ms : int
            Added to each record's timestamp, its send time (the value is the send time in epoch
            ms, as text): negative for a topic that lags in event time.

        Examples
        --------
        >>> kafka.produce_steady("live", records_per_second=1000, seconds=60)
        """
        self._command(
            "produce-steady",
            _word(topic),
            str(int(records_per_second)),
            str(int(seconds)),
            str(int(timestamp_shift_ms)),
        )

    def consume_count(self, topic: str) -> tuple[int, float]:
        """Reads the whole topic with one plain KafkaConsumer loop, the ceiling a reader can reach.

        Parameters
        ----------
        topic : str
            The topic.

        Returns
        -------
        tuple of (int, float)
            The records read and the seconds it took.

        Examples
        --------
        >>> kafka.consume_count("load")
        (1000000, 0.8)
        """
        records, millis = self._command("consume-count", _word(topic), timeout=3600).split()
        return int(records), int(millis) / 1000

    def request_counts(self) -> dict[str, int]:
        """How many requests of each type the broker has answered since it started.

        Kafka's own request meters (``RequestsPerSec``), by request type (``FetchConsumer``,
        ``ListOffsets``, ``Metadata``, ...): what reading a topic costs the broker, as the
        benchmarks' profiles compare it.

        Returns
        -------
        dict of str to int
            The requests answered, by request type.

        Examples
        --------
        >>> kafka.request_counts()["FetchConsumer"]
        1532
        """
        answer = self._command("request-counts")
        return {name: int(n) for name, n in (pair.split("=") for pair in answer.split())}

    # -- internals -------------------------------------------------------------------

    def _command(self, *words: str, timeout: float | None = None) -> str:
        """Sends one command and returns the text after ``OK``; raises on ``ERR``."""
        line = " ".join(words)
        with self._lock:
            process = self._process
            if process is None or process.stdin is None:
                raise KafkaBrokerError("the broker is not running: call start() first")
            try:
                process.stdin.write(line + "\n")
                process.stdin.flush()
            except OSError as e:
                raise KafkaBrokerError(f"the broker is gone ({e}){self._stderr_text()}") from e
            answer = self._next_line(timeout or self._command_timeout, f"to answer {words[0]!r}")
        if answer == "OK" or answer.startswith("OK "):
            return answer[3:]
        if answer.startswith("ERR "):
            raise KafkaBrokerError(f"{line}: {answer[4:]}")
        raise KafkaBrokerError(f"{line}: unexpected answer {answer!r}")

    def _next_line(self, timeout: float, what: str) -> str:
        try:
            line = self._stdout.get(timeout=timeout)
        except queue.Empty:
            raise KafkaBrokerError(
                f"the Kafka broker took longer than {timeout:.0f} s {what}" f"{self._stderr_text()}"
            ) from None
        if line is _EOF:
            self._stdout.put(_EOF)  # later calls must see it too
            if self._process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._process.wait(timeout=5)
            code = self._process.returncode if self._process is not None else None
            raise KafkaBrokerError(
                f"the Kafka broker exited (code {code}) "
                f"before {what.removeprefix('to ')}"
                f"{self._stderr_text()}"
            )
        return line.rstrip("\n")

    def _stderr_text(self) -> str:
        time.sleep(0.1)  # let the stderr reader catch up with a dying process
        tail = "".join(self._stderr_tail).rstrip()
        return f"\n--- broker stderr (last lines) ---\n{tail}" if tail else ""

    @staticmethod
    def _pump(stream: Any, sink: Any, on_eof: Any, name: str) -> None:
        def run() -> None:
            for line in stream:
                sink(line)
            if on_eof is not None:
                on_eof(_EOF)

        threading.Thread(target=run, name=f"sluice-kafka-{name}", daemon=True).start()

    def _io_file(self, kind: str) -> Path:
        if self._workdir is None:
            raise KafkaBrokerError("the broker is not running: call start() first")
        with self._lock:
            self._file_counter += 1
            return self._workdir / f"{kind}-{self._file_counter}.jsonl"

    def _terminate(self) -> None:
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _word(text: str) -> str:
    if not text or any(c.isspace() for c in text):
        raise ValueError(f"topic names must be non-empty and without whitespace: {text!r}")
    return text


def _parse_offsets(answer: str) -> dict[int, int]:
    offsets: dict[int, int] = {}
    for item in answer.split(","):
        if item:
            partition, offset = item.split("=", 1)
            offsets[int(partition.removeprefix("p"))] = int(offset)
    return offsets
