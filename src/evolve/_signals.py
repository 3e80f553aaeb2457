"""Signals that stop a writer: turned into exceptions, so that it unwinds through its cleanup.

SIGINT already raises KeyboardInterrupt; :func:`signals_raise` makes SIGTERM and SIGHUP raise
:class:`Terminated` the same way, so that a writer stopped by either finishes or undoes its
in-flight write (`evolve.txn`) before it exits. :func:`signals_held` keeps a second
signal from cutting that cleanup short. Both only act in the main thread (the only one Python
delivers signals to).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, TypeAlias

# What `signal.getsignal` returns: a callable, SIG_DFL, SIG_IGN, or None (set outside Python).
Handler: TypeAlias = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived (raised where the process was)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


@contextmanager
def _handling(sigs: Iterable[int], handler: Handler) -> Iterator[None]:
    """`handler` for each of `sigs` while the block runs, and the handlers as they were after it.

    A signal can land between any two of these calls, and what its handler raises leaves
    the loop there: each old handler is read before its replacement is set, and every one
    read is put back, so none is left replaced after the block (a SIGINT handler that
    swallowed Ctrl-C for the rest of the process, say). Putting one back is retried when an
    interrupt lands right after it; the first such interrupt is raised once all are back.
    """
    old: dict[int, Handler] = {}
    try:
        for sig in sigs:
            old[sig] = signal.getsignal(sig)
            signal.signal(sig, handler)
        yield
    finally:
        landed: BaseException | None = None
        for sig, previous in old.items():
            if previous is None:  # set outside Python: nothing Python can put back
                continue
            for _ in range(3):
                try:
                    signal.signal(sig, previous)
                    break
                except BaseException as exc:  # a handler put back ran at once: put it back again
                    landed = landed or exc
        if landed is not None:
            raise landed


@contextmanager
def signals_raise() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into :class:`Terminated` (SIGINT already raises
    KeyboardInterrupt), so that a stopped writer unwinds through its cleanup."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum: int, frame: FrameType | None) -> None:
        raise Terminated(signal.Signals(signum).name)

    sigs = [
        sig
        for sig in (signal.SIGTERM, signal.SIGHUP)
        if signal.getsignal(sig) is not signal.SIG_IGN  # e.g. SIGHUP under nohup stays ignored
    ]
    with _handling(sigs, on_signal):
        yield


@contextmanager
def signals_held() -> Iterator[None]:
    """While a rollback runs, a second Ctrl-C or SIGTERM does not cut it short."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with _handling(_STOPPING, lambda signum, frame: None):
        yield


@contextmanager
def signals_deferred() -> Iterator[None]:
    """A short step that must not be cut in half (a folder made and named, or removed) and
    must not lose a signal either: SIGINT, SIGTERM, SIGHUP or SIGALRM (a time limit) arriving
    inside the block take effect when it ends, delivered to the handlers as they were."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    try:
        with _handling(_STOPPING, lambda signum, frame: arrived.append(signum)):
            yield
    finally:
        for signum in dict.fromkeys(arrived):
            signal.raise_signal(signum)


_STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM)
