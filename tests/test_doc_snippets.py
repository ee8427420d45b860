"""Every ```python snippet of README.md, python/README.md and docs/*.md runs, as written, against the
test session's broker and SparkSession (the ```scala ones run with the same markers, places rewritten
and rule for queries in sbt's spark/test, jvm/spark/src/test/scala/sluice/docs/DocSnippetsSuite.scala;
docs/development.md says where the two differ: Scala rewrites only plain literals and refuses other
paths, and runs each page on its own session; both sides stop a snippet's queries at a deadline,
and give up one still blocked a grace later, naming where it waits).

A page's snippets run in order in one namespace, as a reader runs them top to bottom. The line just
before a fence may carry a marker comment (invisible when the page is rendered):

    <!-- snippet: given spark, query -->                  names the snippet uses but does not define
    <!-- snippet: given source=timed_files -->            ... bound to a value _given() makes
    <!-- snippet: expect len(sluice.status(query)) > 0 -->  a check run after the snippet
    <!-- snippet: skip why -->                           not run (counted and listed: SKIPPED)
    <!-- snippet: idle starts at the topic's end -->      its queries may read nothing (listed: IDLE)

    <!-- snippet: raises SLUICE_DATA_LOSS -->           it must end raising an error of that class

Directives are separated by ``;``; an ``expect`` may call ``rows_read(df)`` (or ``rows_read(source)``),
which runs the stream to the end of what it finds, in a checkpoint of its own, and returns the rows
it read. The places a reader puts their own are rewritten to this run's:
the broker ``broker:9092`` to the embedded broker, and paths under ``/archive/``, ``/checkpoints/``,
``/etc/kafka/``, ``/tables/``, ``/tmp/``, ``s3a://archive/`` and ``s3a://warehouse/`` to a temporary
directory, and a literal holding any other path, URI or broker, or a relative path handed to Spark
(`_paths_given`: its JVM resolves it against the repository's root), fails the snippet (the
``work`` fixture writes ``archive/events`` and ``archive/clicks/2024`` as JSON files,
``warehouse/events`` as Parquet, the topics ``events`` and ``orders``, and ``lost-events``, whose
first records are deleted). Every source of every query a snippet starts must read rows
(in some batch), and the query must not fail, then or while the page's later snippets run (a
listener sees each one, failed or not); a trigger that read nothing, a query gone idle or one that
ended without reading does not count, unless the snippet is marked ``idle`` (``_Queries``).
Queries a page leaves running are stopped after it.
"""

from __future__ import annotations

import ast
import contextlib
import faulthandler
import json
import re
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import sluice
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery, StreamingQueryListener
from sluice import GeneratorSource
from sluice._listener import add_listener, remove_listener
from sluice.testing import EmbeddedKafka

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "python" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# the one place snippets may stay unrun: a new one is added here, with the reason its marker gives
SKIPPED = [
    # tests/test_connect.py runs these calls against a Connect server of its module's own (another
    # here would cost a second server start)
    ("README.md", "its server is test_connect.py's own, which runs these calls"),
    # the query's rows would be seen only at its first batch's end, after 5 minutes (test_realtime.py
    # runs Kafka in real-time mode with 5-second batches)
    ("docs/realtime.md", "a 5-minute real-time batch reports progress only at its end"),
]
# the snippets whose queries may read nothing (`idle`), with the reason their marker gives: none yet
IDLE: list[tuple[str, str]] = []
EVENTS_MS = 1_700_000_000_000
# a topic whose first records were deleted: `lost_query` fails reading it (SLUICE_DATA_LOSS)
LOST_TOPIC = "lost-events"
# how long a query a snippet started may take to read its first rows (or end)
QUERY_WAIT_S = 60
#: how long one snippet may run before its queries are stopped (which releases an
#: `awaitTermination()` without a timeout) and it fails: a hanging snippet must not hang make test
SNIPPET_DEADLINE_S = 300
#: how long a snippet may take to return once its queries were stopped at its deadline (each stop
#: is bounded by the test session's stopTimeout, 30 s); past that, it is blocked on something else (a
#: lock, an endless loop) and its main thread is interrupted
SNIPPET_GRACE_S = 60
# a line of a stack trace that names an exception: "ValueError: ...", "org.apache.x.YException: ..."
ERROR_LINE = re.compile(r"^(Caused by: )?[\w.$]*(Error|Exception)\b.*")
# fenced blocks, each with the marker comment on the line before it, if any
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.S | re.M)
MARKER = re.compile(r"<!--\s*snippet:(.*?)-->\s*$")
# a Python block FENCE does not take for one, so it would silently not run (as Scala's UnreadFence)
# a python block the fence above does not take, so it would silently not run: another word for the
# language (py, python3, Python), an indented, ~~~ or four-backtick fence, a space before the word
UNREAD_FENCE = re.compile(r"^(?!```python\b)[ \t]*(?:`{3,}|~{3,})[ \t]*(?i:python3?|py)\b", re.M)
# where a reader's places start: a quote then one of them is rewritten to this run's folder
PATH_LITERAL = re.compile(
    r"""(["'])(s3a://archive/|s3a://warehouse/|/archive/|/checkpoints/|/etc/kafka/|/tables/|/tmp/)"""
)
# what a reader would take for a path, a URI or a broker of their own machine, as the Scala runner's
# rules (project/DocSnippetLiterals.scala): a host (a name starting with a letter, or an IPv4 address)
# and a port, but not a time ("12:30") nor broker:9092
MACHINE_PATH = re.compile(
    r"""[a-z][a-z0-9+.-]*:/|(?:^|[\s'"`(=,;])~?/[\w.~-]|"""
    r"""(?<![\w.-])(?!broker:9092\b)(?:[A-Za-z][\w.-]*|\d{1,3}(?:\.\d{1,3}){3}):\d{2,5}\b"""
)
# the calls (by method name) whose first argument is a path Spark's JVM resolves, against its own
# working folder (the repository's root) when relative: the page's scratch folder serves only what
# Python itself opens (plot's "backfill.png"); these take several paths, each an argument
PATH_CALLS = {"path", "load", "json", "parquet", "csv", "text", "orc", "save", "start"}
PATHS_CALLS = {"paths", "parquet"}
# the options naming a path (`option(...)`, and as keywords to these calls or `options(...)`; a
# checkpoint's to any call): plot's `path=` is Python's own
PATH_OPTIONS = {"path", "paths", "checkpointLocation"}


