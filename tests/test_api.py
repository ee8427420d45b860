"""The public Python API as a PySpark user meets it: every public name of every public module
(``sluice.__all__``, ``sluice.progress``, ``sluice.testing``, ...) documented numpydoc-style, the package type-checked (mypy) and its reference rendered (pdoc) without warnings,
one duration type in the builders (the old ``*_ms`` names kept as deprecated aliases), and
``sluice.status`` creating no SparkSession of its own."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sluice
from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python"
# sources as their options (built, they would be checked by the JVM of the test session)
FIRST = sluice.FileSource({"source": "file", "path": "/a", "schema": "a INT"})
LIVE = sluice.KafkaSource({"source": "kafka", "subscribe": "t"})


properties: set[str] = set()


def _public_modules() -> list[Any]:
    """``sluice`` and each of its public modules, as the API reference renders them."""
    found = [importlib.import_module(f"sluice.{m.name}") for m in pkgutil.iter_modules(sluice.__path__)]
    return [sluice, *(m for m in found if not m.__name__.rsplit(".", 1)[-1].startswith("_"))]


def _public_names(module: Any) -> list[str]:
    """A module's ``__all__``, or else the functions and classes it defines without a leading ``_``."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__ == module.__name__
    ]


def _public_callables() -> Iterator[tuple[str, Any]]:
    """Every public function, class and public method of a public class of every public module
    (``sluice``, ``sluice.progress``, ``sluice.testing``, ...), each once, by its first name."""
    seen: set[int] = set()
    for module in _public_modules():
        prefix = "" if module is sluice else module.__name__.removeprefix("sluice.") + "."
        for name in _public_names(module):
            value = getattr(module, name)
            if id(value) in seen or not (inspect.isfunction(value) or inspect.isclass(value)):
                continue
            seen.add(id(value))
            yield prefix + name, value
            if not inspect.isclass(value):
                continue
            for member, attr in vars(value).items():
                if member.startswith("_"):
                    continue
                function = attr.__func__ if isinstance(attr, staticmethod | classmethod) else attr
                if inspect.isfunction(function):
                    yield f"{prefix}{name}.{member}", function
                elif isinstance(attr, property):
                    properties.add(f"{prefix}{name}.{member}")
                    yield f"{prefix}{name}.{member}", attr.fget


def _wants(function: Callable[..., Any]) -> list[str]:
    """The numpydoc sections a function's docstring owes: Parameters if it takes any, Returns if it
    returns something, Examples always."""
    signature = inspect.signature(function)
    wanted = []
    if [p for p in signature.parameters if p not in ("self", "cls")]:
        wanted.append("Parameters")
    if signature.return_annotation not in ("None", None, inspect.Signature.empty):
        wanted.append("Returns")
    return [*wanted, "Examples"]


def test_every_public_name_is_exported_and_documented_numpydoc_style() -> None:
    # what tests, the demo and the docs import from the package itself
    for name in (
        "EXTENSIONS",
        "is_remote",
        "SourceSwitchContext",
        "KafkaSourceBuilder",
        "HybridSourceBuilder",
    ):
        assert name in sluice.__all__, name
    missing = []
    for name, value in _public_callables():
        doc = inspect.getdoc(value) or ""
        if not doc:
            missing.append(f"{name}: no docstring")
            continue
        if isinstance(value, type):
            wanted = ["Examples"]
        elif name in properties:
            wanted = []  # a property's one line says what it holds
        else:
            wanted = _wants(value)
        absent = [section for section in wanted if f"\n{section}\n---" not in f"\n{doc}"]
        if absent:
            missing.append(f"{name}: no {', '.join(absent)}")
    assert not missing, "numpydoc sections missing:\n" + "\n".join(missing)


