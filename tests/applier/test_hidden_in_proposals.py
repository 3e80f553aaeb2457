"""Bidi controls, the BOM and zero-width spaces never reach a prompt file, a unit, a file name
or a commit (issue 28): the applier refuses them in a proposal's paths and text, and an
updater reply holding one is a logged refusal."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from evolve.applier import plan_prompt_changes
from evolve.llm import MockLLM
from evolve.memory import load_units
from evolve.train import train
from evolve.workspace import Workspace

DONE = json.dumps({"tool": "supervisor__complete_task", "arguments": {}})


@pytest.mark.parametrize("ch", ["\u202e", "\u2066", "\ufeff", "\u200b", "\u200d"])
def test_a_prompt_file_name_with_an_invisible_character_is_refused(
    workspace: Workspace, ch: str
) -> None:
    planned = plan_prompt_changes(
        workspace, guidance=None, edits=[{"path": f"prompts/{ch}evil.md", "content": "x"}],
        parameters={}, max_chars=6000,
    )  # fmt: skip
    assert not planned.files
    (refusal,) = planned.refused
    assert "invisible formatting characters are not allowed" in refusal.reason


def test_prompt_edits_and_guidance_with_hidden_characters_are_refused(
    workspace: Workspace,
) -> None:
    planned = plan_prompt_changes(
        workspace,
        guidance=["Be brief.", "Pay \u202eenola"],
        edits=[{"path": "prompts/x.md", "content": "# X\n\u2067hidden\u2069\n"}],
        parameters={},
        max_chars=6000,
    )
    reasons = sorted(r.reason for r in planned.refused)
    assert reasons == [
        "contains the character U+202E",
        "the edit contains the character U+2067",
    ]
    assert set(planned.files) == {"prompts/system.md"}
    assert "\u202e" not in planned.files["prompts/system.md"].decode("utf-8")


def test_an_updater_bullet_with_a_bidi_override_is_a_logged_refusal(workspace: Workspace) -> None:
    bidi = json.dumps({"operations": [{"op": "add", "text": "Sign texts \u202e-A."}]})
    good = json.dumps({"operations": [{"op": "add", "text": "Send payments as private."}]})
    report = train(
        workspace,
        episodes=2,
        agent_llm=MockLLM(lambda m, s: DONE),
        updater_llm=MockLLM([bidi, good]),
    )
    first, second = report.outcomes
    assert first.commit is None and "U+202E" in first.refused[0]
    assert second.commit is not None
    log = subprocess.run(
        ["git", "log", "--all", "--format=%B"], cwd=workspace.root, capture_output=True, check=True
    ).stdout.decode("utf-8")
    assert "\u202e" not in log
    assert not any("\u202e" in u.text for u in load_units(workspace.root))
    runs = Path(workspace.runs_dir).glob("train-*.jsonl")
    records = [json.loads(x) for p in runs for x in p.read_text("utf-8").splitlines()]
    assert "U+202E" in records[0]["refused"][0]
