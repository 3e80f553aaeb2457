"""The issue's scenario: a wrong preference is learned, seen, reverted, and refused after.

Train with the sim model until a wrong preference is learned (a misleading mock updater),
see it in `evolve log`, `evolve revert` it with a reason, train again on the same complaints
and see the refusal logged and the wrong unit not come back; `evolve run --split dev` before
and after shows the effect.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from conftest import run_cli as _cli
from evolve.evaluate import agent_memory, open_env
from evolve.llm import JsonSchema, Message, MockLLM
from evolve.memory import load_units
from evolve.memory._similarity import normalize
from evolve.train import train
from evolve.workspace import Workspace

RunGit = Callable[..., str]
WRONG = "Keep all my Venmo payments public."
REASON = "I want friends-only payments, never public ones"


def misleading(messages: Sequence[Message], schema: JsonSchema | None) -> str:
    """An updater that insists on public payments and marks the oldest bullet helpful.

    Once the wrong bullet is in the playbook it has nothing to add.
    """
    prompt = messages[-1].content
    if WRONG in prompt:
        return json.dumps({"operations": [], "bullet_tags": []})
    ids = re.findall(r"^\[(ace-[0-9a-f]{10})\]", prompt, re.M)
    tags = [{"id": ids[0], "tag": "helpful"}] if ids else []
    return json.dumps({"operations": [{"op": "add", "text": WRONG}], "bullet_tags": tags})


def _dev(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, err = _cli(capsys, "run", "--split", "dev", "--runs", "3", "--json")
    assert code == 0, err
    rules: dict[str, Any] = json.loads(out)["rules"]
    return rules


@pytest.mark.slow
def test_a_wrong_preference_is_seen_reverted_and_refused_after(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    env = open_env(ws)

    # 1. Train with the sim model: it learns alex's (current) friends-only visibility.
    train(ws, recipe="ace", episodes=16)
    good = _dev(capsys)
    assert good["payment_visibility"]["applicable"] > 0
    assert good["payment_visibility"]["rate"] <= 0.2, good

    # 2. A misleading updater teaches a wrong preference.
    llm = MockLLM(misleading)
    learned = train(ws, recipe="ace", episodes=24, updater_llm=llm)
    assert len(learned.commits) == 1, "the wrong bullet is learned once"
    (wrong_commit,) = learned.commits
    (wrong,) = [u for u in load_units(root) if u.text == WRONG]
    assert wrong.status == "active"
    assert WRONG in agent_memory(ws, env, "alex", "recipe")
    bad = _dev(capsys)
    assert bad["payment_visibility"]["rate"] >= 0.8, bad

    # 3. It is in `evolve log`: the newest entry, with the unit it added.
    code, out, err = _cli(capsys, "log", "--json", "-n", "1")
    assert code == 0, err
    (entry,) = json.loads(out)
    assert entry["commit"] == wrong_commit
    assert {"op": "add", "id": wrong.id} in entry["ops"]
    code, out, err = _cli(capsys, "log", "-n", "1")
    assert code == 0, err
    assert out.startswith(wrong_commit[:10]) and f"add={wrong.id}" in out
    code, out, err = _cli(capsys, "show", wrong.id)
    assert code == 0, err
    assert WRONG in out and wrong_commit[:10] in out

    # 4. Revert it with a reason: the wrong unit is tombstoned, dev is as it was.
    code, out, err = _cli(capsys, "revert", wrong_commit[:10], "--reason", REASON)
    assert code == 0, err
    revert_commit = run_git(root, "rev-parse", "HEAD").strip()
    assert f"tombstoned {wrong.id}" in out
    run_git(root, "merge-base", "--is-ancestor", wrong_commit, revert_commit)
    assert WRONG not in agent_memory(ws, env, "alex", "recipe")
    after = _dev(capsys)
    assert after == good, "the memory is what it was before the wrong commit"

    # 5. Train again with the same updater on the same complaints: every proposal of the
    #    wrong text is refused, the refusal is in the episode's commit, and it never returns.
    again = train(ws, recipe="ace", episodes=40, updater_llm=llm)
    refused = [o for o in again.outcomes if o.refused]
    assert refused, "the updater proposed the wrong text again"
    line = f"refused add '{WRONG}': tombstoned by {wrong_commit[:10]} ({REASON}): {wrong.id}"
    for outcome in refused:
        assert outcome.refused == [line]
        assert outcome.commit is not None, "the tag makes a commit that carries the refusal"
        body = run_git(root, "log", "-1", "--format=%B", outcome.commit)
        assert f"\nRefused:\n- {line}\n" in body, body
    same = [u for u in load_units(root) if normalize(u.text) == normalize(WRONG)]
    assert [(u.id, u.status, u.reason) for u in same] == [(wrong.id, "tombstoned", REASON)]
    code, out, err = _cli(capsys, "memory", "--json")
    assert code == 0, err
    assert WRONG not in json.loads(out)["memory"]
    final = _dev(capsys)
    assert final["payment_visibility"]["rate"] <= 0.2, final
    assert run_git(root, "status", "--porcelain", "--untracked-files=all") == ""
