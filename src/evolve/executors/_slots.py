"""Slots: what a job of the `threads` executor holds while it computes, and while it waits
on a server.

A job of the `threads` executor runs holding one of C *work* slots, so at most C jobs compute
at once, as `--concurrency C` says. A job that sends a request to a model server wraps the
exchange in :func:`request_slot`: for its duration the job gives its work slot back and holds
one of C *request* slots instead, so at most C requests are in flight at the server, and while
they are, up to C other jobs compute: the next episodes get their requests ready.

That matters when a wave of replies arrives together (`benchmarks/bench_concurrency.py`):
the replies are handled one after the other under the interpreter lock, and without the
request slots each thread finishes its episode and prepares the next before its next request
goes out, so that work queues between one reply and the next request. With them, a freed
request slot goes at once to a request that is already built.

Outside a `threads` map (serial runs, the process and ray workers, the caller's own thread)
:func:`request_slot` does nothing.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager


class FairSemaphore:
    """A semaphore that hands a released slot to the longest waiter (first come, first
    served): `threading.Semaphore` lets the releasing thread take the slot straight back,
    which can starve a waiter for as long as that thread has work."""

    def __init__(self, value: int) -> None:
        self._lock = threading.Lock()
        self._free = value
        self._waiters: deque[threading.Lock] = deque()

    def acquire(self) -> None:
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                return
            baton = threading.Lock()
            baton.acquire()
            self._waiters.append(baton)
        baton.acquire()  # released by `release`, which hands the slot over

    def release(self) -> bool:
        """Give the slot back; True when it went to a waiter."""
        with self._lock:
            if self._waiters:
                self._waiters.popleft().release()
                return True
            self._free += 1
            return False


class Slots:
    """The work and request slots of one map: `concurrency` of each."""

    def __init__(self, concurrency: int) -> None:
        self.work = FairSemaphore(concurrency)
        self.requests = FairSemaphore(concurrency)


_LOCAL = threading.local()


@contextmanager
def holding_work_slot(slots: Slots) -> Iterator[None]:
    """Run the body (one job) holding a work slot of `slots`; :func:`request_slot` inside it
    trades that for a request slot."""
    slots.work.acquire()
    _LOCAL.slots = slots
    try:
        yield
    finally:
        _LOCAL.slots = None
        slots.work.release()


@contextmanager
def request_slot() -> Iterator[None]:
    """Wait on a server in one of the map's request slots, the work slot given back meanwhile
    (and taken again after). Never holds one slot while waiting for the other, so it cannot
    deadlock. A no-op outside a `threads` map."""
    slots: Slots | None = getattr(_LOCAL, "slots", None)
    if slots is None:
        yield
        return
    slots.work.release()
    try:
        slots.requests.acquire()
        try:
            yield
        finally:
            if slots.requests.release():
                time.sleep(0)  # let the waiter send its request before this job goes on
    finally:
        slots.work.acquire()
