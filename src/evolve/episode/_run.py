"""Running one episode: build the prompt, run the agent in a fresh world, judge, record."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evolve.agent import PromptFile, Trace, build_system_prompt, run_agent, task_message
from evolve.envs import ApiCall, Environment, Judgement, Task
from evolve.episode._records import CallRecord, EpisodeRecord, TurnRecord
from evolve.episode._redact import redact
from evolve.llm import LLM


@dataclass(frozen=True)
class EpisodeSetup:
    """What is fixed for every episode of a run: the prompt files, memory and options."""

    prompt_files: tuple[PromptFile, ...]
    memory: str
    persona: str
    stats: bool
    max_turns: int
    # Enforced checks (TRACE): failures of an attempt retry the episode in a fresh world.
    verifier: Callable[[Sequence[ApiCall]], list[str]] | None = None
    max_attempts: int = 3


@dataclass(frozen=True)
class EpisodeResult:
    record: EpisodeRecord
    judgement: Judgement
    trace: Trace
    system_prompt: str


def _final_state(world: Any) -> dict[str, Any]:
    state = getattr(world, "state", None)
    if state is None:
        return {"completed": bool(world.completed)}
    return {
        "completed": bool(world.completed),
        "texts": len(state.texts),
        "payments": len(state.payments),
        "notes": len(state.notes),
        "emails": len(state.emails),
    }


def run_episode(
    env: Environment,
    llm: LLM,
    task: Task,
    setup: EpisodeSetup,
    *,
    history: Any,
    seed: int,
    run: int = 0,
    episode: int | None = None,
) -> EpisodeResult:
    """Run `task` and judge it; with a verifier, retry failed attempts (up to `max_attempts`)."""
    result = _attempt(env, llm, task, setup, history=history, seed=seed, run=run, episode=episode)
    if setup.verifier is None:
        return result
    for attempt in range(2, setup.max_attempts + 1):
        failures = setup.verifier(result.trace.calls)
        if not failures:
            break
        note = "Your previous attempt at this task failed these checks:\n" + "\n".join(
            f"- {f}" for f in failures
        )
        result = _attempt(
            env, llm, task, setup, history=history, seed=seed, run=run, episode=episode,
            attempt=attempt, extra_memory=note,
        )  # fmt: skip
    return result


def _attempt(
    env: Environment,
    llm: LLM,
    task: Task,
    setup: EpisodeSetup,
    *,
    history: Any,
    seed: int,
    run: int = 0,
    episode: int | None = None,
    attempt: int = 1,
    extra_memory: str = "",
) -> EpisodeResult:
    """Run `task` once and judge it (against the persona now, or at training `episode`)."""
    started = time.perf_counter()
    world = env.new_world(task, setup.persona, history)
    stats = env.stats(task, setup.persona, history) if setup.stats else []
    memory = setup.memory if not extra_memory else f"{setup.memory}\n{extra_memory}".strip()
    system = build_system_prompt(
        setup.prompt_files, api_docs=env.api_docs(), memory=memory, stats=stats
    )
    trace = run_agent(
        llm,
        world,
        system_prompt=system,
        task_message=task_message(task.instruction, str(task.params.get("date", "")) or None),
        tools=env.tools(),
        max_turns=setup.max_turns,
        seed=seed,
    )
    judgement = env.judge(task, setup.persona, world, history, episode)
    turns = [
        TurnRecord(
            call=CallRecord(
                tool=t.call.tool,
                args=redact(dict(t.call.args)),
                ok=t.call.ok,
                result=redact(t.call.result),
                error=t.call.error,
            )
            if t.call is not None
            else None,
            bad_reply=t.bad_reply,
        )
        for t in trace.turns
    ]
    record = EpisodeRecord(
        task_id=task.id,
        family=task.family,
        split=task.split,
        persona=setup.persona,
        run=run,
        seed=seed,
        episode=episode,
        attempt=attempt,
        model=llm.name,
        turns=turns,
        hit_turn_limit=trace.hit_turn_limit,
        final_state=_final_state(world),
        task_success=judgement.task_success,
        failure=judgement.failure,
        applicable_rules=list(judgement.applicable),
        violations={v.rule: v.instance for v in judgement.violations},
        accepted=judgement.accepted,
        input_tokens=trace.usage.input_tokens,
        output_tokens=trace.usage.output_tokens,
        cost=round(trace.usage.cost, 8),
        prompt_chars=len(system),
        duration_s=round(time.perf_counter() - started, 6),
    )
    return EpisodeResult(record, judgement, trace, system)