def test_the_package_type_checks() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "sluice"], cwd=PACKAGE, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_api_reference_renders_without_warnings(tmp_path: Path) -> None:
    out = tmp_path / "api"
    done = subprocess.run(
        [
            sys.executable,
            "-W",
            "error",
            "-m",
            "pdoc",
            "-d",
            "numpy",
            "-o",
            str(out),
            "sluice",
            "sluice.testing",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and not done.stderr.strip(), done.stdout + done.stderr
    page = (out / "sluice.html").read_text(encoding="utf-8")
    for name in ("from_source", "KafkaSourceBuilder", "WatermarkStrategy", "SourceSwitchContext"):
        assert f'id="{name}"' in page, name
    assert (out / "sluice" / "testing.html").exists()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (lambda: sluice.GeneratorSource.builder().event_time_step_ms(1500),
         lambda: sluice.GeneratorSource.builder().event_time_step(timedelta(seconds=1.5))),
        (lambda: sluice.GeneratorSource.builder().split_skew_ms(1, -60_000),
         lambda: sluice.GeneratorSource.builder().split_skew(1, timedelta(minutes=-1))),
        (lambda: sluice.FileSource.builder().monitor_interval_ms(10_000),
         lambda: sluice.FileSource.builder().monitor_interval(timedelta(seconds=10))),
        (lambda: sluice.FileSource.builder().open_compressed_file_idle_ms(300_000),
         lambda: sluice.FileSource.builder().open_compressed_file_idle(timedelta(minutes=5))),
        (lambda: sluice.FileSource.builder().not_ready_timeout_ms(600_000),
         lambda: sluice.FileSource.builder().not_ready_timeout(timedelta(minutes=10))),
        (lambda: sluice.KafkaSource.builder().partition_discovery_interval_ms(60_000),
         lambda: sluice.KafkaSource.builder().partition_discovery_interval(timedelta(minutes=1))),
        (lambda: sluice.HybridSource.builder(FIRST).add_source(LIVE, start_at_previous_end_minus_ms=60_000),
         lambda: sluice.HybridSource.builder(FIRST).add_source(LIVE, start_at_previous_end_minus=timedelta(minutes=1))),
    ],
)  # fmt: skip
def test_one_duration_type_and_the_old_ms_names_still_work(
    old: Callable[[], Any], new: Callable[[], Any]
) -> None:
    with pytest.warns(DeprecationWarning, match="removed in the next release: use "):
        before = old()._options  # noqa: SLF001 - the options as set, before any JVM check
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        now = new()._options  # noqa: SLF001
    assert before == now


def test_the_old_ms_names_take_what_they_took_before() -> None:
    # before the rename these stored int(value) or str(value): strings of digits and numpy's
    # integers worked, and must keep working for as long as the old names stay
    import numpy as np

    for value in ("10000", np.int64(10_000), 10_000.0):
        with pytest.warns(DeprecationWarning):
            options = sluice.FileSource.builder().monitor_interval_ms(value)._options  # type: ignore[arg-type]  # noqa: SLF001
        assert options["monitorIntervalMs"] == "10000", value
    assert sluice.FileSource.builder().monitor_interval(np.int64(250))._options["monitorIntervalMs"] == "250"  # type: ignore[arg-type]  # noqa: SLF001


def test_durations_refuse_what_is_not_a_timedelta_or_milliseconds() -> None:
    with pytest.raises(TypeError, match="interval must be a datetime.timedelta or milliseconds as an int"):
        sluice.FileSource.builder().monitor_interval(1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout must not be negative"):
        sluice.FileSource.builder().not_ready_timeout(timedelta(seconds=-1))
    assert sluice.FileSource.builder().monitor_interval(250)._options["monitorIntervalMs"] == "250"  # noqa: SLF001


def test_schema_takes_a_struct_type_or_ddl() -> None:
    struct = StructType([StructField("id", LongType()), StructField("user", StringType())])
    from_struct = sluice.FileSource.builder().schema(struct)._options["schema"]  # noqa: SLF001
    assert StructType.fromJson(__import__("json").loads(from_struct)) == struct
    assert sluice.FileSource.builder().schema("id BIGINT")._options["schema"] == "id BIGINT"  # noqa: SLF001


def test_status_creates_no_session_where_none_is_active(
    spark: SparkSession, checkpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = sluice.GeneratorSource.builder().splits(2).records_per_split(10).build()
    query = (
        sluice.from_source(spark, source, name="api-status")
        .writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(60)
    created: list[str] = []

    def refuse(*_: object) -> SparkSession:
        created.append("getOrCreate")
        raise AssertionError("sluice.status created a SparkSession")

    # as in a thread that never set a session: none active, and none may be made
    monkeypatch.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: None))
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", refuse)
    table = sluice.status(query)
    assert created == []
    assert sorted(table["split"]) == ["0", "1"]
    assert list(table["records"]) == [10, 10]
