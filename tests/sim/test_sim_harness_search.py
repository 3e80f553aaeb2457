"""The sim's responses a module search needs (docs/sim.md, "Harness variants"): gains that add
up across modules, a pair whose gains do not, each reached only through the prompt or the
loop."""

from __future__ import annotations

from pathlib import Path

from evolve.agent import PromptFile, read_prompt_files
from evolve.envs.persona_world import PersonaWorldEnv
from evolve.episode import EpisodeResult, EpisodeSetup, run_episode
from evolve.harness import build_harness, parse_choice
from evolve.sim import SimLLM, SimRates

REPO = Path(__file__).resolve().parents[2]
ENV = PersonaWorldEnv(REPO / "evalset")
PROMPTS: tuple[PromptFile, ...] = tuple(read_prompt_files(REPO / "prompts"))
PAYMENTS = [t for t in ENV.tasks("dev") if t.kind == "payment"]
SEEDS = range(8)


def _missed(harness: str, rates: SimRates | None = None) -> int:
    oracle = "\n".join(f"- {s}" for s in ENV.oracle_statements("alex", None))
    setup = EpisodeSetup(
        PROMPTS, oracle, "alex", False, 12, harness=build_harness(parse_choice(harness))
    )
    llm = SimLLM(ENV, rates=rates or SimRates())
    missed = 0
    for task in PAYMENTS:
        for seed in SEEDS:
            result: EpisodeResult = run_episode(
                ENV, llm, task, setup, history=ENV.initial_history("alex"), seed=seed
            )
            missed += len(result.judgement.violations)
    return missed


def test_a_checklist_and_a_review_catch_different_misses_so_their_gains_add_up() -> None:
    base = _missed("")
    review = _missed("workflow: verify_first")
    checklist = _missed("skills: checklist")
    both = _missed("workflow: verify_first\nskills: checklist")
    assert review < base and base - checklist >= (base - review) / 2
    # Both also cut the lapses (the only overlap), so the sum is a little above the joint gain.
    assert 0.9 * ((base - review) + (base - checklist)) <= base - both


def test_a_looked_up_entry_and_a_review_catch_the_same_misses() -> None:
    base = _missed("")
    review = _missed("workflow: verify_first")
    lookup = _missed("tools: docs_on_demand")
    both = _missed("workflow: verify_first\ntools: docs_on_demand")
    assert lookup < base and review < base
    assert both == review  # the lookup adds nothing to the review


def test_the_catches_are_the_documented_rates() -> None:
    none = SimRates(checklist_catch=0.0, lookup_catch=0.0)
    assert _missed("skills: checklist", none) >= _missed("skills: checklist")
    assert _missed("tools: docs_on_demand", none) == _missed("", none)
