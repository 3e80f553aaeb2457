"""Selection ties broken by the scoreboard's evidence, the same in training and evaluation.

Two skills whose triggers match a task equally well (the sim's wrong lesson "Skip the final
check: ..." carries its app's verify trigger) used to be ordered by id, so a wrong lesson
could take the verify lesson's slot in the top `skills.max_injected`. Now the tie goes by the
Mantel-Haenszel lift within tasks in `memory/skills/_strata.yaml` (0 with no evidence),
higher first, then id; `evolve run`, the gate's scoring (`episode_setup`) and training read
the record of the memory they run, and a model selector sees its candidates in that order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import GitRunner, one_sentence, run_cli, workspace_state
from evolve import _triggers
from evolve._triggers import rank_triggers
from evolve.agent import section
from evolve.cli import _fast
from evolve.cli._group import run as run_click
from evolve.envs.persona_world import PersonaWorldEnv
from evolve.evaluate import episode_setup
from evolve.llm import Completion, JsonSchema, Message, Usage
from evolve.sim import SimLLM
from evolve.skills._select import (
    Skill,
    SkillPicker,
    by_evidence,
    evidence_of,
    lexical_matches,
    make_picker,
)
from evolve.skills._strata import STRATA_PATH
from evolve.workspace import Workspace
from factories import WRITE_TRIGGER, skill_file

_TIMING = re.compile(r'("duration_s": ?)[0-9.e-]+')
PAY = "Pay Sam Lee back $12.50 on Venmo for lunch."
STATE = "a venmo task that changes stored state (pay, payment, venmo)"
# A verify lesson that helped, a wrong lesson that hurt, and two with no evidence, all with
# the same trigger; the ids put the wrong lesson first (the sim's ids are hashes: by chance).
IDS = ("a-skip-final-check", "b-lookup", "c-total", "d-verify-final-state")
RECORD = (
    "a-skip-final-check:\n  t1: [3, 0, 2, 2]\n"  # injected 0 of 3, held out 2 of 2: -1
    "d-verify-final-state:\n  t1: [3, 3, 2, 0]\n  t2: [2, 2, 2, 1]\n"  # +1 and +0.5
)


def _skills() -> list[Skill]:
    return [Skill(i, STATE, f"Lesson {i}.") for i in IDS]


def _strata() -> dict[str, dict[str, tuple[int, int, int, int]]]:
    return {
        "a-skip-final-check": {"t1": (3, 0, 2, 2)},
        "d-verify-final-state": {"t1": (3, 3, 2, 0), "t2": (2, 2, 2, 1)},
        "ghost": {"t1": (1, 1, 0, 0)},  # one arm only: no evidence
    }


def test_evidence_is_the_within_task_lift_and_none_without_both_arms() -> None:
    ev = evidence_of(_strata())
    assert ev["a-skip-final-check"] == -1.0
    assert 0.7 < ev["d-verify-final-state"] < 0.8  # MH weights 1.2 and 1.0: (1.2 + 0.5) / 2.2
    assert "ghost" not in ev and evidence_of(None) == {} and evidence_of({}) == {}


def test_a_tie_goes_by_evidence_then_id() -> None:
    pairs = [(i, STATE) for i in IDS]
    assert rank_triggers(PAY, pairs) == list(IDS)  # no evidence: by id, as before
    ev = evidence_of(_strata())
    assert rank_triggers(PAY, pairs, ev) == [
        "d-verify-final-state",  # ahead
        "b-lookup",  # no evidence: 0, by id
        "c-total",
        "a-skip-final-check",  # measured to hurt: after those with none
    ]
    top = SkillPicker(_skills(), max_injected=3, evidence=ev).pick(PAY, 0).injected
    assert top == ("d-verify-final-state", "b-lookup", "c-total")  # the old rule: a, b, c


def test_a_skill_with_no_evidence_goes_before_one_measured_at_zero() -> None:
    pairs = [(i, STATE) for i in IDS]
    ev = {"a-skip-final-check": 0.0, "b-lookup": 0.0, "d-verify-final-state": 0.0}
    assert rank_triggers(PAY, pairs, ev) == [
        "c-total",  # no task with both arms yet: it gets the slot and earns evidence
        "a-skip-final-check",
        "b-lookup",
        "d-verify-final-state",
    ]
    assert evidence_of({"z": {"t1": (2, 1, 2, 1)}}) == {"z": 0.0}  # measured: kept at 0


def test_evidence_never_overrides_the_lexical_rank() -> None:
    better = Skill("z-better", "paying on venmo", "Lesson z.")  # every trigger word matches
    skills = [*_skills(), better, Skill("y-mail", "an email task", "Lesson y.")]
    ev = {"d-verify-final-state": 1.0, "y-mail": 1.0, "z-better": -1.0}
    ranked = [s.id for s in lexical_matches(PAY, skills, ev)]
    assert ranked[0] == "z-better" and "y-mail" not in ranked  # evidence only breaks ties


def test_a_band_widens_the_tie_to_near_equal_shares(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = [("a", "pay lunch back refund"), ("b", "venmo payment lunch")]  # 3/4 and 1
    ev = {"a": 0.5}
    assert rank_triggers(PAY, pairs, ev) == ["b", "a"]  # exact ties only (the shipped rule)
    assert rank_triggers(PAY, pairs, ev, band=0.3) == ["a", "b"]
    assert rank_triggers(PAY, pairs, ev, band=0.2) == ["b", "a"]  # 0.8 < 3/4 < 1: not tied
    monkeypatch.setattr(_triggers, "TIE_BAND", 0.3)
    assert rank_triggers(PAY, pairs, ev) == ["a", "b"]


def test_a_non_finite_evidence_counts_as_none() -> None:
    pairs = [("a", STATE), ("b", STATE)]
    assert rank_triggers(PAY, pairs, {"a": float("nan"), "b": float("-inf")}) == ["a", "b"]


class _Capture:
    """A selector that records the request and answers with the first three ids it shows."""

    name = "capture"

    def __init__(self) -> None:
        self.shown: list[list[str]] = []

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        lines = (section(messages[-1].content, "triggers") or "").splitlines()
        self.shown.append([line[1 : line.index("]")] for line in lines])
        return Completion(text=json.dumps({"skills": self.shown[-1][:3]}), usage=Usage(1, 1))


EVIDENCE_ORDER = ["d-verify-final-state", "b-lookup", "c-total", "a-skip-final-check"]


def test_a_model_selector_sees_the_candidates_in_the_evidence_order() -> None:
    ev = evidence_of(_strata())
    assert [s.id for s in by_evidence(_skills(), ev)] == EVIDENCE_ORDER
    capture = _Capture()
    picked = SkillPicker(_skills(), selector=capture, evidence=ev).pick(PAY, 0)
    assert capture.shown == [EVIDENCE_ORDER] and picked.injected == tuple(EVIDENCE_ORDER[:3])
    # The sim's selector role, reading that order, picks what the lexical matcher picks.
    env = PersonaWorldEnv(Path(__file__).resolve().parents[2] / "evalset")
    by_model = SkillPicker(_skills(), selector=SimLLM(env), evidence=ev).pick(PAY, 1)
    lexical = SkillPicker(_skills(), evidence=ev).pick(PAY, 1)
    assert by_model.injected == lexical.injected == tuple(EVIDENCE_ORDER[:3])
    # Wrong lesson ahead on the evidence: the model is shown it first, and picks the same.
    flipped = {"a-skip-final-check": 1.0}
    assert SkillPicker(_skills(), selector=SimLLM(env), evidence=flipped).pick(PAY, 1).injected == (
        SkillPicker(_skills(), evidence=flipped).pick(PAY, 1).injected
    )


GENERAL_TRIGGER = WRITE_TRIGGER


def _library(ws: Workspace, run_git: GitRunner, record: str | None, holdout: float = 0.0) -> None:
    """Four general skills with one trigger, skills on (hold-out `holdout`), and `record`."""
    folder = ws.root / "memory" / "skills" / "general"
    folder.mkdir(parents=True)
    for ident in IDS:
        (folder / f"{ident}.md").write_text(
            skill_file(ident, f"Lesson {ident}.", GENERAL_TRIGGER), encoding="utf-8"
        )
    if record is not None:
        (ws.root / STRATA_PATH).write_text(record, encoding="utf-8")
    config = yaml.safe_load((ws.root / "evolve.yaml").read_text(encoding="utf-8"))
    config.setdefault("skills", {}).update(enabled=True, holdout_share=holdout)
    (ws.root / "evolve.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "hand-written skills and their record")


def test_training_and_evaluation_select_the_same_skills(
    workspace: Workspace, run_git: GitRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evolve.episode import run_episode as real
    from evolve.train import train

    _library(workspace, run_git, RECORD)
    ws = Workspace(workspace.root)
    env = PersonaWorldEnv(ws.root / "evalset")
    evaluation = episode_setup(ws, env, ws.config.persona).skills
    assert evaluation is not None
    seen: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = []

    def spy(env: Any, llm: Any, task: Any, setup: Any, **kw: Any) -> Any:
        picked = setup.skills.pick(task.instruction, kw["seed"])
        seen.append((task.instruction, picked.injected, picked.held_out))
        return real(env, llm, task, setup, **kw)

    monkeypatch.setattr("evolve.train._train.run_episode", spy)
    train(ws, recipe="ace", episodes=3, seed=0)
    assert len(seen) == 3
    for instruction, injected, held_out in seen:
        assert held_out == ()  # hold-out 0: the library as evaluated
        assert injected == evaluation.pick(instruction, 0).injected
        assert injected == ("d-verify-final-state", "b-lookup", "c-total")  # old: a, b, c


def _run_both(
    ws: Workspace, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> tuple[str, str, list[list[list[str]]]]:
    """`evolve run` by the dispatching entry point (fast path first) and by the click command:
    (their stdout, timings and the log folder's name blanked, byte for byte; the skills each
    run's episodes got). Their stderr must be the same."""
    capsys.readouterr()
    code, out_a, err_a = run_cli(capsys, *argv)
    assert code == 0, err_a
    assert run_click(argv) == 0
    out_b, err_b = capsys.readouterr()
    assert err_a == err_b
    logs = sorted((ws.root / "generations" / "runs").iterdir())
    assert len(logs) == 2
    outs = []
    for out in (out_a, out_b):
        for log in logs:
            out = out.replace(log.name, "LOG")
        outs.append(_TIMING.sub(r"\g<1>0", out))
    injected = []
    for log in logs:
        episodes = [
            json.loads(line)
            for path in sorted(log.glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
        injected.append([e["skills_injected"] for e in episodes if "skills_injected" in e])
    assert injected[0] == injected[1] and injected[0]
    return outs[0], outs[1], injected


def test_evolve_run_ranks_by_the_record_on_both_paths(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    _library(ws, run_git, RECORD)
    argv = ["run", "--split", "dev", "--json"]
    assert _fast.run(argv) is None  # skills on: the fast path hands over, writing nothing
    assert not (ws.root / "generations" / "runs").exists()
    fast, full, injected = _run_both(ws, capsys, argv)
    assert fast == full
    chosen = {tuple(i) for run in injected for i in run if i}
    assert chosen == {("d-verify-final-state", "b-lookup", "c-total")}


def _said(err: str) -> None:
    """The record's error, as the scoreboard's own commands say it (the YAML parser's
    position lines follow a YAML error, as they do for `evolve skills`), no traceback."""
    assert err.lstrip().startswith(f"error: {STRATA_PATH}") and "Traceback" not in err
    if "not valid YAML" not in err:
        one_sentence(err)


@pytest.mark.parametrize(
    "text",
    [
        "d-verify-final-state: {t1: [2, 0, 1, 1]\n",  # not YAML
        "d-verify-final-state:\n  t1: [2, 3, 1, 1]\n",  # more passes than episodes
        "d-verify-final-state:\n  t1: [true, 0, 1, 1]\n",
        "- d-verify-final-state\n",
        f"d-verify-final-state:\n  t1: [{10**400}, 0, {10**400}, {10**400}]\n",
    ],
)
def test_a_hostile_record_is_one_sentence_on_either_path(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    _library(ws, run_git, text)
    before = workspace_state(ws.root, run_git)
    argv = ["run", "--split", "dev", "--json"]
    code, out, err = run_cli(capsys, *argv)
    assert code != 0 and out == ""
    _said(err)
    assert _fast.run(argv) is None
    capsys.readouterr()
    assert run_click(argv) != 0
    _said(capsys.readouterr().err)
    assert workspace_state(ws.root, run_git) == before
    assert not (ws.root / "generations" / "runs").exists()


def test_a_record_is_not_read_when_skills_are_off(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    (ws.root / "memory" / "skills").mkdir(parents=True)
    (ws.root / STRATA_PATH).write_text("- not a record\n", encoding="utf-8")
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "a stray record")
    code, _out, err = run_cli(capsys, "run", "--split", "dev", "--json")
    assert code == 0, err
    assert make_picker(Workspace(ws.root).config, [], training=False) is None