@dataclass
class Snippet:
    page: str
    line: int
    code: str
    given: dict[str, str] = field(default_factory=dict)
    expect: list[str] = field(default_factory=list)
    skip: str | None = None
    #: why the snippet's queries may read nothing (`idle` directive)
    idle: str | None = None
    #: the error class it must end raising (`raises` directive): its given queries may fail
    raises: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def snippets(page: Path, language: str) -> list[Snippet]:
    """The page's blocks of ``language``, with what their markers say."""
    return _parse(page.read_text(encoding="utf-8"), str(page.relative_to(ROOT)), language)


def _parse(text: str, name: str, language: str) -> list[Snippet]:
    """`snippets` of the text of the page `name`; a Python block written so that it would not run
    (```py, ```python3, an indented or ~~~ fence) raises a ValueError naming its line."""
    if language == "python" and (unread := UNREAD_FENCE.search(text)):
        line = text.count("\n", 0, unread.start()) + 1
        raise ValueError(
            f"{name}:{line}: a Python block must open with ```python "
            "at the start of its line (a ```py, ```python3, indented or ~~~ fence is not run): write "
            "it so, or as ```text"
        )
    found = []
    for fence in FENCE.finditer(text):
        if fence.group(1) != language:
            continue
        line = text.count("\n", 0, fence.start()) + 1
        before = text[: fence.start()].rstrip("\n").rsplit("\n", 1)[-1]
        snippet = Snippet(name, line + 1, fence.group(2))
        if marker := MARKER.search(before):
            for directive in filter(None, (d.strip() for d in marker.group(1).split(";"))):
                word, _, rest = directive.partition(" ")
                if word == "given":
                    for name in filter(None, (n.strip() for n in rest.split(","))):
                        bound, _, value = name.partition("=")
                        snippet.given[bound] = value or bound
                elif word == "expect":
                    snippet.expect.append(rest.strip())
                elif word == "skip":
                    snippet.skip = rest.strip()
                elif word == "idle":
                    snippet.idle = rest.strip()
                elif word == "raises":
                    snippet.raises = rest.strip()
                else:
                    raise ValueError(f"{snippet.where}: unknown snippet directive {word!r}")
        found.append(snippet)
    return found


# -- what snippets may be given ---------------------------------------------------------------------


def _generator(spark: SparkSession, work: Path) -> dict[str, Callable[[], object]]:
    def source() -> object:
        return GeneratorSource.builder().splits(2).records_per_split(50).build()

    def df() -> object:
        return sluice.from_source(spark, source(), name="numbers")

    def query() -> StreamingQuery:
        running = (
            df()
            .writeStream.format("noop")
            .option("checkpointLocation", str(work / "given-query"))
            .trigger(availableNow=True)
            .start()
        )
        running.awaitTermination(60)
        return running

    return {"source": source, "df": df, "query": query}


def _timed_files(spark: SparkSession, work: Path) -> object:
    """A file source whose rows carry their own ``event_time`` column."""
    folder = work / "timed"
    folder.mkdir(exist_ok=True)
    (folder / "part-0.json").write_text(
        "".join(json.dumps({"id": i, "event_time": EVENTS_MS + i * 1000}) + "\n" for i in range(10))
    )
    return (
        sluice.FileSource.builder()
        .path(str(folder))
        .format("json")
        .schema("id BIGINT, event_time BIGINT")
        .timestamp_column("event_time")
        .build()
    )


def _lost_query(spark: SparkSession, kafka: EmbeddedKafka, work: Path) -> StreamingQuery:
    """A running query that fails with SLUICE_DATA_LOSS: it starts at offset 0 of a partition whose
    records before 3 were deleted."""
    source = (
        sluice.KafkaSource.builder()
        .bootstrap_servers(kafka.bootstrap_servers)
        .topics(LOST_TOPIC)
        .starting_offsets(sluice.OffsetsInitializer.offsets({(LOST_TOPIC, 0): 0}))
        .build()
    )
    return (
        sluice.from_source(spark, source)
        .writeStream.format("noop")
        .option("checkpointLocation", tempfile.mkdtemp(prefix="lost", dir=work))
        .start()
    )


def _old_kafka_checkpoint(work: Path) -> None:
    """What a format("kafka") query over ``events`` leaves once its batch 0 committed."""
    checkpoint = work / "checkpoints" / "old-query"
    for folder in ("offsets", "commits"):
        (checkpoint / folder).mkdir(parents=True, exist_ok=True)
    (checkpoint / "offsets" / "0").write_text('v1\n{"batchWatermarkMs":0}\n{"events":{"0":3}}')
    (checkpoint / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}')


# -- the queries a page starts -----------------------------------------------------------------------


