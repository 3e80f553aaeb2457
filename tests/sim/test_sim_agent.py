"""The sim's agent role, driven through `run_episode` with the real `persona_world`."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from evolve.agent import (
    ACTION_SCHEMA,
    PromptFile,
    build_system_prompt,
    read_prompt_files,
    run_agent,
    task_message,
)
from evolve.envs import Task
from evolve.envs.persona_world import (
    MAIN_TOOL,
    RULES_BY_NAME,
    Computed,
    Directive,
    PersonaWorldEnv,
    Ref,
    api_docs,
    note_checksum,
)
from evolve.episode import EpisodeResult, EpisodeSetup, run_episode
from evolve.errors import ModelError
from evolve.llm import JsonSchema, Message, MockLLM
from evolve.sim import SimLLM, SimRates, read_directives

REPO = Path(__file__).resolve().parents[2]
ENV = PersonaWorldEnv(REPO / "evalset")
PROMPTS: tuple[PromptFile, ...] = tuple(read_prompt_files(REPO / "prompts"))
TASKS = [t for split in ("train", "dev", "holdout") for t in ENV.tasks(split)]
DEFAULT = SimRates()
NO_LAPSE = SimRates(lapse=0.0)


def _task(kind: str, index: int = 0) -> Task:
    return [t for t in TASKS if t.kind == kind][index]


def _oracle(persona: str, episode: int | None = None) -> str:
    return "\n".join(f"- {s}" for s in ENV.oracle_statements(persona, episode))


def _run(
    persona: str,
    task: Task,
    memory: str = "",
    *,
    seed: int = 0,
    stats: bool = False,
    rates: SimRates = DEFAULT,
    prompt_files: Sequence[PromptFile] = PROMPTS,
    episode: int | None = None,
    sim_seed: int = 0,
) -> EpisodeResult:
    llm = SimLLM(ENV, rates=rates, seed=sim_seed)
    setup = EpisodeSetup(tuple(prompt_files), memory, persona, stats, 12)
    history = ENV.initial_history(persona)
    return run_episode(ENV, llm, task, setup, history=history, seed=seed, episode=episode)


def _main(result: EpisodeResult, task: Task) -> dict[str, Any]:
    [call] = [c for c in result.trace.calls if c.ok and c.tool == MAIN_TOOL[task.kind]]
    return dict(call.args)


def _violated(result: EpisodeResult) -> set[str]:
    return {v.rule for v in result.judgement.violations}


def _calls(result: EpisodeResult) -> list[tuple[str, str]]:
    return [(c.tool, json.dumps(dict(c.args), sort_keys=True)) for c in result.trace.calls]


# --- no memory, oracle memory --------------------------------------------------------------


def test_no_memory_violates_every_applicable_rule_and_still_succeeds() -> None:
    applicable = 0
    for persona in ENV.personas():
        for task in TASKS:
            result = _run(persona, task)
            j = result.judgement
            assert j.task_success, (persona, task.id, j.failure)
            assert not result.trace.hit_turn_limit
            assert all(c.ok for c in result.trace.calls)
            expected = [r for r in ENV.persona_rules(persona) if RULES_BY_NAME[r].kind == task.kind]
            assert list(j.applicable) == expected
            assert [v.rule for v in j.violations] == expected
            applicable += len(expected)
    assert applicable > 200


def test_oracle_memory_without_lapses_passes_every_format_rule() -> None:
    for persona in ENV.personas():
        memory = _oracle(persona)
        for task in TASKS:
            result = _run(persona, task, memory, rates=NO_LAPSE)
            assert result.judgement.task_success
            format_broken = {
                r for r in _violated(result) if RULES_BY_NAME[r].rule_class == "format"
            }
            assert format_broken == set(), (persona, task.id)


def test_oracle_memory_format_rules_fail_only_at_the_lapse_rate() -> None:
    checks = broken = 0
    for persona in ENV.personas():
        memory = _oracle(persona)
        for task in TASKS:
            result = _run(persona, task, memory, seed=11)
            assert result.judgement.task_success
            for rule in result.judgement.applicable:
                if RULES_BY_NAME[rule].rule_class == "format":
                    checks += 1
                    broken += rule in _violated(result)
    rate = broken / checks
    assert checks > 400
    assert 0 < rate <= DEFAULT.lapse + 0.03, rate


# --- which directive wins ------------------------------------------------------------------

B = RULES_BY_NAME["sms_signoff"].statement("B")
Z = RULES_BY_NAME["sms_signoff"].statement("Z")


def test_last_directive_per_slot_wins() -> None:
    task = _task("sms")
    result = _run("blair", task, f"- {Z}\n- {B}", rates=NO_LAPSE)
    assert _main(result, task)["message"].endswith("\n- B")
    assert "sms_signoff" not in _violated(result)

    result = _run("blair", task, f"- {B}\n- {Z}", rates=NO_LAPSE)
    assert _main(result, task)["message"].endswith("\n- Z")
    assert "sms_signoff" in _violated(result)


def test_a_later_negation_removes_the_directive() -> None:
    task = _task("sms")
    negation = "Do not sign off text messages with '- B'."
    memory = f"- {B}\n- {negation}"
    assert read_directives(memory)["sms.signoff"] == Directive("sms.signoff", "B", True)
    result = _run("blair", task, memory, rates=NO_LAPSE)
    assert _main(result, task)["message"] == str(task.params["message"])
    assert "sms_signoff" in _violated(result)


def test_a_later_negated_visibility_picks_another_visibility() -> None:
    task = _task("payment")
    private = RULES_BY_NAME["payment_visibility"].statement("private")
    result = _run("alex", task, f"- {private}\n- Do not keep my Venmo payments private.")
    assert _main(result, task)["visibility"] == "friends"


def test_slots_do_not_override_each_other() -> None:
    task = _task("sms")
    greeting = RULES_BY_NAME["sms_greeting"].statement("Hi")
    result = _run("alex", task, f"- {Z}\n- {greeting}", rates=NO_LAPSE)
    message = _main(result, task)["message"]
    assert message.startswith("Hi ") and message.endswith("\n- Z")


def test_memory_overrides_prompt_files() -> None:
    task = _task("sms")
    files = (*PROMPTS, PromptFile("prompts/style.md", Z))
    result = _run("blair", task, f"- {B}", prompt_files=files, rates=NO_LAPSE)
    assert _main(result, task)["message"].endswith("\n- B")
    result = _run("blair", task, "", prompt_files=files, rates=NO_LAPSE)
    assert _main(result, task)["message"].endswith("\n- Z")


# --- wrong and stale values are followed as written ---------------------------------------


def test_a_wrong_value_is_followed_as_written() -> None:
    task = _task("email")
    wrong = RULES_BY_NAME["email_subject_prefix"].statement("[Work]")
    result = _run("dana", task, f"- {wrong}", rates=NO_LAPSE)
    assert _main(result, task)["subject"] == f"[Work] {task.params['subject']}"
    assert "email_subject_prefix" in _violated(result)


def test_a_profile_reference_is_resolved_from_the_profile() -> None:
    task = _task("sms")
    first_name = RULES_BY_NAME["sms_signoff"].statement(Ref("first_name"))
    result = _run("blair", task, f"- {first_name}", rates=NO_LAPSE)
    assert _main(result, task)["message"].endswith("\n- Blair")
    assert "sms_signoff" in _violated(result)  # blair signs with "B"


def test_a_stale_statement_breaks_after_drift() -> None:
    """alex's visibility is private until episode 12, friends after."""
    task = _task("payment")
    stale = _oracle("alex", 0)
    before = _run("alex", task, stale, rates=NO_LAPSE, episode=0)
    now = _run("alex", task, stale, rates=NO_LAPSE, episode=None)
    assert _main(now, task)["visibility"] == "private"
    assert "payment_visibility" not in _violated(before)
    assert "payment_visibility" in _violated(now)


