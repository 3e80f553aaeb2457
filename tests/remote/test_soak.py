"""The sync soak (benchmarks/soak_sync.py), smaller than the benchmark's 3 x 50: three
learners train alex at once against one bare remote, pulling, pushing (and through `--sync`),
writing hand notes, reverting and reviewing at seeded random points; afterwards every clone
holds the same memory and records, no unit left the active set unexplained, every counter is
the sum of the episodes' deltas, every tombstone holds, `git fsck --strict` is clean and a
fresh `evolve clone`'s log lists everything each learner's log listed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "soak_sync.py"


def _soak_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("soak_sync", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["soak_sync"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_three_learners_training_at_once_lose_nothing(tmp_path: Path) -> None:
    soak = _soak_module()
    done = soak.soak(tmp_path, learners=3, episodes=18, seed=1)
    assert done.problems == []
    figures = done.figures
    assert len(done.learners) == 3
    assert figures["merges"] >= 1  # the learners did meet
    assert figures["actions"]["train"] + figures["actions"]["sync"] >= 3
    assert figures["log_entries_fresh_clone"] >= figures["commits"] - figures["merges"]