class _Queries(StreamingQueryListener):
    """What became of every query started while a page runs: a query may fail after the snippet
    that started it returned (it runs in the background), or before anyone looked (then it is no
    longer among ``spark.streams.active``). Started events come synchronously with ``start()``;
    progress and termination asynchronously.

    A query *ran* when every source its progress names read rows in some batch (not necessarily
    the same one). Ending is not running: an ``AvailableNow`` query over a mistyped path ends
    having read nothing, and a second source over a misspelled topic reads nothing while the
    first reads; both must fail. A snippet that means its query (or one of its sources) to read
    nothing says so with ``idle <why>``; only then does a trigger without rows, an idle query or
    an ended one count."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.started: list[str] = []
        self._rows: dict[str, dict[str, int]] = {}  # per query, the rows each source read so far
        self._triggered: set[str] = set()  # a trigger ran (rows or not), or the query went idle
        self._ended: set[str] = set()
        self.failed: dict[str, str] = {}

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 - PySpark's interface
        with self._changed:
            self.started.append(str(event.id))

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802
        with self._changed:
            query = str(event.progress.id)
            rows = self._rows.setdefault(query, {})
            for i, source in enumerate(event.progress.sources):
                name = f"source {i} ({source.description})"
                rows[name] = rows.get(name, 0) + source.numInputRows
            self._triggered.add(query)
            self._changed.notify_all()

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802
        with self._changed:
            self._triggered.add(str(event.id))
            self._changed.notify_all()

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
        with self._changed:
            self._ended.add(str(event.id))
            if event.exception:
                self.failed[str(event.id)] = event.exception
            self._changed.notify_all()

    def _read(self, query: str) -> bool:
        rows = self._rows.get(query, {})
        return bool(rows) and all(n > 0 for n in rows.values())

    def ran(self, query_ids: list[str], timeout: float, may_idle: bool = False) -> dict[str, str]:
        """Waits until each query's sources all read rows (with `may_idle`: until it ran a trigger
        at all, or ended); returns those that did not in time (or ended first), each with the
        sources that read nothing."""
        deadline = time.monotonic() + timeout

        def done(q: str) -> bool:
            return self._read(q) or (may_idle and (q in self._triggered or q in self._ended))

        with self._changed:
            while [q for q in query_ids if not done(q) and q not in self._ended] and (
                time.monotonic() < deadline
            ):
                self._changed.wait(deadline - time.monotonic())
            return {
                q: ", ".join(s for s, n in self._rows.get(q, {}).items() if n == 0) or "no source"
                for q in query_ids
                if not done(q)
            }


def _iceberg_events(work: Path) -> str:
    """The archive's events as an Iceberg table written by pyiceberg (a SQL catalog on sqlite), once
    per run: its current metadata file, as a catalog names the table."""
    from pyiceberg.catalog.sql import SqlCatalog  # the test requirements' independent writer
    from pyiceberg.exceptions import NoSuchTableError

    catalog = SqlCatalog("lake", uri=f"sqlite:///{work / 'iceberg.db'}", warehouse=(work / "lake").as_uri())
    try:
        return catalog.load_table("db.events").metadata_location
    except NoSuchTableError:
        pass
    import pyarrow as pa

    rows = [
        {
            "id": i,
            "user": f"u{i % 3}",
            "amount": i * 1.5,
            "ts": datetime.fromtimestamp(EVENTS_MS / 1000 + i, UTC),
        }
        for i in range(6)
    ]
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("user", pa.string()),
            ("amount", pa.float64()),
            ("ts", pa.timestamp("us", "UTC")),
        ]
    )
    catalog.create_namespace_if_not_exists("db")
    table = catalog.create_table("db.events", schema=schema)
    table.append(pa.Table.from_pylist(rows, schema=schema))
    return table.metadata_location


def _iceberg_catalog(work: Path) -> dict[str, str]:
    """The properties of the SQL catalog `_iceberg_events` writes (named `lake`), as iceberg-core's
    JdbcCatalog takes them (the sqlite JDBC driver is on the test session's class path)."""
    _iceberg_events(work)
    return {
        "type": "jdbc",
        "uri": f"jdbc:sqlite:{work / 'iceberg.db'}",
        "warehouse": (work / "lake").as_uri(),
    }


def _delta_events(work: Path) -> str:
    """The archive's events as a Delta table written by delta-rs, once per run: its directory."""
    location = work / "delta" / "events"
    if (location / "_delta_log").is_dir():
        return str(location)
    import pyarrow as pa
    from deltalake import write_deltalake  # the test requirements' independent writer

    rows = [
        {
            "id": i,
            "user": f"u{i % 3}",
            "amount": i * 1.5,
            "ts": datetime.fromtimestamp(EVENTS_MS / 1000 + i, UTC),
        }
        for i in range(6)
    ]
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("user", pa.string()),
            ("amount", pa.float64()),
            ("ts", pa.timestamp("us", "UTC")),
        ]
    )
    write_deltalake(location, pa.Table.from_pylist(rows, schema=schema))
    return str(location)


