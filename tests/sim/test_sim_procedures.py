"""Procedure-shaped tasks and the sim following skills only through `<skills>`."""

from __future__ import annotations

from pathlib import Path

import pytest

from evolve.agent import read_prompt_files
from evolve.envs import Task
from evolve.envs.persona_world import PersonaWorldEnv
from evolve.envs.persona_world._procedures import (
    APP,
    PROCEDURE_TASKS,
    procedure_failure,
    write_procedures,
)
from evolve.episode import EpisodeResult, EpisodeSetup, run_episode
from evolve.sim import SimLLM
from evolve.sim._skills_agent import Procedures, read_procedures
from evolve.skills._select import Skill, SkillPicker

ROOT = Path(__file__).resolve().parents[2]
ANY_WRITE = "sending a text, payment or email, or saving a note"
VERIFY = Skill("verify", ANY_WRITE, "Verify the final state after writing: read it back.")
LOOKUP = Skill("lookup", ANY_WRITE, "Look up what the write depends on before writing.")
WRONG = Skill("wrong", ANY_WRITE, "Skip the contact lookup and send directly.")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> PersonaWorldEnv:
    evalset = tmp_path_factory.mktemp("evalset")
    for path in (ROOT / "evalset").rglob("*"):
        target = evalset / path.relative_to(ROOT / "evalset")
        if path.is_dir():
            target.mkdir(exist_ok=True)
        else:
            target.write_bytes(path.read_bytes())
    write_procedures(evalset)
    return PersonaWorldEnv(evalset)


def _run(
    env: PersonaWorldEnv, task: Task, skills: list[Skill], *, memory: str = ""
) -> EpisodeResult:
    setup = EpisodeSetup(
        prompt_files=tuple(read_prompt_files(ROOT / "prompts")),
        memory=memory,
        persona="alex",
        stats=True,
        max_turns=14,
        skills=SkillPicker(skills) if skills else None,
    )
    return run_episode(env, SimLLM(env), task, setup, history=env.initial_history("alex"), seed=5)


def test_the_shipped_evalset_is_unchanged_without_procedures_yaml() -> None:
    plain = PersonaWorldEnv(ROOT / "evalset")
    assert not [
        t for s in ("train", "dev", "holdout") for t in plain.tasks(s) if "procedure" in t.params
    ]


def test_procedure_tasks_spread_over_apps_and_splits(env: PersonaWorldEnv) -> None:
    tasks = [
        t for s in ("train", "dev", "holdout") for t in env.tasks(s) if "procedure" in t.params
    ]
    assert len(tasks) == len(PROCEDURE_TASKS) == 32
    for procedure in ("verify", "lookup"):
        for split in ("train", "dev", "holdout"):
            apps = {
                APP[t.kind]
                for t in tasks
                if t.split == split and t.params["procedure"] == procedure
            }
            assert apps == {"phone", "venmo", "simple_note", "gmail"}
    families = {s: {t.family for t in env.tasks(s)} for s in ("train", "dev", "holdout")}
    assert not families["train"] & (families["dev"] | families["holdout"])


def test_without_skills_the_sim_fails_the_procedures_it_does_not_do(env: PersonaWorldEnv) -> None:
    for task in env.tasks("train"):
        result = _run(env, task, [])
        procedure = task.params.get("procedure")
        expect_fail = procedure == "verify" or (
            procedure == "lookup" and task.kind in ("payment", "note")
        )
        assert result.record.task_success is not expect_fail, task.id
        if expect_fail:
            assert result.record.failure and (
                "never checked" in result.record.failure
                or "had been looked up" in result.record.failure
            )


def test_helpful_skills_make_the_sim_pass_and_a_wrong_one_makes_it_fail(
    env: PersonaWorldEnv,
) -> None:
    tasks = [t for t in env.tasks("train") if "procedure" in t.params]
    assert all(_run(env, t, [VERIFY, LOOKUP]).record.task_success for t in tasks)
    wrong = {t.id: _run(env, t, [WRONG]).record.task_success for t in tasks}
    lookups = [t for t in tasks if t.params["procedure"] == "lookup" and t.kind in ("sms", "email")]
    assert lookups and not any(wrong[t.id] for t in lookups)  # passed without the skill


def test_the_sim_follows_a_skill_only_from_the_skills_section(env: PersonaWorldEnv) -> None:
    task = next(t for t in env.tasks("train") if t.params.get("procedure") == "verify")
    # The same lesson in memory does nothing: only an injected skill is followed.
    in_memory = _run(env, task, [], memory=f"- {VERIFY.text}")
    assert not in_memory.record.task_success
    assert "<skills>" not in in_memory.system_prompt
    injected = _run(env, task, [VERIFY])
    assert injected.record.task_success and injected.record.skills_injected == ["verify"]


def test_read_procedures_clauses_and_negation_wins() -> None:
    verify = "[a] w: After the last write, read the changed item back and confirm it."
    skip = "[b] w: Skip the final check: once a write call returns success, complete the task."
    for lines in ((verify, skip), (skip, verify)):
        assert read_procedures("<skills>\n" + "\n".join(lines) + "\n</skills>\n").verify is False
    assert read_procedures(f"<skills>\n{verify}\n</skills>\n").verify is True
    lookup = (
        "[c] w: Look up the recipient with a search call and use the identifier it returns; "
        "never type an address or number from memory."
    )
    assert read_procedures(f"<skills>\n{lookup}\n</skills>\n") == Procedures(None, True)
    prompt = "<skills>\n[a] w: Don't look up anything.\n[b] w: Look up the contact.\n</skills>\n"
    assert read_procedures(prompt).lookup is False
    assert read_procedures("no section").verify is None


def test_procedure_checker_order_matters() -> None:
    from evolve.envs import ApiCall

    task = Task("t", "pay_back", "payment", "train", "x", {"procedure": "lookup"})
    write = ApiCall("venmo", "send_payment", {}, True, result={})
    look = ApiCall("venmo", "show_transactions", {}, True, result=[])
    assert procedure_failure(task, [write, look]) is not None  # looked up only afterwards
    assert procedure_failure(task, [look, write]) is None
    verify = Task("t", "pay_back", "payment", "train", "x", {"procedure": "verify"})
    back = ApiCall("venmo", "show_sent_payments", {}, True, result=[])
    assert procedure_failure(verify, [back, write]) is not None
    assert procedure_failure(verify, [write, back]) is None