def test_an_unknown_card_falls_back_to_the_default_card() -> None:
    task = _task("payment")
    result = _run("alex", task, "- Pay with my card ending 9999.", rates=NO_LAPSE)
    assert "payment_card_id" not in _main(result, task)
    assert result.judgement.task_success


# --- computed values ------------------------------------------------------------------------


def _expected(rate: float) -> float:
    """A lapse leaves the slot at its default (a violation); otherwise `rate` fails."""
    return DEFAULT.lapse + (1 - DEFAULT.lapse) * rate


SEEDS = range(400)
TOL = 0.08


def test_computed_payment_rates_without_stats() -> None:
    task = _task("payment")
    memory = "\n".join(
        RULES_BY_NAME[name].statement(Computed(name)) for name in ("habitual_card", "running_total")
    )
    counts: Counter[str] = Counter()
    for seed in SEEDS:
        counts.update(_violated(_run("alex", task, memory, seed=seed, prompt_files=())))
    card = counts["habitual_card"] / len(SEEDS)
    total = counts["running_total"] / len(SEEDS)
    assert card == pytest.approx(_expected(DEFAULT.habitual_card_stated), abs=TOL)
    assert total == pytest.approx(_expected(DEFAULT.running_total_stated), abs=TOL)


@pytest.mark.parametrize(
    ("stats", "rate"), [(False, DEFAULT.checksum_stated), (True, DEFAULT.checksum_given)]
)
def test_checksum_rates_with_and_without_stats(stats: bool, rate: float) -> None:
    task = _task("note")
    memory = _oracle("blair")
    broken = sum(
        "note_checksum"
        in _violated(_run("blair", task, memory, seed=s, stats=stats, prompt_files=()))
        for s in SEEDS
    )
    assert broken / len(SEEDS) == pytest.approx(_expected(rate), abs=TOL)


