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
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived (raised where the process was)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


@contextmanager
def signals_raise() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into :class:`Terminated` (SIGINT already raises
    KeyboardInterrupt), so that a stopped writer unwinds through its cleanup."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum: int, frame: FrameType | None) -> None:
        raise Terminated(signal.Signals(signum).name)

    old = {
        sig: signal.signal(sig, on_signal)
        for sig in (signal.SIGTERM, signal.SIGHUP)
        if signal.getsignal(sig) is not signal.SIG_IGN  # e.g. SIGHUP under nohup stays ignored
    }
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


@contextmanager
def signals_held() -> Iterator[None]:
    """While a rollback runs, a second Ctrl-C or SIGTERM does not cut it short."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM)
    old = {sig: signal.signal(sig, lambda signum, frame: None) for sig in sigs}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """A short step that must not be cut in half (a folder made and named, or removed) and
    must not lose a signal either: SIGINT, SIGTERM, SIGHUP or SIGALRM (a time limit) arriving
    inside the block take effect when it ends, delivered to the handlers as they were."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM)
    old = {sig: signal.signal(sig, lambda signum, frame: arrived.append(signum)) for sig in sigs}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        for signum in dict.fromkeys(arrived):
            signal.raise_signal(signum)