# -- the run ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def work(spark: SparkSession, kafka: EmbeddedKafka, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The archive and the topics the pages name: JSON events (id, user, amount, ts), their 2024
    clicks, the warehouse's Parquet events, partitioned by date, and a topic some records of which
    are gone."""
    work = tmp_path_factory.mktemp("docs")
    rows = [{"id": i, "user": f"u{i % 3}", "amount": i * 1.5, "ts": "2023-11-14T22:13:20Z"} for i in range(6)]
    archive = work / "archive" / "events"
    archive.mkdir(parents=True)
    (archive / "part-0.json").write_text("".join(json.dumps(r) + "\n" for r in rows[:3]))
    clicks = work / "archive" / "clicks" / "2024"  # a glob's folder, apart from the events' (listed whole)
    clicks.mkdir(parents=True)
    (clicks / "part-0.json").write_text("".join(json.dumps(r) + "\n" for r in rows[3:]))
    spark.createDataFrame(
        [(i, "2026-11-01", datetime(2026, 11, 1, 12, i)) for i in range(3)],
        "id BIGINT, date STRING, ts TIMESTAMP",
    ).write.partitionBy("date").parquet(str(work / "warehouse" / "events"))
    for topic in ("events", "orders", LOST_TOPIC):
        kafka.create_topic(topic)
        kafka.produce(
            topic, [{"value": json.dumps(r), "timestamp": EVENTS_MS + i} for i, r in enumerate(rows)]
        )
    kafka.delete_records(LOST_TOPIC, 0, 3)  # as retention would: `lost_query` was to read them
    return work


@dataclass
class _SessionState:
    """What a page may change of the session all pages share (a Scala page has one of its own)."""

    settings: dict[str, str]
    views: set[str]
    functions: set[str]

    @classmethod
    def of(cls, spark: SparkSession) -> _SessionState:
        return cls(
            dict(spark.conf.getAll),
            {t.name for t in spark.catalog.listTables() if t.isTemporary},
            {row[0] for row in spark.sql("SHOW USER FUNCTIONS").collect()},
        )

    def restore(self, spark: SparkSession) -> None:
        """Undoes what was changed since: `spark.sql.*` and `spark.sluice.*` settings, temporary
        views and functions (a UDF a page registered)."""
        now = _SessionState.of(spark)
        for key in now.settings.keys() | self.settings.keys():
            changed = now.settings.get(key) != self.settings.get(key)
            # Spark says a setting it does not declare (Sluice's) is not modifiable, yet it is
            sql = key.startswith("spark.sql.") and spark.conf.isModifiable(key)
            if changed and (sql or key.startswith("spark.sluice.")):
                if key in self.settings:
                    spark.conf.set(key, self.settings[key])
                else:
                    spark.conf.unset(key)
        for view in now.views - self.views:
            spark.catalog.dropTempView(view)
        for function in now.functions - self.functions:
            spark.sql(f"DROP TEMPORARY FUNCTION IF EXISTS `{function}`")


@pytest.fixture()
def restored(spark: SparkSession) -> Iterator[None]:
    """A page may set session options, make views and functions, watch and start queries: none of
    it outlives the page."""
    before = _SessionState.of(spark)
    yield
    for query in spark.streams.active:
        query.stop()
    sluice.unwatch(spark)
    before.restore(spark)


def _localized(code: str, kafka: EmbeddedKafka, work: Path, where: str) -> str:
    """`code` with the broker and the places a reader puts their own rewritten to this run's; a
    string literal left holding another path, URI or broker fails, naming `where`: run as written,
    the snippet would use this machine's."""
    code = code.replace("broker:9092", kafka.bootstrap_servers)
    code = PATH_LITERAL.sub(lambda m: m.group(1) + str(work) + "/" + m.group(2).split("/")[-2] + "/", code)
    rewritten = re.compile(re.escape(str(work)) + r"""[^\s'"`,;]*""")
    advice = (
        "start it with one of /archive/, /checkpoints/, /etc/kafka/, /tables/, /tmp/, s3a://archive/, "
        "s3a://warehouse/ (one path per literal), or `broker:9092`, or mark it `skip <why>`"
    )
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            # the run's own places and broker (rewritten from `broker:9092`) taken out
            left = rewritten.sub("", node.value).replace(kafka.bootstrap_servers, "")
            if found := MACHINE_PATH.search(left):
                raise ValueError(
                    f"{where}: {node.value!r} holds a path, URI or broker the test does not rewrite "
                    f"({found.group(0)!r}: the snippet would use this machine's): {advice}"
                )
        elif isinstance(node, ast.Call):
            for call, path in _paths_given(node):
                if not path.startswith(str(work)):
                    raise ValueError(
                        f"{where}: {path!r} is a relative path given to {call}: Spark's JVM resolves "
                        f"it against its own working folder, the repository's root: {advice}"
                    )
    return code


def _paths_given(node: ast.Call) -> Iterator[tuple[str, str]]:
    """The string literals a call hands Spark as paths, each with what names it: its first argument
    (all of them for `paths`), the path options as `option(...)` or keywords, and a table
    builder's `table(...)` when it holds a `/` (`spark.table("db.events")` names a catalog's table)."""

    def text(arg: ast.expr) -> str | None:
        return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None

    name = node.func.attr if isinstance(node.func, ast.Attribute) else None
    args = [text(a) for a in node.args]
    if name in PATHS_CALLS:
        yield from ((f"{name}()", a) for a in args if a is not None)
    elif name in PATH_CALLS and args and args[0] is not None:
        yield f"{name}()", args[0]
    elif name == "table" and args and args[0] is not None and "/" in args[0]:
        yield "table()", args[0]
    elif name == "option" and len(args) == 2 and args[0] in PATH_OPTIONS and args[1] is not None:
        yield f"option({args[0]!r})", args[1]
    spark_call = name in PATH_CALLS | PATHS_CALLS | {"options"}
    for keyword in node.keywords:
        if keyword.arg not in PATH_OPTIONS or (keyword.arg != "checkpointLocation" and not spark_call):
            continue
        if (value := text(keyword.value)) is not None:
            yield f"{keyword.arg}=", value


def _given(name: str, spark: SparkSession, kafka: EmbeddedKafka, work: Path) -> object:
    if name == "spark":
        return spark
    if name == "timed_files":
        return _timed_files(spark, work)
    if name == "kafka_orders":
        return (
            sluice.KafkaSource.builder()
            .bootstrap_servers(kafka.bootstrap_servers)
            .topics("orders")
            .starting_offsets(sluice.OffsetsInitializer.earliest())
            .build()
        )
    if name == "iceberg_events":
        return _iceberg_events(work)
    if name == "iceberg_catalog":
        return _iceberg_catalog(work)
    if name == "delta_events":
        return _delta_events(work)
    if name == "lost_query":
        return _lost_query(spark, kafka, work)
    if name == "old_kafka_checkpoint":
        _old_kafka_checkpoint(work)
        return None
    generated = _generator(spark, work)
    if name in generated:
        return generated[name]()
    raise ValueError(f"no given value {name!r}: see tests/test_doc_snippets.py")


