"""Fuzzed reflector replies through `evolve evolve`: nothing a model says can hurt.

1,000 hypothesis-drawn reflector replies go through real generations (the reflector, the
prompt applier, the commit, the gate's decision and the reset), 50 generations per `evolve`
call. To keep that to a minute, the two costs that do not read the reply are stubbed in the
big run: the workspace's own tests (a pytest subprocess) pass, and scores are the base's. A
second, unstubbed run fuzzes all three roles at once through a few whole generations.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evolve.generations._loop as loop
from evolve.envs.persona_world import tool_names
from evolve.gate import Gate, GateEvidence, Verdict
from evolve.generations import evolve
from evolve.llm import MockLLM
from evolve.updaters._ace import SCHEMA as ACE
from evolve.workspace import Workspace, init_workspace
from replykit import (
    Reply,
    Script,
    agent_replies,
    assert_workspace_sound,
    reflector_replies,
    updater_replies,
)

pytestmark = pytest.mark.slow

DONE = json.dumps({"tool": "supervisor__complete_task", "arguments": {}})
NO_CHANGE = json.dumps({"operations": []})
FUZZ = settings(
    max_examples=20,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class AcceptChanges(Gate):
    """Keeps every generation that changed something and left protected files alone, so
    proposals pile up on HEAD (the harshest case for what reaches git)."""

    def decide(self, e: GateEvidence) -> Verdict:
        verdict = super().decide(e)
        if verdict.reason.startswith("protected") or not e.changed:
            return verdict
        return Verdict(True, "accepted by the fuzz gate")


def _workspace(root: Path, generations: int, train_episodes: int) -> Workspace:
    ws = init_workspace(root / "ws")
    cfg = (ws.root / "evolve.yaml").read_text("utf-8")
    cfg = cfg.replace("runs: 3", "runs: 1").replace(
        "bootstrap_samples: 2000", "bootstrap_samples: 100"
    )
    cfg = re.sub(
        r"\n  generations: 5\n  max_generations: 5",
        f"\n  generations: {generations}\n  max_generations: {generations}",
        cfg,
    )
    cfg = cfg.replace("gate:\n", f"gate:\n  train_episodes: {train_episodes}\n", 1)
    cfg = cfg.replace("max_turns: 12", "max_turns: 4")
    (ws.root / "evolve.yaml").write_text(cfg, "utf-8")
    ws.store.commit(["evolve.yaml"], "test settings")
    return Workspace(ws.root)


def _check(ws: Workspace, served: list[Reply], records: list[Any]) -> None:
    assert len(records) == len(served)
    for (text, bad), record in zip(served, records, strict=True):
        if bad:
            assert record.refused, (text[:200], record)
    assert_workspace_sound(ws.root)
    ws.store.log()  # git's log framing still parses


def test_fuzzed_reflector_replies_through_evolve(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop, "run_workspace_tests", lambda *a, **k: (True, ""))
    from evolve.evaluate import run_split as real_run_split

    scores: dict[str, Any] = {}

    def base_scores(ws: Workspace, split: str, **kw: Any) -> Any:
        if split not in scores:
            scores[split] = real_run_split(ws, split, **kw)  # type: ignore[arg-type]
        return scores[split]

    monkeypatch.setattr(loop, "run_split", base_scores)
    served: list[Reply] = []

    @FUZZ
    @given(st.lists(reflector_replies(), min_size=50, max_size=50))
    def run(replies: list[Reply]) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            ws = _workspace(Path(tmp), generations=50, train_episodes=0)
            reflector = Script(replies, "{}")
            models = loop._Models(
                MockLLM(lambda m, s: DONE), MockLLM(lambda m, s: NO_CHANGE), reflector.llm()
            )
            result = evolve(ws, generations=50, gate=AcceptChanges(), models=models)
            _check(ws, reflector.served, result.records)
            served.extend(reflector.served)

    run()
    assert len(served) >= 1000, len(served)
    assert sum(bad for _, bad in served) >= 200


def test_all_three_roles_fuzzed_through_whole_generations() -> None:
    tools = tool_names()

    @settings(FUZZ, max_examples=2)
    @given(
        st.lists(agent_replies(tools), min_size=60, max_size=60),
        st.lists(updater_replies(ACE), min_size=4, max_size=4),
        st.lists(reflector_replies(), min_size=2, max_size=2),
    )
    def run(agent: list[Reply], updater: list[Reply], reflector: list[Reply]) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            ws = _workspace(Path(tmp), generations=2, train_episodes=2)
            scripts = Script(agent, DONE), Script(updater, NO_CHANGE), Script(reflector, "{}")
            models = loop._Models(*(s.llm() for s in scripts))
            result = evolve(ws, generations=2, gate=AcceptChanges(), models=models)
            _check(ws, scripts[2].served, result.records)

    run()
