"""Running one episode: build the prompt, run the agent in a fresh world, judge, record."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from evolve._text import printable
from evolve.agent import (
    Agent,
    AgentRequest,
    PromptFile,
    Trace,
    Turn,
    task_message,
)
from evolve.envs import ApiCall, Environment, Judgement, Task, Violation
from evolve.episode._records import CallRecord, EpisodeRecord, TurnRecord
from evolve.harness import DEFAULT_HARNESS, Harness, TaskView
from evolve.llm import LLM
from evolve.redact import DEFAULT_REDACTOR, Redactor

if TYPE_CHECKING:
    from evolve.skills._select import SkillPicker

# How much of a reply that could not be used is kept in the record (redacted, escaped).
REPLY_EXCERPT = 300


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
    # Secrets to hide by value beyond the built-in shapes (from `redact:` in evolve.yaml).
    redactor: Redactor = field(default=DEFAULT_REDACTOR)
    # Skills: picks each task's `<skills>` section; None: no skills section.
    skills: SkillPicker | None = None
    # Who plays the episode (agent/_seam.py); None: evolve's own agent over the run's model.
    agent: Agent | None = None
    # The harness modules evolve's own agent is assembled from (prompts/harness.yaml); None:
    # the default harness (the prompt and the loop as before modules existed).
    harness: Harness | None = None


@dataclass(frozen=True)
class EpisodeResult:
    """One judged episode. Everything in it is redacted: the record, the trace (its calls,
    results, errors and replies) and the judgement (failure and violation texts), so every
    sink downstream (run logs, the updater's `<actions>`, complaints, units, commits, the
    reflector's evidence) gets secrets hidden by construction."""

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
    """Run `task` and judge it; with a verifier, retry failed attempts (up to `max_attempts`).

    The verifier sees the live calls; what is returned is redacted (see :class:`EpisodeResult`).
    """
    result, live = _attempt(
        env, llm, task, setup, history=history, seed=seed, run=run, episode=episode
    )
    if setup.verifier is None or result.record.model_error is not None:
        return result  # an episode the model failed is not tried again: it failed
    for attempt in range(2, setup.max_attempts + 1):
        failures = setup.verifier(live)
        if not failures:
            break
        note = "Your previous attempt at this task failed these checks:\n" + "\n".join(
            f"- {f}" for f in failures
        )
        result, live = _attempt(
            env, llm, task, setup, history=history, seed=seed, run=run, episode=episode,
            attempt=attempt, extra_memory=note,
        )  # fmt: skip
    return result


def _redacted_call(call: ApiCall, hide: Redactor) -> ApiCall:
    return replace(
        call,
        args=hide(dict(call.args)),
        result=hide(call.result),
        error=hide.text(call.error) if call.error is not None else None,
    )


def redact_trace(trace: Trace, hide: Redactor) -> Trace:
    """A copy of `trace` with secrets hidden in every call, error and reply."""
    turns = [
        Turn(
            call=_redacted_call(t.call, hide) if t.call is not None else None,
            bad_reply=hide.text(t.bad_reply) if t.bad_reply is not None else None,
            reply=hide.text(t.reply),
        )
        for t in trace.turns
    ]
    return Trace(
        turns=turns,
        usage=trace.usage,
        hit_turn_limit=trace.hit_turn_limit,
        model_error=hide.text(trace.model_error) if trace.model_error is not None else None,
    )


def redact_judgement(judgement: Judgement, hide: Redactor) -> Judgement:
    """A copy of `judgement` whose failure and violation texts have secrets hidden."""
    return replace(
        judgement,
        failure=hide.text(judgement.failure) if judgement.failure is not None else None,
        violations=tuple(
            Violation(v.rule, hide.text(v.instance), hide.text(v.corrective))
            for v in judgement.violations
        ),
    )


def _turn_record(turn: Turn) -> TurnRecord:
    if turn.call is None:
        return TurnRecord(
            bad_reply=turn.bad_reply, reply=printable(turn.reply, REPLY_EXCERPT) or None
        )
    call = turn.call
    return TurnRecord(
        call=CallRecord(
            tool=call.tool, args=dict(call.args), ok=call.ok, result=call.result, error=call.error
        )
    )


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
) -> tuple[EpisodeResult, Sequence[ApiCall]]:
    """Run `task` once and judge it (against the persona now, or at training `episode`).

    Returns the redacted result and the live calls (for the verifier only)."""
    started = time.perf_counter()
    world = env.new_world(task, setup.persona, history)
    stats = env.stats(task, setup.persona, history) if setup.stats else []
    memory = setup.memory if not extra_memory else f"{setup.memory}\n{extra_memory}".strip()
    picked = setup.skills.pick(task.instruction, seed) if setup.skills is not None else None
    harness = setup.harness if setup.harness is not None else DEFAULT_HARNESS
    system = harness.system_prompt(
        [f.text for f in setup.prompt_files],
        api_docs=env.api_docs(),
        tools=env.tools(),
        memory=setup.memory,
        note=extra_memory,
        stats=stats,
        skills=picked.section if picked is not None else "",
        task=TaskView(task.id, task.instruction),
    )
    sections = {
        "prompt_files": "\n\n".join(f.text.strip() for f in setup.prompt_files if f.text.strip()),
        "api_docs": env.api_docs(),
        "memory": memory,
        "skills": picked.section if picked is not None else "",
        "stats": "\n".join(stats),
    }
    request = AgentRequest(
        task_id=task.id,
        instruction=task.instruction,
        task_message=task_message(task.instruction, str(task.params.get("date", "")) or None),
        system_prompt=system,
        tools=tuple(env.tools()),
        max_turns=setup.max_turns,
        seed=seed,
        sections=sections,
    )
    agent = setup.agent if setup.agent is not None else harness.agent(llm)
    trace = agent.run(request, world)
    judgement = env.judge(task, setup.persona, world, history, episode)
    # Redacted here, once: nothing after this line sees a secret (see EpisodeResult).
    live = trace.calls
    trace = redact_trace(trace, setup.redactor)
    judgement = redact_judgement(judgement, setup.redactor)
    turns = [_turn_record(t) for t in trace.turns]
    record = EpisodeRecord(
        task_id=task.id,
        family=task.family,
        split=task.split,
        persona=setup.persona,
        run=run,
        seed=seed,
        episode=episode,
        attempt=attempt,
        model=agent.name,
        turns=turns,
        hit_turn_limit=trace.hit_turn_limit,
        final_state=_final_state(world),
        task_success=judgement.task_success,
        failure=judgement.failure,
        applicable_rules=list(judgement.applicable),
        violations={v.rule: v.instance for v in judgement.violations},
        accepted=judgement.accepted and trace.model_error is None,
        input_tokens=trace.usage.input_tokens,
        output_tokens=trace.usage.output_tokens,
        cost=round(trace.usage.cost, 8),
        prompt_chars=len(system),
        duration_s=round(time.perf_counter() - started, 6),
        skills_injected=list(picked.injected) if picked is not None else [],
        skills_held_out=list(picked.held_out) if picked is not None else [],
        skills_note=(picked.note or None) if picked is not None else None,
        model_error=trace.model_error,
    )
    return EpisodeResult(record, judgement, trace, system), live