PYTHON_PAGES = [page for page in PAGES if any(s.skip is None for s in snippets(page, "python"))]


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=[str(p.relative_to(ROOT)) for p in PYTHON_PAGES])
def test_page_snippets_run(
    page: Path,
    spark: SparkSession,
    kafka: EmbeddedKafka,
    work: Path,
    restored: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(work)  # a snippet's relative paths (plot's "backfill.png") land in the scratch
    _run(snippets(page, "python"), str(page.relative_to(ROOT)), spark, kafka, work)


def _rows_read(spark: SparkSession, work: Path, wait: float) -> Callable[[object], int]:
    """What a page's checks (`expect`) may call besides what its snippets define, as DocRun's
    `checks.rowsRead`: runs the stream (a DataFrame, or a source a snippet only built, read by
    `sluice.from_source`) to the end of what it finds (each run in a checkpoint of its own); the rows
    its batches read."""

    def rows_read(read: object) -> int:
        df = read if isinstance(read, DataFrame) else sluice.from_source(spark, read)
        checkpoint = tempfile.mkdtemp(prefix="check", dir=work)
        query = (
            df.writeStream.format("noop")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        if not query.awaitTermination(wait):
            query.stop()
            raise AssertionError(f"rows_read: the query did not end within {wait} s")
        if query.exception() is not None:
            raise query.exception()
        return sum(p["numInputRows"] for p in query.recentProgress)

    return rows_read


class _Watchdog:
    """Once `deadline` seconds have passed inside the `with`, stops every active query of the
    session, again each second (a stopped query releases an `awaitTermination()` that has no
    timeout, and the snippet may start another); `fired` says whether it did."""

    def __init__(self, spark: SparkSession, deadline: float) -> None:
        self._spark, self._deadline = spark, deadline
        self._done = threading.Event()
        self.fired = False

    def _watch(self) -> None:
        if self._done.wait(self._deadline):
            return
        self.fired = True
        while not self._done.is_set():
            for query in self._spark.streams.active:
                with contextlib.suppress(Exception):  # it ended meanwhile: the next round sees
                    query.stop()
            self._done.wait(1)

    def __enter__(self) -> _Watchdog:
        threading.Thread(target=self._watch, daemon=True, name="doc-snippet-watchdog").start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()


class _Blocked(BaseException):
    """Raised in the main thread by `_Alarm`: a BaseException, so a snippet's `except Exception`
    does not swallow it. `in_jvm`: it came inside a py4j call, whose connection still waits."""

    def __init__(self, where: str, in_jvm: bool) -> None:
        super().__init__(where)
        self.in_jvm = in_jvm


class _Alarm:
    """Interrupts the main thread (where pytest runs the test) once `seconds` have passed inside the
    `with`, raising `_Blocked` with where it waited: the innermost frame and the snippet's own line
    (`source` is the file name its code was compiled with; `first` the page line of its code's first
    line). Stopping queries (`_Watchdog`) releases a snippet waiting on one, not one waiting on an
    `Event`, a socket or a state a stopped query never reaches. The handler and timer it replaced are
    restored after. A snippet interrupted inside a call into the JVM leaves that py4j connection
    unanswered, so the runner's next call may wait for ever: `faulthandler`'s timer, armed around
    each snippet, ends the Python lane then (and when a snippet swallows the alarm)."""

    def __init__(self, seconds: float, source: str, first: int, page: str) -> None:
        self._seconds, self._source, self._first, self._page = seconds, source, first, page

    def _where(self, frame: FrameType | None) -> str:
        inner = f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}" if frame else "?"
        while frame is not None and frame.f_code.co_filename != self._source:
            frame = frame.f_back
        if frame is None:
            return inner
        return f"{inner}, called from {self._page}:{self._first + frame.f_lineno - 1}"

    def _ring(self, signum: int, frame: FrameType | None) -> None:
        in_jvm, f = False, frame
        while f is not None and not in_jvm:
            in_jvm, f = "py4j" in f.f_code.co_filename, f.f_back
        raise _Blocked(self._where(frame), in_jvm)

    def __enter__(self) -> _Alarm:
        self._handler = signal.signal(signal.SIGALRM, self._ring)
        self._timer = signal.setitimer(signal.ITIMER_REAL, self._seconds)
        self._began = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._handler)
        left, interval = self._timer
        if left > 0:  # an outer timer keeps running, less the time spent here
            signal.setitimer(
                signal.ITIMER_REAL, max(left - (time.monotonic() - self._began), 0.001), interval
            )


