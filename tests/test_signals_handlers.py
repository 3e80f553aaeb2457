"""`evolve._signals` never leaves a handler replaced after its block, even when a signal lands
between two of its calls to `signal.signal` (what the handler raises leaves the loop there).
A SIGINT handler left as the block's own swallowed every later Ctrl-C of the process: seen as a
generation test whose injected SIGINT "DID NOT RAISE" in a full run."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest

from evolve import _signals

BLOCKS: dict[str, Callable[[], AbstractContextManager[None]]] = {
    "held": _signals.signals_held,
    "deferred": _signals.signals_deferred,
    "raise": _signals.signals_raise,
}
WATCHED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM)


class Landed(Exception):
    """What the handler of a signal that landed mid-install raised."""


@pytest.fixture
def handlers() -> Iterator[dict[signal.Signals, Any]]:
    before = {sig: signal.getsignal(sig) for sig in WATCHED}
    yield before
    for sig, handler in before.items():
        signal.signal(sig, handler)


def _interrupting(at: int) -> Callable[..., Any]:
    """`signal.signal` that, on its call number `at`, sets the handler and then raises, as a
    handler that ran right after the call would."""
    real = signal.signal
    calls = iter(range(1, 1000))

    def call(sig: int, handler: Any) -> Any:
        previous = real(sig, handler)
        if next(calls) == at:
            raise Landed
        return previous

    return call


@pytest.mark.parametrize("name", list(BLOCKS))
@pytest.mark.parametrize("at", [1, 2])
def test_a_signal_landing_while_the_handlers_are_set_leaves_none_replaced(
    name: str, at: int, handlers: dict[signal.Signals, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(signal, "signal", _interrupting(at))
    with pytest.raises(Landed), BLOCKS[name]():
        pytest.fail("the block ran though its handlers were not all set")
    monkeypatch.undo()
    assert {sig: signal.getsignal(sig) for sig in WATCHED} == handlers


@pytest.mark.parametrize("name", list(BLOCKS))
def test_a_signal_landing_while_the_handlers_are_put_back_leaves_none_replaced(
    name: str, handlers: dict[signal.Signals, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(Landed), BLOCKS[name]():
        # the first handler put back "runs" at once
        monkeypatch.setattr(signal, "signal", _interrupting(1))
    monkeypatch.undo()
    assert {sig: signal.getsignal(sig) for sig in WATCHED} == handlers
