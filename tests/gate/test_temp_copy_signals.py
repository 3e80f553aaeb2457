"""A gate or score copy is made and removed whole even when a signal lands in either step: a
generation's time-limit alarm arriving while the copy was being removed left
`evolve-score-*` behind with a live owner (no sweep takes it), about 1 run in 10 under load.
The signal is not lost: it takes effect right after the step."""

from __future__ import annotations

import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from evolve._signals import signals_deferred
from evolve.gate import _tempdirs


class Alarm(Exception):
    pass


@pytest.fixture
def alarm_raises() -> Iterator[None]:
    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise Alarm

    old = signal.signal(signal.SIGALRM, on_alarm)
    try:
        yield
    finally:
        signal.signal(signal.SIGALRM, old)


def test_a_signal_inside_the_block_takes_effect_when_it_ends(alarm_raises: None) -> None:
    steps = []
    with pytest.raises(Alarm), signals_deferred():
        signal.raise_signal(signal.SIGALRM)
        steps.append("the step finished")
    assert steps == ["the step finished"]
    assert signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL  # the handler is back


def test_an_alarm_while_the_copy_is_removed_leaves_no_folder(
    alarm_raises: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    real = shutil.rmtree

    def alarm_then_remove(path: str | Path, ignore_errors: bool = False) -> None:
        signal.raise_signal(signal.SIGALRM)  # the time limit, at the worst moment
        real(path, ignore_errors=ignore_errors)

    with pytest.raises(Alarm), _tempdirs.temp_copy("score") as copy:
        (copy / "big").mkdir()
        (copy / "big" / "file.txt").write_text("x", encoding="utf-8")
        monkeypatch.setattr(shutil, "rmtree", alarm_then_remove)
    assert list(tmp_path.iterdir()) == []


def test_an_alarm_while_the_copy_is_made_leaves_no_folder(
    alarm_raises: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    real = tempfile.mkdtemp

    def made_then_alarm(*args: object, **kwargs: object) -> str:
        path = real(*args, **kwargs)  # type: ignore[call-overload]
        signal.raise_signal(signal.SIGALRM)  # before the caller holds the name
        return str(path)

    monkeypatch.setattr(tempfile, "mkdtemp", made_then_alarm)
    with pytest.raises(Alarm), _tempdirs.temp_copy("gate"):
        pass
    assert list(tmp_path.iterdir()) == []