def _run(
    found: list[Snippet],
    page: str,
    spark: SparkSession,
    kafka: EmbeddedKafka,
    work: Path,
    wait: float = QUERY_WAIT_S,
    deadline: float = SNIPPET_DEADLINE_S,
    grace: float = SNIPPET_GRACE_S,
) -> _Queries:
    """Runs a page's snippets in order in one namespace, with their checks and their queries';
    returns what became of the queries."""
    namespace: dict[str, object] = {"__name__": "__doc_snippet__", "rows_read": _rows_read(spark, work, wait)}
    queries = _Queries()
    failing: set[str] = set()  # the queries given to snippets that must raise their failure
    # as sluice.watch adds its own: each progress event read as one JSON (sluice/_listener.py)
    registered = add_listener(spark, queries)
    try:
        ran = 0
        for snippet in found:
            if snippet.skip is not None:
                continue
            given_from = len(queries.started)
            for bound, value in snippet.given.items():
                namespace[bound] = _given(value, spark, kafka, work)
            if snippet.raises is not None:  # the query it is given fails as it expects
                failing.update(queries.started[given_from:])
            before = len(queries.started)
            overran = _Watchdog(spark, deadline)
            # the C-level backstop stays armed after the snippet only when the run is ending
            backstop = 0
            try:
                try:
                    code = compile(
                        _localized(snippet.code, kafka, work, snippet.where), snippet.where, "exec"
                    )
                    # the last resort, at C level: a snippet that swallows the alarm (a bare `except:`),
                    # spins in C, or leaves the main thread's py4j connection waiting on a JVM call the
                    # alarm interrupted would hang make test; this dumps every thread's stack (the
                    # snippet's frames are named by its page:line) and ends the Python lane, failed
                    faulthandler.dump_traceback_later(deadline + 2 * grace, exit=True)
                    with overran, _Alarm(deadline + grace, snippet.where, snippet.line, snippet.page):
                        try:
                            exec(code, namespace)
                        except Exception as e:
                            if snippet.raises is None or _condition(e) != snippet.raises:
                                raise
                        else:
                            if snippet.raises is not None:
                                raise AssertionError(f"it ended without raising {snippet.raises}")
                        # its checks too may wait on a query (processAllAvailable): under the same bounds
                        for check in snippet.expect:
                            assert eval(
                                _localized(check, kafka, work, snippet.where), namespace
                            ), f"{snippet.where}: expected {check}"
                except _Blocked as e:
                    blocked = (
                        f"{snippet.where} was still blocked {grace} s after its {deadline} s deadline (its "
                        f"queries were stopped), waiting at {e}: a snippet must not wait without bound, or "
                        "must be marked `skip <why>`"
                    )
                    if e.in_jvm:
                        # the main thread's py4j connection still waits for the JVM's answer: any
                        # further call on it would wait for ever, so the run ends here (the backstop
                        # bounds its teardown)
                        backstop = 120
                        pytest.exit(blocked, returncode=1)
                    raise AssertionError(blocked) from None
                except Exception as e:
                    # the snippet's own error stays the cause, also when it came after the deadline
                    late = (
                        f" (past its {deadline} s deadline: its queries were stopped)"
                        if overran.fired
                        else ""
                    )
                    raise AssertionError(f"{snippet.where} does not run as written{late}: {e!r}") from e
                assert not overran.fired, (
                    f"{snippet.where} did not end within {deadline} s (its queries were stopped): use "
                    "trigger(availableNow=True) or awaitTermination(timeout), or mark it `skip <why>`"
                )
                # every source of every query the snippet started read rows, and none of them failed
                mine = queries.started[before:]
                stalled = queries.ran(mine, wait, may_idle=snippet.idle is not None)
                _assert_none_failed(queries, mine, snippet.where)  # a failed query read nothing either
                unread = "; ".join(f"{q}: {sources}" for q, sources in stalled.items())
                assert not stalled, (
                    f"{snippet.where} started queries that ran no trigger in {wait} s: {unread}"
                    if snippet.idle is not None
                    else f"{snippet.where} started queries whose sources did not all read rows in {wait} s"
                    f" (read nothing: {unread}; mark it `idle <why>` if it means to read nothing)"
                )
                ran += 1
            finally:
                if backstop:
                    faulthandler.dump_traceback_later(backstop, exit=True)
                else:
                    faulthandler.cancel_dump_traceback_later()
        assert ran > 0
        # a query may fail in a later batch, while the page's next snippets run
        _assert_none_failed(queries, [q for q in queries.started if q not in failing], page)
        return queries
    finally:
        remove_listener(spark, registered)


def test_a_snippet_whose_query_fails_after_it_returned_fails_the_page(
    spark: SparkSession, kafka: EmbeddedKafka, work: Path, restored: None
) -> None:
    """The snippet returns as soon as its query started; the query fails in its first batch."""
    failing = Snippet(
        "example.md",
        3,
        "def fail(batch, batch_id):\n"
        "    raise ValueError('the sink refused batch ' + str(batch_id))\n"
        "query = (sluice.from_source(spark, GeneratorSource.builder().splits(1).records_per_split(5).build())\n"
        "         .writeStream.foreachBatch(fail).start())\n",
        given={"spark": "spark"},
    )
    failing.code = "import sluice\nfrom sluice import GeneratorSource\n" + failing.code
    with pytest.raises(
        AssertionError, match=r"example.md:3 started a query that failed: .*the sink refused batch 0"
    ):
        _run([failing], "example.md", spark, kafka, work)


def _condition(error: Exception) -> str | None:
    """The Sluice error class `error` is or carries, if any."""
    found = sluice.sluice_error(error)
    return found.getCondition() if found is not None else None


def _assert_none_failed(queries: _Queries, query_ids: list[str], where: str) -> None:
    failed = {q: queries.failed[q] for q in query_ids if q in queries.failed}
    assert not failed, f"{where} started a query that failed: " + "; ".join(
        f"{q}: {_causes(failure)}" for q, failure in failed.items()
    )


def _causes(failure: str) -> str:
    """The exception lines of a failure's stack traces (JVM and Python), without the frames."""
    lines = [line.strip() for line in failure.splitlines() if ERROR_LINE.match(line.strip())]
    return " / ".join(dict.fromkeys(lines))[:1000] or failure[:1000]


def test_a_snippet_that_must_raise_fails_when_it_does_not(
    spark: SparkSession, kafka: EmbeddedKafka, work: Path, restored: None
) -> None:
    """`raises` is met only by an error of that class: a query that ends cleanly does not."""
    clean = Snippet("example.md", 17, "query.awaitTermination()\n", given={"query": "query"})
    clean.raises = "SLUICE_DATA_LOSS"
    with pytest.raises(AssertionError, match=r"example.md:17 .*ended without raising SLUICE_DATA_LOSS"):
        _run([clean], "example.md", spark, kafka, work, wait=3)


