"""Fuzzed agent and updater replies through `evolve train`: nothing a model says can hurt.

Each role gets at least 1,000 hypothesis-drawn replies (well-formed, wrong-typed, unsafe
characters, lone surrogates, deep or huge JSON, wrong shapes) through the real training loop
in-process. Every run must end normally, leave no malformed unit and no unsafe character in
any file or commit, and log every reply that was built to be bad (a failed turn for the
agent, a refusal for the updater).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evolve._text import is_placeholder
from evolve.envs.persona_world import tool_names
from evolve.llm import MockLLM
from evolve.memory import load_units
from evolve.train import train
from evolve.updaters import RECIPES
from evolve.workspace import Workspace, init_workspace
from replykit import (
    Reply,
    Script,
    agent_replies,
    assert_workspace_sound,
    jsonl,
    updater_replies,
)

pytestmark = pytest.mark.slow

TOOLS = tool_names()
DONE = json.dumps({"tool": "supervisor__complete_task", "arguments": {}})
NO_CHANGE = json.dumps({"operations": []})
FUZZ = settings(
    max_examples=10,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _workspace(root: Path, recipe: str = "ace", max_turns: int = 12) -> Workspace:
    ws = init_workspace(root / "ws")
    cfg = (ws.root / "evolve.yaml").read_text("utf-8")
    cfg = cfg.replace("max_turns: 12", f"max_turns: {max_turns}").replace(
        "recipe: ace", f"recipe: {recipe}"
    )
    (ws.root / "evolve.yaml").write_text(cfg, "utf-8")
    ws.store.commit(["evolve.yaml"], "test settings")
    return Workspace(ws.root)


def _log(ws: Workspace) -> list[dict[str, Any]]:
    (path,) = sorted(ws.runs_dir.glob("train-*.jsonl"))
    return jsonl(path)


def test_fuzzed_agent_replies_through_train() -> None:
    served: list[Reply] = []

    @FUZZ
    @given(st.lists(agent_replies(TOOLS), min_size=110, max_size=110))
    def run(replies: list[Reply]) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            ws = _workspace(Path(tmp), max_turns=12)
            agent = Script(replies, DONE)
            report = train(
                ws, episodes=12, agent_llm=agent.llm(), updater_llm=MockLLM(lambda m, s: NO_CHANGE)
            )
            records = _log(ws)
            assert len(records) == len(report.outcomes) == 12
            turns = [t for r in records for t in r["turns"]]
            # Every reply the model gave is one turn of the log, in order.
            assert len(turns) == len(agent.served)
            for (text, bad), turn in zip(agent.served, turns, strict=True):
                if bad:
                    assert turn["bad_reply"], (text[:200], turn)
                    assert turn["call"] is None
                assert turn["call"] is not None or turn["bad_reply"]
            assert_workspace_sound(ws.root)
            served.extend(agent.served[: len(replies)])

    run()
    assert len(served) >= 1000, len(served)
    assert sum(bad for _, bad in served) >= 200


def _updater_run(recipe: str, replies: list[Reply]) -> list[Reply]:
    with tempfile.TemporaryDirectory() as tmp:
        ws = _workspace(Path(tmp), recipe=recipe, max_turns=4)
        updater = Script(replies, NO_CHANGE)
        report = train(
            ws,
            episodes=len(replies),
            agent_llm=MockLLM(lambda m, s: DONE),
            updater_llm=updater.llm(),
        )
        records = _log(ws)
        assert len(records) == len(report.outcomes) == len(replies)
        assert not any(r["accepted"] for r in records)  # so each episode asked the updater once
        assert len(updater.served) == len(records)
        for (text, bad), record in zip(updater.served, records, strict=True):
            if bad:
                assert record["refused"], (text[:200], record["refused"])
                assert record["commit"] is None or record["refused"]
        assert_workspace_sound(ws.root)
        for unit in load_units(ws.root):
            if unit.status in ("active", "pending"):
                assert not is_placeholder(unit.text), unit
        return updater.served


def test_fuzzed_ace_replies_through_train() -> None:
    from evolve.updaters._ace import SCHEMA

    served: list[Reply] = []

    @FUZZ
    @given(st.lists(updater_replies(SCHEMA), min_size=100, max_size=100))
    def run(replies: list[Reply]) -> None:
        served.extend(_updater_run("ace", replies))

    run()
    assert len(served) >= 1000, len(served)
    assert sum(bad for _, bad in served) >= 200


# skills: its per-episode refusals go to the batch commit (tests/skills/test_reflect_fuzz.py)
@pytest.mark.parametrize("recipe", sorted(set(RECIPES) - {"ace", "skills"}))
def test_fuzzed_replies_of_every_other_recipe_through_train(recipe: str) -> None:
    import importlib

    module = importlib.import_module(f"evolve.updaters._{recipe}")
    schema = module.SCHEMA

    @settings(FUZZ, max_examples=3)
    @given(st.lists(updater_replies(schema), min_size=40, max_size=40))
    def run(replies: list[Reply]) -> None:
        _updater_run(recipe, replies)

    run()
