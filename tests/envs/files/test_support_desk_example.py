"""examples/support_desk: its evalset is a valid files environment of 30+ tasks, and offline
(scripted agent and updater, named in the workspace's evolve.yaml) dev violations fall after a
generation the gate accepts and come back after `evolve revert` of its training commits."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from evolve.envs import make_env

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "support_desk"


def test_the_example_evalset_has_thirty_tasks_over_three_splits() -> None:
    env = make_env("files", EXAMPLE / "evalset")
    sizes = {split: len(env.tasks(split)) for split in ("train", "dev", "holdout")}
    assert sum(sizes.values()) >= 30 and all(sizes.values()), sizes
    assert env.rule_names() == ["greeting", "sign_off", "order_reference", "no_late_refund"]


def test_learning_is_visible_the_gate_accepts_and_a_revert_takes_it_back(tmp_path: Path) -> None:
    # Every step is an `evolve` command run as a program; the workspace names its agent and
    # its updater in evolve.yaml (nothing is passed from Python).
    spec = importlib.util.spec_from_file_location("support_desk_offline", EXAMPLE / "offline.py")
    assert spec is not None and spec.loader is not None
    offline = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = offline  # its dataclasses look their module up
    spec.loader.exec_module(offline)
    result = offline.demo(tmp_path / "desk")
    print(offline.table(result))
    before, trained, reverted = result.before, result.trained, result.reverted
    assert before.violated > 0 and before.accepted < before.episodes
    assert trained.violated < before.violated  # dev violations fall after training
    assert trained.accepted > before.accepted
    assert result.gate.verdict == "accepted" and result.gate.low > 0  # the paired interval
    assert result.gate.commits
    assert reverted.violations == before.violations  # and come back after the revert
    config = (tmp_path / "desk" / "evolve.yaml").read_text("utf-8")
    assert "desk_agent:make_agent" in config and "desk_agent:scripted_updater" in config