@pytest.mark.parametrize(
    "fence",
    [
        "```py",
        "```python3",
        "  ```python",
        "~~~python",
        "~~~ python",
        "```python3 title=x",
        "``` python",
        "````python",
        "```Python",
    ],
)
def test_a_python_block_that_would_not_run_fails(fence: str) -> None:
    text = f"# A page\n\nSome text.\n{fence}\nprint(1)\n{fence.strip()[:3]}\n"
    with pytest.raises(ValueError, match=r"^example.md:4: a Python block must open with ```python"):
        _parse(text, "example.md", "python")
    assert [s.code for s in _parse("```python\nprint(1)\n```\n", "example.md", "python")] == ["print(1)\n"]


def test_a_pages_settings_views_and_functions_do_not_outlive_it(spark: SparkSession) -> None:
    before = _SessionState.of(spark)
    partitions, zone = (
        spark.conf.get(k) for k in ("spark.sql.shuffle.partitions", "spark.sql.session.timeZone")
    )
    spark.conf.set("spark.sql.shuffle.partitions", "7")
    spark.conf.set("spark.sql.session.timeZone", "UTC" if zone == "Asia/Tokyo" else "Asia/Tokyo")
    spark.range(3).createOrReplaceTempView("page_view")
    spark.udf.register("page_udf", lambda x: x + 1, "long")
    assert spark.sql("SELECT page_udf(id) AS n FROM page_view").count() == 3
    before.restore(spark)
    assert spark.conf.get("spark.sql.shuffle.partitions") == partitions
    assert spark.conf.get("spark.sql.session.timeZone") == zone
    assert not spark.catalog.tableExists("page_view")
    with pytest.raises(Exception, match="page_udf"):
        spark.sql("SELECT page_udf(1)").collect()
    assert _SessionState.of(spark) == before


def test_unrun_snippets_are_the_listed_ones() -> None:
    """Marking a snippet `skip` is a decision: it is listed here, with its reason, or this fails."""
    marked = [s for page in PAGES for s in snippets(page, "python") if s.skip is not None]
    total = sum(len(snippets(page, "python")) for page in PAGES)
    listed = "; ".join(f"{s.where} ({s.skip})" for s in marked)
    assert [(s.page, s.skip) for s in marked] == SKIPPED, f"{len(marked)} of {total} not run: {listed}"


def _empty_files_snippet(work: Path, idle: str | None) -> Snippet:
    """A query over a folder with no files (a path as a page names it, localized as theirs are): it
    runs no batch, and goes idle. Spark's own file stream, as Sluice's reports a batch of no rows when
    its enumerator's state moves: then a progress, not only onQueryIdle, would say it triggered."""
    (work / "archive" / "nothing-here").mkdir(exist_ok=True)
    return Snippet(
        "example.md",
        7,
        "files = spark.readStream.schema('id BIGINT').json('/archive/nothing-here')\n"
        "query = files.writeStream.format('noop').start()\n",
        given={"spark": "spark"},
        idle=idle,
    )


@pytest.fixture()
def quick_idle(spark: SparkSession) -> Iterator[None]:
    """Spark reports a query idle after 10 s without data by default; these tests wait less."""
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "200ms")
    yield
    spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")


def test_a_query_that_only_went_idle_did_not_run(
    spark: SparkSession, kafka: EmbeddedKafka, work: Path, restored: None, quick_idle: None
) -> None:
    with pytest.raises(
        AssertionError, match=r"example.md:7 started queries whose sources did not all read rows"
    ):
        _run([_empty_files_snippet(work, idle=None)], "example.md", spark, kafka, work, wait=3)


def _files_snippet(*paths: str) -> Snippet:
    """An ``AvailableNow`` query over the union of file sources, one per path: it ends once it read
    what there was."""
    sources = " + ".join(f"[files('{p}')]" for p in paths)
    return Snippet(
        "example.md",
        9,
        "import functools\nimport sluice\n"
        "def files(path):\n"
        "    source = sluice.FileSource.builder().path(path).format('json').schema('id BIGINT').build()\n"
        "    return sluice.from_source(spark, source)\n"
        f"df = functools.reduce(lambda a, b: a.unionByName(b), {sources})\n"
        "query = df.writeStream.format('noop').trigger(availableNow=True).start()\n"
        "query.awaitTermination(60)\n",
        given={"spark": "spark"},
    )


def test_a_snippet_that_never_ends_is_stopped_and_fails(
    spark: SparkSession, kafka: EmbeddedKafka, work: Path, restored: None
) -> None:
    forever = Snippet(
        "example.md",
        11,
        "query = spark.readStream.format('rate').load().writeStream.format('noop').start()\n"
        "query.awaitTermination()\n",
        given={"spark": "spark"},
    )
    began = time.monotonic()
    with pytest.raises(AssertionError, match=r"example.md:11 did not end within 3 s"):
        _run([forever], "example.md", spark, kafka, work, wait=3, deadline=3)
    assert time.monotonic() - began < 60
    assert not spark.streams.active


def test_a_snippet_blocked_on_something_else_than_a_query_is_interrupted_and_fails(
    spark: SparkSession, kafka: EmbeddedKafka, work: Path, restored: None
) -> None:
    """Stopping queries does not release a wait on an `Event` that nothing sets: the main thread is
    interrupted once the grace after the deadline passed, and the failure says where it waited."""
    blocked = Snippet("example.md", 15, "import threading\n\nthreading.Event().wait()\n")
    handler = signal.getsignal(signal.SIGALRM)
    began = time.monotonic()
    with pytest.raises(
        AssertionError,
        match=r"example.md:15 was still blocked 1 s after its 3 s deadline .* in wait, called from "
        r"example.md:17",
    ):
        _run([blocked], "example.md", spark, kafka, work, wait=3, deadline=3, grace=1)
    assert time.monotonic() - began < 60
    assert signal.getsignal(signal.SIGALRM) is handler  # the handler it replaced is back
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_query_that_ended_without_reading_did_not_run(
    spark: SparkSession, kafka: EmbeddedKafka, work: Path, restored: None
) -> None:
    (work / "archive" / "nothing-here").mkdir(exist_ok=True)  # a mistyped path reads the same
    with pytest.raises(AssertionError, match=r"read nothing: [-\w]+: source 0 \(SluiceMicroBatchStream"):
        _run([_files_snippet("/archive/nothing-here/")], "example.md", spark, kafka, work, wait=3)


