"""The sim's documented, seeded responses to the harness variants (docs/sim.md, "Harness
variants"): each reaches it only through the prompt or how the loop calls it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from evolve.agent import PromptFile, read_prompt_files
from evolve.envs import Task
from evolve.envs.persona_world import MAIN_TOOL, PersonaWorldEnv
from evolve.episode import EpisodeResult, EpisodeSetup, run_episode
from evolve.harness import DOC_TOOL, build_harness, parse_choice
from evolve.sim import SimLLM, SimRates

REPO = Path(__file__).resolve().parents[2]
ENV = PersonaWorldEnv(REPO / "evalset")
PROMPTS: tuple[PromptFile, ...] = tuple(read_prompt_files(REPO / "prompts"))
DEV = ENV.tasks("dev")
SEEDS = range(6)


def _oracle(persona: str) -> str:
    return "\n".join(f"- {s}" for s in ENV.oracle_statements(persona, None))


def _run(
    harness: str, task: Task, seed: int, *, persona: str = "alex", rates: SimRates | None = None
) -> EpisodeResult:
    setup = EpisodeSetup(
        PROMPTS, _oracle(persona), persona, False, 12, harness=build_harness(parse_choice(harness))
    )
    llm = SimLLM(ENV, rates=rates or SimRates())
    return run_episode(ENV, llm, task, setup, history=ENV.initial_history(persona), seed=seed)


def _violations(result: EpisodeResult) -> set[str]:
    return {v.rule for v in result.judgement.violations}


def _main(result: EpisodeResult, task: Task) -> list[dict[str, object]]:
    return [dict(c.args) for c in result.trace.calls if c.tool == MAIN_TOOL[task.kind]]


def test_a_review_before_each_call_only_ever_removes_violations() -> None:
    fewer = 0
    for task in DEV:
        for seed in SEEDS:
            act, review = _run("", task, seed), _run("workflow: verify_first", task, seed)
            assert _violations(review) <= _violations(act), (task.id, seed)
            fewer += len(_violations(act)) - len(_violations(review))
            assert review.judgement.task_success or not act.judgement.task_success
            assert review.trace.usage.input_tokens > act.trace.usage.input_tokens
    assert fewer >= 10  # computed-value misses caught (half of them) and every lapse


def test_a_check_before_finishing_redoes_the_write_and_fails_the_task() -> None:
    redone = 0
    for task in DEV:
        for seed in SEEDS:
            result = _run("workflow: verify_finish", task, seed)
            writes = _main(result, task)
            if len(writes) > 1:
                redone += 1
                assert result.judgement.failure == "The task was done more than once."
                assert writes[0] != writes[1]
            else:
                assert result.judgement.failure is None
    assert redone >= 5


def test_compact_docs_leave_out_the_arguments_the_task_does_not_name() -> None:
    for task in [t for t in DEV if t.kind in ("payment", "email")]:
        plain = _main(_run("", task, 0, persona="blair"), task)[0]
        compact = _main(_run("tools: compact_docs", task, 0, persona="blair"), task)[0]
        assert set(compact) < set(plain) or task.kind == "payment"
        assert not {"visibility", "payment_card_id", "cc"} & set(compact)


def test_docs_on_demand_look_the_write_up_then_make_the_call_with_fewer_misses() -> None:
    for task in DEV:
        plain = _run("", task, 1)
        lookup = _run("tools: docs_on_demand", task, 1)
        tools = [c.tool for c in lookup.trace.calls]
        assert tools.index(DOC_TOOL) == tools.index(MAIN_TOOL[task.kind]) - 1
        assert _violations(lookup) <= _violations(plain)
        if task.kind != "payment":  # no computed value to miss
            assert _main(lookup, task) == _main(plain, task)


def test_a_checklist_skill_lowers_the_lapse() -> None:
    always = SimRates(lapse=1.0, checklist_lapse=0.0)  # every directive forgotten, unless...
    for task in DEV:
        assert _violations(_run("", task, 0, rates=always))
        checked = _run("skills: checklist", task, 0, rates=always)
        assert _violations(checked) <= _violations(_run("", task, 0))


def test_a_read_back_workflow_adds_a_read_after_the_write() -> None:
    for task in DEV:
        tools = [c.tool for c in _run("skills: read_back", task, 0).trace.calls]
        write = tools.index(MAIN_TOOL[task.kind])
        assert tools[write + 1] != "supervisor__complete_task"


def test_a_fifo_window_forgets_what_falls_out_of_it() -> None:
    task = next(t for t in DEV if t.kind == "sms")
    assert "sms_signoff" not in _violations(_run("", task, 0))
    small = _run("context: {variant: budget_fifo, budget_tokens: 1}", task, 0)
    assert "sms_signoff" in _violations(small)


def test_variants_are_seeded() -> None:
    for harness in ("workflow: verify_first", "workflow: verify_finish"):
        again = [dataclasses.asdict(_run(harness, t, 3).judgement) for t in DEV]
        assert again == [dataclasses.asdict(_run(harness, t, 3).judgement) for t in DEV]


def test_newest_first_lets_a_stale_statement_win() -> None:
    """The sim lets the last statement per slot win: rendered newest first, the older
    statement comes last and is followed."""
    task = next(t for t in DEV if t.kind == "payment")
    stale = "- Make my Venmo payments public.\n- Set my Venmo payments to private."
    setup = EpisodeSetup(PROMPTS, stale, "alex", False, 12)
    llm = SimLLM(ENV)
    history = ENV.initial_history("alex")

    def visibility(harness: str) -> object:
        chosen = dataclasses.replace(setup, harness=build_harness(parse_choice(harness)))
        result = run_episode(ENV, llm, task, chosen, history=history, seed=5)
        return _main(result, task)[0].get("visibility")

    assert visibility("") == "private"
    assert visibility("memory: newest_first") == "public"
