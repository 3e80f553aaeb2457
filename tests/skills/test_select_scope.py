"""Adversarial review (issue 13): which memory and which record each selection reads.

- a skill written for one user (`scope: user:<persona>`) is that user's: another persona's
  episodes, in training and in evaluation, never get it;
- the gate scores the base and the candidate each with its own commit's record, whatever the
  working tree holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import GitRunner
from evolve.envs.persona_world import PersonaWorldEnv
from evolve.evaluate import episode_setup
from evolve.sim import SimLLM
from evolve.skills._strata import STRATA_PATH
from evolve.workspace import Workspace
from factories import WRITE_TRIGGER, skill_file

TRIGGER = WRITE_TRIGGER
IDS = ("a-skip-final-check", "b-lookup", "c-total", "d-verify-final-state")
# d ahead of a on the evidence, and the other way round.
D_AHEAD = "a-skip-final-check:\n  t1: [3, 0, 2, 2]\nd-verify-final-state:\n  t1: [3, 3, 2, 0]\n"
A_AHEAD = "a-skip-final-check:\n  t1: [3, 3, 2, 0]\nd-verify-final-state:\n  t1: [3, 0, 2, 2]\n"


def _skills_on(root: Path, max_injected: int = 3) -> None:
    config = yaml.safe_load((root / "evolve.yaml").read_text(encoding="utf-8"))
    config.setdefault("skills", {}).update(
        enabled=True, holdout_share=0.0, max_injected=max_injected
    )
    (root / "evolve.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def _library(root: Path, units: dict[str, str]) -> None:
    folder = root / "memory" / "skills" / "general"
    folder.mkdir(parents=True, exist_ok=True)
    for ident, text in units.items():
        (folder / f"{ident}.md").write_text(text, encoding="utf-8")


def test_a_skill_of_another_user_is_never_injected(
    workspace: Workspace, run_git: GitRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`alex`'s workspace holds a hand-written skill scoped to `blair`: it renders for blair
    only, and must be selected for blair only, in evaluation and in training."""
    from evolve.episode import run_episode as real
    from evolve.train import train

    root = workspace.root
    _library(
        root,
        {
            "b-blair-only": skill_file(
                "b-blair-only", "Lesson b-blair-only.", TRIGGER, scope="user:blair"
            ),
            "g-all": skill_file("g-all", "Lesson g-all.", TRIGGER),
        },
    )
    _skills_on(root)
    run_git(root, "add", "-A")
    run_git(root, "commit", "-qm", "a skill for blair, one for everyone")
    ws = Workspace(root)
    env = PersonaWorldEnv(root / "evalset")
    task = env.tasks("dev")[0].instruction
    for persona, expected in (("alex", ("g-all",)), ("blair", ("b-blair-only", "g-all"))):
        picker = episode_setup(ws, env, persona).skills
        assert picker is not None
        assert picker.pick(task, 0).injected == expected, persona
    seen: list[tuple[str, ...]] = []

    def spy(env: Any, llm: Any, task: Any, setup: Any, **kw: Any) -> Any:
        seen.append(setup.skills.pick(task.instruction, kw["seed"]).injected)
        return real(env, llm, task, setup, **kw)

    monkeypatch.setattr("evolve.train._train.run_episode", spy)
    train(ws, recipe="ace", episodes=2, seed=0, persona="alex")
    assert seen and all("b-blair-only" not in s for s in seen), seen


def test_the_gate_scores_each_commit_with_its_own_record(
    workspace: Workspace, run_git: GitRunner
) -> None:
    """Base and candidate differ only in `_strata.yaml`; the working tree holds a third record
    (uncommitted). Each scoring must select by the record of the commit it scores."""
    from evolve.generations._loop import _Scorer

    root = workspace.root
    _library(root, {i: skill_file(i, f"Lesson {i}.", TRIGGER) for i in IDS})
    _skills_on(root, max_injected=1)
    (root / STRATA_PATH).write_text(D_AHEAD, encoding="utf-8")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-qm", "library, d ahead")
    base = run_git(root, "rev-parse", "HEAD").strip()
    (root / STRATA_PATH).write_text(A_AHEAD, encoding="utf-8")
    run_git(root, "commit", "-qam", "a ahead")
    candidate = run_git(root, "rev-parse", "HEAD").strip()
    (root / STRATA_PATH).write_text("", encoding="utf-8")  # uncommitted: no evidence
    ws = Workspace(root)
    scorer = _Scorer(ws, SimLLM(PersonaWorldEnv(root / "evalset")), runs=1)

    def chosen(commit: str) -> set[tuple[str, ...]]:
        report = scorer("dev", commit)
        return {tuple(e.skills_injected) for e in report.episodes}

    assert chosen(base) == {("d-verify-final-state",)}
    assert chosen(candidate) == {("a-skip-final-check",)}


class _Hostile:
    """A model selector that names every id it has heard of, another user's first."""

    name = "hostile"

    def complete(self, messages: Any, **kw: Any) -> Any:
        from evolve.llm import Completion, Usage

        return Completion(text='{"skills": ["b-blair-only", "g-all"]}', usage=Usage(1, 1))


def test_a_model_selector_cannot_name_another_users_skill(
    workspace: Workspace, run_git: GitRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = workspace.root
    _library(
        root,
        {
            "b-blair-only": skill_file(
                "b-blair-only", "Lesson b-blair-only.", TRIGGER, scope="user:blair"
            ),
            "g-all": skill_file("g-all", "Lesson g-all.", TRIGGER),
        },
    )
    _skills_on(root)
    text = (root / "evolve.yaml").read_text(encoding="utf-8")
    (root / "evolve.yaml").write_text(text.replace("selector: lexical", "selector: hostile"))
    run_git(root, "add", "-A")
    run_git(root, "commit", "-qm", "a skill for blair, a hostile selector")
    monkeypatch.setattr("evolve.llm.make_role_llm", lambda *a, **kw: _Hostile())
    ws = Workspace(root)
    env = PersonaWorldEnv(root / "evalset")
    picker = episode_setup(ws, env, "alex").skills
    assert picker is not None and isinstance(picker.selector, _Hostile)
    assert picker.pick(env.tasks("dev")[0].instruction, 0).injected == ("g-all",)