def test_every_source_of_a_query_must_read(
    spark: SparkSession, kafka: EmbeddedKafka, work: Path, restored: None
) -> None:
    (work / "archive" / "nothing-here").mkdir(exist_ok=True)
    snippet = _files_snippet("/archive/events/", "/archive/nothing-here/")
    with pytest.raises(
        AssertionError, match=r"read nothing: [-\w]+: source 1 \(SluiceMicroBatchStream"
    ) as failed:
        _run([snippet], "example.md", spark, kafka, work, wait=3)
    assert "source 0" not in str(failed.value)


def test_a_snippet_marked_idle_may_read_nothing(
    spark: SparkSession, kafka: EmbeddedKafka, work: Path, restored: None, quick_idle: None
) -> None:
    queries = _run(
        [_empty_files_snippet(work, idle="the folder is empty")], "example.md", spark, kafka, work, wait=30
    )
    assert len(queries.started) == 1


def test_snippets_that_may_read_nothing_are_the_listed_ones() -> None:
    """Marking a snippet `idle` lets its queries pass without reading a row: a decision, listed."""
    marked = [(s.page, s.idle) for page in PAGES for s in snippets(page, "python") if s.idle is not None]
    assert marked == IDLE


@pytest.mark.parametrize(
    ("code", "found"),
    [
        ("path = '/etc/events'\n", "/e"),  # an absolute path of this machine
        ("path = 'file:/data/x'\n", "file:/"),  # a URI
        ('sql = "SELECT * FROM parquet.`/srv/x`"\n', "`/s"),  # inside a SQL text
        ("servers = 'broker:9093'\n", "broker:9093"),  # another broker
        ("paths = '/tmp/a,/etc/b'\n", ",/e"),  # a second path after a rewritten one
        ("servers = 'localhost:9092'\n", "localhost:9092"),  # brokers of this machine
        ("servers = '127.0.0.1:9092'\n", "127.0.0.1:9092"),
        ("servers = 'broker:9092,kafka-1:9092'\n", "kafka-1:9092"),
        ("path = '~/data'\n", "~/d"),  # a home folder
        # relative paths given to Spark, which its JVM resolves against the repository's root
        ("spark.readStream.format('json').load('data/events')\n", "load()"),
        ("sluice.FileSource.builder().path('chk')\n", "path()"),
        ("sluice.FileSource.builder().paths('/archive/a/', 'data/b')\n", "paths()"),
        ("spark.range(1).writeStream.option('checkpointLocation', 'checkpoints/q')\n", "option("),
        ("spark.range(1).writeStream.start(checkpointLocation='chk')\n", "checkpointLocation="),
        ("spark.range(1).write.parquet('out')\n", "parquet()"),
        ("spark.range(1).writeStream.options(path='out')\n", "path="),
        ("sluice.DeltaSource.builder().table('tables/events')\n", "table()"),
    ],
)
def test_a_literal_naming_a_place_of_this_machine_fails(
    code: str, found: str, spark: SparkSession, kafka: EmbeddedKafka, work: Path, restored: None
) -> None:
    snippet = Snippet("example.md", 13, code, given={"spark": "spark"})
    with pytest.raises(AssertionError, match=r"example.md:13 does not run as written") as failed:
        _run([snippet], "example.md", spark, kafka, work, wait=3)
    if found.endswith(("()", "(", "=")):  # the call it was given to
        assert f"is a relative path given to {found}" in str(failed.value)
    else:
        assert "holds a path, URI or broker the test does not rewrite" in str(failed.value)
        assert repr(found) in str(failed.value)


@pytest.mark.parametrize(
    "code",
    [
        "spark.conf.set('spark.sql.shuffle.partitions', '2')\n",  # a setting, no path
        "start, end = '12:30', '2023-11-14T22:13:20Z'\n",  # times, no brokers
        "names = spark.table('db.events')\n",  # a catalog's table, no location
        "plot = lambda query, path: path\nplot(None, path='backfill.png')\n",  # Python's own file
        "with open('notes.txt', 'w') as f:\n    f.write('a')\n",
        "spark.range(1).writeStream.option('maxFilesPerTrigger', '1')\n",
    ],
)
def test_literals_naming_no_place_of_this_machine_are_left(
    code: str, kafka: EmbeddedKafka, work: Path
) -> None:
    assert _localized(code, kafka, work, "example.md:1") == code


def test_places_a_reader_puts_their_own_are_rewritten_wherever_the_literal_is(
    kafka: EmbeddedKafka, work: Path
) -> None:
    code = 'a = \'/tmp/x\'\nb = f"/archive/{a}"\nc = """LOCATION \'/tables/t\'"""\nd = \'broker:9092\'\n'
    namespace: dict[str, object] = {}
    exec(_localized(code, kafka, work, "example.md:1"), namespace)
    assert namespace["a"] == f"{work}/tmp/x"
    assert namespace["b"] == f"{work}/archive/{work}/tmp/x"
    assert namespace["c"] == f"LOCATION '{work}/tables/t'"
    assert namespace["d"] == kafka.bootstrap_servers