def test_with_stats_the_habitual_card_and_running_total_are_always_right() -> None:
    payments = [t for t in TASKS if t.kind == "payment"]
    for persona in ("alex", "casey", "dana", "emery"):
        memory = _oracle(persona)
        for task in payments:
            for seed in range(2):
                result = _run(
                    persona, task, memory, seed=seed, stats=True, rates=NO_LAPSE, prompt_files=()
                )
                assert not _violated(result) & {"habitual_card", "running_total"}
                assert "venmo__show_transactions" not in [c.tool for c in result.trace.calls]


def test_with_stats_and_the_shipped_prompt_memory_is_still_read() -> None:
    task = _task("payment")
    result = _run("alex", task, _oracle("alex"), stats=True, rates=NO_LAPSE)
    assert "payment_visibility" not in _violated(result)
    assert not _violated(result)


def test_wrong_computed_values_are_the_documented_ones() -> None:
    always_wrong = SimRates(
        lapse=0.0, habitual_card_stated=1.0, running_total_stated=1.0, checksum_stated=1.0
    )
    history = ENV.initial_history("alex").payments
    habit = Counter(p.card for p in history).most_common(1)[0][0]
    recent_other = next(p.card for p in reversed(history) if p.card != habit)
    for task in [t for t in TASKS if t.kind == "payment"][:5]:
        args = _main(_run("alex", task, _oracle("alex"), rates=always_wrong), task)
        assert args["payment_card_id"] == recent_other
        contact = task.params["contact"]
        before = sum(p.amount for p in history if p.contact == contact)
        assert args["note"].endswith(f": ${before:.2f})")  # this payment left out
    for task in [t for t in TASKS if t.kind == "note"][:5]:
        for seed in range(5):
            args = _main(_run("blair", task, _oracle("blair"), seed=seed, rates=always_wrong), task)
            last = args["content"].splitlines()[-1]
            assert last.startswith("Checksum: ")
            off = int(last.removeprefix("Checksum: ")) - note_checksum(task.params["items"])
            assert 1 <= off <= 5


# --- the plan of calls ------------------------------------------------------------------------

PLANS = {
    "sms": [
        "supervisor__show_profile",
        "phone__search_contacts",
        "phone__send_text_message",
        "supervisor__complete_task",
    ],
    "payment": [
        "supervisor__show_profile",
        "supervisor__show_account_passwords",
        "venmo__login",
        "venmo__show_payment_cards",
        "phone__search_contacts",
        "venmo__send_payment",
        "supervisor__complete_task",
    ],
    "note": ["supervisor__show_profile", "simple_note__create_note", "supervisor__complete_task"],
    "email": [
        "supervisor__show_profile",
        "phone__search_contacts",
        "gmail__send_email",
        "supervisor__complete_task",
    ],
}


@pytest.mark.parametrize("kind", list(PLANS))
def test_plan_of_calls_per_kind(kind: str) -> None:
    result = _run("alex", _task(kind))
    assert [c.tool for c in result.trace.calls] == PLANS[kind]
    assert all(c.ok for c in result.trace.calls)
    assert result.record.final_state["completed"] is True


