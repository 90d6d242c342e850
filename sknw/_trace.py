"""What ran inside a block of code, and the thresholds a block may change.

The tests and benchmarks observe the paths the code takes (which backend
summed, which fallback ran, how many passes were made) through
:func:`traced`, not by replacing its functions: the code calls
:func:`record` where a path is decided, with the event's name and details,
and a :class:`Trace` collects them while a block is open (nothing is
recorded, and little is spent, outside one). Events recorded by the
workers of ``n_jobs`` are collected too.

The thresholds that decide between paths (batch sizes, subsample sizes,
tolerances of a fast path) are :class:`Tunable`: their defaults are
documented where they are defined, the code reads :attr:`Tunable.value`, and
a block may change one with :meth:`Tunable.set` to force a path on small
data.
"""

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field

_LOCK = threading.Lock()

#: The traces being recorded (nested blocks each receive every event).
_OPEN = []


@dataclass(frozen=True)
class Event:
    """One recorded event: its ``name`` and ``details`` (keywords)."""

    name: str
    details: dict


@dataclass
class Trace:
    """The events recorded while a :func:`traced` block was open, in order.

    Examples
    --------
    >>> from sknw._trace import record, traced
    >>> with traced() as trace:
    ...     record("pass", backend="brute", n_queries=3)
    >>> trace.count("pass")
    1
    >>> trace.details("pass")
    [{'backend': 'brute', 'n_queries': 3}]
    """

    events: list = field(default_factory=list)

    def details(self, name, **match):
        """The details of the events ``name`` whose details hold ``match``."""
        return [
            e.details
            for e in self.events
            if e.name == name and all(e.details.get(k) == v for k, v in match.items())
        ]

    def count(self, name, **match):
        """How many events ``name`` (whose details hold ``match``) ran."""
        return len(self.details(name, **match))

    def values(self, name, key, **match):
        """The detail ``key`` of each event ``name`` (holding ``match``)."""
        return [d[key] for d in self.details(name, **match)]


@contextmanager
def traced():
    """A block whose events are recorded: yields its :class:`Trace`."""
    trace = Trace()
    with _LOCK:
        _OPEN.append(trace)
    try:
        yield trace
    finally:
        with _LOCK:
            _OPEN.remove(trace)


def tracing():
    """Whether a :func:`traced` block is open: details that cost something to
    compute are computed only then."""
    return bool(_OPEN)


def record(name, **details):
    """Record the event ``name`` with its ``details`` in every open trace
    (nothing outside a :func:`traced` block)."""
    if not _OPEN:
        return
    event = Event(name, details)
    with _LOCK:
        for trace in _OPEN:
            trace.events.append(event)


_UNSET = object()


class Tunable:
    """A threshold of the code: its ``default`` holds unless a block changes
    it (:meth:`set`); the code reads :attr:`value` where it decides.

    Examples
    --------
    >>> from sknw._trace import Tunable
    >>> BATCH = Tunable(256)
    >>> with BATCH.set(8):
    ...     BATCH.value
    8
    >>> BATCH.value
    256
    """

    __slots__ = ("default", "_value")

    def __init__(self, default):
        self.default = default
        self._value = _UNSET

    def __repr__(self):
        return f"Tunable({self.default!r})"

    @property
    def value(self):
        """The threshold in force."""
        value = self._value
        return self.default if value is _UNSET else value

    @contextmanager
    def set(self, value):
        """A block in which the threshold is ``value`` (restored on leaving,
        also where the block raises)."""
        with _LOCK:
            saved, self._value = self._value, value
        try:
            yield
        finally:
            with _LOCK:
                self._value = saved
