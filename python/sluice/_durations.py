"""The one duration type of the Python builders: a ``datetime.timedelta``, or an ``int`` taken as
milliseconds (the unit of the options the JVM declares). The ``*_ms`` methods of earlier releases
stay as deprecated aliases for one release."""

from __future__ import annotations

import numbers
import warnings
from datetime import timedelta
from typing import TypeAlias

Duration: TypeAlias = timedelta | int
"""A ``datetime.timedelta``, or milliseconds as an ``int``."""


def millis(value: Duration, what: str, *, negative: bool = False) -> int:
    """``value`` in whole milliseconds; a bool, float or str is refused, naming ``what``."""
    if isinstance(value, timedelta):
        ms = value // timedelta(milliseconds=1)
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
        ms = int(value)  # an int, or numpy's and others' integers
    else:
        raise TypeError(f"{what} must be a datetime.timedelta or milliseconds as an int, not {value!r}")
    if ms < 0 and not negative:
        raise ValueError(f"{what} must not be negative, not {value!r}")
    return ms


def renamed(old: str, new: str) -> None:
    """Warns that ``old`` (a ``*_ms`` name) goes after this release, in favour of ``new``."""
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release: use {new}, which takes a "
        "datetime.timedelta or milliseconds as an int",
        DeprecationWarning,
        stacklevel=3,
    )


def legacy_millis(value: object) -> int:
    """What a ``*_ms`` alias was given, as its method took it before the rename: anything ``int()``
    takes (a string of digits, a float, numpy's integers), so every old call keeps working."""
    return int(value)  # type: ignore[call-overload]