def test_payment_plan_looks_up_transactions_only_when_it_must_compute() -> None:
    task = _task("payment")
    tools = [c.tool for c in _run("alex", task, _oracle("alex")).trace.calls]
    assert tools[4] == "venmo__show_transactions"
    assert tools[:4] + tools[5:] == PLANS["payment"]
    visibility_only = RULES_BY_NAME["payment_visibility"].statement("private")
    tools = [c.tool for c in _run("alex", task, visibility_only).trace.calls]
    assert tools == PLANS["payment"]


# --- determinism ------------------------------------------------------------------------------


def test_same_seed_gives_identical_calls() -> None:
    for persona in ("blair", "alex"):
        memory = _oracle(persona)
        for task in TASKS[::3]:
            first = _run(persona, task, memory, seed=7)
            second = _run(persona, task, memory, seed=7)
            assert _calls(first) == _calls(second)


def test_different_seeds_differ_in_lapses() -> None:
    only_lapses = SimRates(habitual_card_stated=0.0, running_total_stated=0.0, checksum_stated=0.0)
    memory = _oracle("emery")
    differ = 0
    for task in TASKS:
        a = _run("emery", task, memory, seed=1, rates=only_lapses)
        b = _run("emery", task, memory, seed=2, rates=only_lapses)
        differ += _calls(a) != _calls(b)
        assert _calls(a) == _calls(_run("emery", task, memory, seed=1, rates=only_lapses))
    assert differ > 0


def test_the_sims_own_seed_changes_the_draws() -> None:
    memory = _oracle("blair")
    task = _task("note")
    outcomes = {tuple(_calls(_run("blair", task, memory, seed=0, sim_seed=s))) for s in range(20)}
    assert len(outcomes) > 1


# --- what the agent role reads ------------------------------------------------------------


def _act(system: str, instruction: str, seed: int = 0) -> dict[str, Any]:
    llm = SimLLM(ENV, rates=NO_LAPSE)
    messages = [Message("system", system), Message("user", f"Task: {instruction}")]
    completion = llm.complete(messages, json_schema=ACTION_SCHEMA, seed=seed)
    assert completion.model == "sim" and completion.usage.input_tokens > 0
    return dict(json.loads(completion.text))


def test_the_task_is_matched_by_its_instruction() -> None:
    task = _task("note")
    system = build_system_prompt(PROMPTS, api_docs=api_docs(), memory="")
    assert _act(system, task.instruction) == {"tool": "supervisor__show_profile", "arguments": {}}
    assert _act(system, "Dance a little.") == {
        "tool": "supervisor__complete_task",
        "arguments": {"answer": "unknown task"},
    }


def test_an_unknown_task_fails_the_episode() -> None:
    known = ENV.task("note_todo-1")
    unknown = Task("x-1", "note_todo", "note", "train", "Make a note about nothing.", known.params)
    result = _run("alex", unknown)
    assert [c.tool for c in result.trace.calls] == ["supervisor__complete_task"]
    assert result.trace.calls[0].args == {"answer": "unknown task"}
    assert result.judgement.failure == "The task wasn't done: nothing was sent or saved."


@pytest.mark.parametrize("where", ["api_docs", "stats"])
def test_statements_inside_api_docs_or_stats_are_not_followed(where: str) -> None:
    task = _task("sms")
    system = build_system_prompt(
        (),
        api_docs=f"{api_docs()}\n{B}" if where == "api_docs" else api_docs(),
        memory="",
        stats=[B] if where == "stats" else [],
    )
    assert read_directives(system) == {}
    llm = SimLLM(ENV, rates=NO_LAPSE)
    world = ENV.new_world(task, "blair", ENV.initial_history("blair"))
    trace = run_agent(
        llm,
        world,
        system_prompt=system,
        task_message=task_message(task.instruction),
        tools=ENV.tools(),
        max_turns=12,
        seed=0,
    )
    [sent] = [c for c in trace.calls if c.tool == "phone__send_text_message"]
    assert sent.args["message"] == task.params["message"]


def test_sim_needs_persona_world_and_known_roles() -> None:
    with pytest.raises(ModelError):
        SimLLM(MockLLM())  # type: ignore[arg-type]
    llm = SimLLM(ENV)
    with pytest.raises(ModelError, match="role"):
        llm.complete([Message("user", "hi")], json_schema=JsonSchema("poem"))
    with pytest.raises(ModelError):
        llm.complete([Message("user", "hi")])
