"""Sluice's errors in Python: ``PySparkException``s that carry the JVM's error class.

The classes (``SLUICE_INVALID_OPTION``, ``SLUICE_DATA_LOSS``, ...) are declared once, in the JVM
(``sluice.errors.ErrorClasses``); ``_errors.json`` is the copy ``make docs`` writes from there, as
``_options.json`` is for options. An error the JVM raised reaches Python as PySpark's own exception,
whose ``getCondition()`` already names the class (classic PySpark asks the JVM object, Spark Connect
reads what the server sent); :func:`sluice_error` turns it into one of these, with the same message.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

from pyspark.errors import PySparkException

PREFIX = "SLUICE_"


@cache
def error_classes() -> dict[str, dict[str, str]]:
    """Every declared error class by name: its ``sqlState``, ``kind`` and message ``template``."""
    text = resources.files("sluice").joinpath("_errors.json").read_text(encoding="utf-8")
    return json.loads(text)["errorClasses"]


def render(error_class: str, parameters: dict[str, str]) -> str:
    """The message of ``error_class`` with its ``<parameter>``s filled, in one pass over the
    template (as ``sluice.errors.ErrorClass.message`` words it in the JVM)."""
    template = error_classes()[error_class]["template"]
    return re.sub(r"<([a-zA-Z]+)>", lambda m: parameters[m.group(1)], template)


class SluiceException(PySparkException):
    """An error of Sluice: ``getCondition()`` is its class (``SLUICE_...``) and
    ``getMessageParameters()`` the values its message was built from, as for Spark's own errors.
    ``str()`` is the message as the JVM words it (``getMessage()`` puts the class before it).

    Parameters
    ----------
    message : str
        The message.
    error_class : str
        The error class, one of docs/errors.md.
    message_parameters : dict of str to str, optional
        The values the message was built from.

    Examples
    --------
    >>> try:
    ...     sluice.GeneratorSource.builder().splits(0).build()
    ... except sluice.SluiceException as e:
    ...     e.getCondition()
    'SLUICE_INVALID_OPTION'
    """

    def __init__(
        self,
        message: str,
        error_class: str,
        message_parameters: dict[str, str] | None = None,
    ) -> None:
        super().__init__(
            message=message,
            errorClass=error_class,
            messageParameters=dict(message_parameters or {}),
        )

    def getSqlState(self) -> str | None:  # noqa: N802 - PySpark's name
        """The SQLSTATE the error class declares (docs/errors.md).

        Returns
        -------
        str or None

        Examples
        --------
        >>> error.getSqlState()
        '42K0E'
        """
        declared = error_classes().get(self.getCondition() or "")
        return declared["sqlState"] if declared else None

    def __str__(self) -> str:
        return self._message

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self._message, self.getCondition(), self.getMessageParameters()))


class SluiceConfigError(SluiceException, ValueError):
    """A source, strategy or option was given a value Sluice cannot use. The message names it.

    Still a ``ValueError``, as it always was.

    Parameters
    ----------
    message : str
        What is wrong and what to do.
    error_class : str, default "SLUICE_INVALID_CONFIGURATION"
        The error class, one of docs/errors.md.
    message_parameters : dict of str to str, optional
        The values the message was built from; by default ``{"message": message}``.

    Examples
    --------
    >>> try:
    ...     sluice.KafkaSource.builder().topics("events").build()
    ... except sluice.SluiceConfigError as e:
    ...     print(e)
    """

    def __init__(
        self,
        message: str,
        error_class: str = "SLUICE_INVALID_CONFIGURATION",
        message_parameters: dict[str, str] | None = None,
    ) -> None:
        parameters = {"message": message} if message_parameters is None else message_parameters
        super().__init__(message, error_class, parameters)


class SluiceRuntimeError(SluiceException, RuntimeError):
    """A fault met while a query runs (records lost, a file changed, a checkpoint too new).

    Examples
    --------
    >>> error = sluice.sluice_error(failed)  # a query's StreamingQueryException
    >>> isinstance(error, sluice.SluiceRuntimeError) and error.getCondition() == "SLUICE_DATA_LOSS"
    True
    """


#: The attribute on a PySpark captured exception that holds the JVM object of a Sluice error which
#: PySpark would otherwise drop (:func:`_keep_sluice_errors_of_java`).
_JAVA_ERROR = "_sluice_java_error"


def _is_sluice_error_of_java(java_error: Any) -> bool:
    from py4j.java_gateway import is_instance_of
    from pyspark import SparkContext

    try:
        gateway = SparkContext._gateway  # noqa: SLF001 - py4j is the route to the JVM object
        if gateway is None or not is_instance_of(gateway, java_error, "org.apache.spark.SparkThrowable"):
            return False
        condition = java_error.getCondition()
        return condition is not None and str(condition).startswith(PREFIX)
    except Exception:  # noqa: BLE001 - a conversion must never fail for Sluice's sake
        return False


def _keep_sluice_errors_of_java() -> None:
    """Makes classic PySpark keep the JVM object of a Sluice error it converts into an exception
    without one, so that :func:`sluice_error` can still read its class and parameters.

    PySpark keeps the JVM object (``_origin``) only of the types it knows (an
    ``IllegalArgumentException``, a ``SparkRuntimeException``, ...). A Sluice runtime fault is an
    ``IllegalStateException``: PySpark makes it an ``UnknownException`` of its text alone, and the
    text lacks the class (the message is the template filled, several classes share ``<message>``).
    That happens whenever PySpark converts a cause by itself, as ``StreamingQuery.exception()`` does:
    it builds its ``StreamingQueryException`` from the JVM's message and cause, without the JVM
    object whose cause chain ``sluice_error`` reads for what ``awaitTermination()`` raised. So
    PySpark's conversion is wrapped: it converts as before, and where it kept no JVM object of a
    Sluice error, the object is kept beside (nothing PySpark reads changes)."""
    try:
        from pyspark.errors.exceptions import captured
    except ImportError:  # a PySpark without the classic (py4j) side
        return
    convert = getattr(captured, "_convert_exception", None)
    if convert is None or getattr(convert, "_sluice_wrapped", False):
        return

    def converted(e: Any) -> captured.CapturedException:  # PySpark's signature, its names too
        error = convert(e)
        if getattr(error, "_origin", None) is None and _is_sluice_error_of_java(e):
            setattr(error, _JAVA_ERROR, e)
        return error

    converted._sluice_wrapped = True  # type: ignore[attr-defined] # once, also if loaded again
    captured._convert_exception = converted  # noqa: SLF001 - what convert_exception calls


_keep_sluice_errors_of_java()


def _condition(error: BaseException) -> str | None:
    if not isinstance(error, PySparkException):
        return None
    try:
        return error.getCondition()
    except Exception:  # noqa: BLE001 - a captured exception whose JVM is gone has no class to give
        return None


def _message(error: BaseException) -> str:
    # classic: the JVM's getMessage(); Connect: the message the server sent
    for attribute in ("_desc", "_message"):
        text = getattr(error, attribute, None)
        if isinstance(text, str) and text:
            return text
    return str(error)


def sluice_error(error: BaseException) -> SluiceException | None:
    """The Sluice error ``error`` is or was caused by, as a :class:`SluiceException` (a
    :class:`SluiceConfigError` or :class:`SluiceRuntimeError` by its declared kind); None when it
    is not one. Works on classic PySpark's captured exceptions (a failed query's too, the same
    error from what ``query.awaitTermination()`` raised and from ``query.exception()``: the JVM's
    cause chain is read) and on Spark Connect's for what the server refused; for a query that
    failed while running, Connect sends only ``STREAM_FAILED`` and the text (docs/errors.md).

    Parameters
    ----------
    error : BaseException
        Any exception, e.g. what ``query.awaitTermination()`` raised or ``query.exception()``.

    Returns
    -------
    SluiceException or None

    Examples
    --------
    >>> try:
    ...     query.awaitTermination()
    ... except Exception as e:
    ...     error = sluice.sluice_error(e)
    """
    seen: BaseException | None = error
    visited: set[int] = set()
    while seen is not None and id(seen) not in visited:
        visited.add(id(seen))
        if isinstance(seen, SluiceException):
            return seen
        condition = _condition(seen)
        if condition is not None and condition.startswith(PREFIX):
            parameters = dict(seen.getMessageParameters() or {})  # type: ignore[attr-defined]
            kind = error_classes().get(condition, {}).get("kind")
            cls = SluiceConfigError if kind == "configuration" else SluiceRuntimeError
            return cls(_message(seen), condition, parameters)
        # classic: PySpark converts causes it has no type for without their JVM object, so the
        # JVM's own cause chain is where a class on a cause is found; where PySpark built the
        # exception without one (StreamingQuery.exception()), the Sluice error's own JVM object
        # was kept beside (_keep_sluice_errors_of_java)
        origin = getattr(seen, "_origin", None) or getattr(seen, _JAVA_ERROR, None)
        if origin is not None:
            found = sluice_error_of_java(origin)
            if found is not None:
                return found
        seen = getattr(seen, "_cause", None) or seen.__cause__
    return None


def sluice_error_of_java(java_error: Any) -> SluiceException | None:
    """The Sluice error a JVM exception (a py4j object PySpark left unconverted) is or was caused
    by, or None."""
    from py4j.java_gateway import is_instance_of
    from pyspark import SparkContext

    gateway = SparkContext._gateway  # noqa: SLF001 - py4j is the route to the JVM object
    seen = java_error
    for _ in range(16):  # a cause chain is short; a cycle must not loop
        if seen is None:
            return None
        if is_instance_of(gateway, seen, "org.apache.spark.SparkThrowable"):
            condition = seen.getCondition()
            if condition is not None and str(condition).startswith(PREFIX):
                condition = str(condition)
                parameters = {str(k): str(v) for k, v in dict(seen.getMessageParameters()).items()}
                kind = error_classes().get(condition, {}).get("kind")
                cls = SluiceConfigError if kind == "configuration" else SluiceRuntimeError
                return cls(str(seen.getMessage()), condition, parameters)
        seen = seen.getCause()
    return None
