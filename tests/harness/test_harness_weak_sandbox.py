"""Model-written variant files run only under bubblewrap: where this machine offers only a
sandbox that leaves the host's files visible (`unshare`, `rlimits`), the worker refuses with
one sentence naming the fix, unless the user accepted the weaker sandbox for this machine."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evolve.harness import TaskView
from evolve.harness._probe import probe_variant
from evolve.harness._sandboxed import (
    WEAK_OPT_IN,
    SandboxedMemory,
    VariantFailed,
    Worker,
    close_workers,
)

NEWEST = b"def retrieve(memory, task):\n    return '\\n'.join(memory.splitlines()[::-1])\n"


@pytest.fixture(autouse=True)
def _no_workers_left(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(WEAK_OPT_IN, raising=False)
    close_workers()
    yield
    close_workers()


def test_the_resource_limits_fallback_is_refused_with_the_fix() -> None:
    worker = Worker("memory", "newest", NEWEST, backend="rlimits")
    memory = SandboxedMemory(worker)
    with pytest.raises(VariantFailed) as caught:
        memory.retrieve("[a-1] one\n[a-2] two", TaskView("t", "i"))
    said = str(caught.value)
    assert "runs only under bubblewrap" in said and "`rlimits` sandbox" in said
    assert "apt install bubblewrap" in said and f"{WEAK_OPT_IN}=1" in said
    assert worker.used_backend is None  # nothing was started


def test_the_probe_says_why_it_did_not_run() -> None:
    result = probe_variant("memory", "newest", NEWEST, backend="rlimits")
    assert not result.ok
    assert "runs only under bubblewrap" in result.reason


def test_a_user_who_accepts_the_weaker_sandbox_runs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WEAK_OPT_IN, "1")
    worker = Worker("memory", "newest", NEWEST, backend="rlimits")
    memory = SandboxedMemory(worker)
    assert memory.retrieve("[a-1] one\n[a-2] two", TaskView("t", "i")) == "[a-2] two\n[a-1] one"
    assert worker.used_backend == "rlimits"
