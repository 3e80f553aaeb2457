"""`evolve train`: the episode stream — run, check, complain, update, commit.

Each rejected episode's complaint goes to the recipe; the applier writes what it proposes and
the store makes one commit for the episode, with trailers. Episodes that change nothing make
no commit. The recipe reads its state from `memory/` before every episode, so a hand edit or a
revert between episodes takes effect at once.

Resuming: the stream is deterministic for its seed, so a stopped run resumes after the last
committed episode of the same stream (persona, recipe, seed, feedback tier); episodes after it
that changed nothing are replayed and change nothing again. A crash between writing and
committing is undone by the applier's journal before anything else runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from evolve._io import canonical_json, derive_seed
from evolve.agent import read_prompt_files
from evolve.applier import ApplyResult, MemoryApplier, recover
from evolve.envs import Environment, Tier
from evolve.episode import EpisodeSetup, Redactor, run_episode
from evolve.errors import EvolveError, UnknownName
from evolve.evaluate import make_verifier, open_env
from evolve.history import refresh_commit_graph
from evolve.llm import LLM, make_llm
from evolve.memory import UnitReader, in_scope, render_memory, scope_for
from evolve.store import EPISODE, GENERATION, KIND, OPS, PERSONA, RECIPE, TASK, format_ops
from evolve.train._stream import history_before, stream_id, stream_tasks
from evolve.updaters import (
    MAX_ATTEMPTS,
    EpisodeView,
    RecipeContext,
    Update,
    get_recipe,
    summarize_actions,
)
from evolve.workspace import Workspace, max_turns

STREAM = "Evolve-Stream"
Progress = Callable[[int, int], None]


@dataclass
class EpisodeOutcome:
    episode: int
    task_id: str
    accepted: bool
    violations: list[str]
    commit: str | None = None
    ops: dict[str, int] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)


@dataclass
class TrainReport:
    recipe: str
    persona: str
    stream: str
    start: int
    end: int
    outcomes: list[EpisodeOutcome] = field(default_factory=list)
    duration_s: float = 0.0

    @property
    def commits(self) -> list[str]:
        return [o.commit for o in self.outcomes if o.commit]

    def to_json(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe,
            "persona": self.persona,
            "stream": self.stream,
            "start": self.start,
            "end": self.end,
            "episodes": len(self.outcomes),
            "accepted": sum(o.accepted for o in self.outcomes),
            "commits": self.commits,
            "duration_s": round(self.duration_s, 3),
            "outcomes": [o.__dict__ for o in self.outcomes],
        }


def last_episode(ws: Workspace, stream: str) -> int | None:
    """The last episode of `stream` that made a commit on the current branch."""
    for info in ws.store.log(grep_trailer=STREAM, grep_value=stream):
        if info.trailers.get(STREAM) == stream and EPISODE in info.trailers:
            return int(info.trailers[EPISODE])
    return None


def _counts(result: ApplyResult) -> dict[str, int]:
    counts: dict[str, int] = {}
    for op in result.applied:
        counts[op.op] = counts.get(op.op, 0) + 1
    return counts


def commit_message(
    recipe: str, episode: int, task_id: str, complaint: str, update: Update, result: ApplyResult
) -> tuple[str, str]:
    c = _counts(result)
    c["modify"] = c.get("modify", 0) + c.pop("rewrite", 0)
    main = [f"{op} {c.pop(op, 0)}" for op in ("add", "modify", "revoke", "evict")]
    extra = [f"{op} {n}" for op, n in sorted(c.items())]
    subject = f"{recipe}: episode {episode} ({task_id}): {', '.join(main + extra)}"
    body = ["Complaint:", *[f"  {line}" for line in complaint.splitlines()], "", "Operations:"]
    for op in result.applied:
        body.append(f"- {op.op} {op.id}: {op.unit.text[:160]}")
    refused = [*update.refused, *result.refused]
    if refused:
        body += ["", "Refused:", *[f"- {r.line()}" for r in refused]]
    if update.notes:
        body += ["", "Notes:", *[f"- {n}" for n in update.notes]]
    return subject, "\n".join(body)


def train(
    ws: Workspace,
    *,
    recipe: str | None = None,
    episodes: int | None = None,
    feedback: Tier | None = None,
    seed: int | None = None,
    review: bool | None = None,
    persona: str | None = None,
    agent_llm: LLM | None = None,
    updater_llm: LLM | None = None,
    progress: Progress | None = None,
    generation: int | None = None,
    take_lock: bool = True,
    start_at: int | None = None,
) -> TrainReport:
    """Run the training stream up to episode `episodes` (resuming after the last commit).

    Raises:
        UnknownName: an unknown recipe or persona.
        EvolveError: `memory/` has uncommitted changes, or the lock is held.
    """
    cfg = ws.config
    name = recipe or cfg.train.recipe
    recipe_impl = get_recipe(name)
    total = episodes if episodes is not None else cfg.train.episodes
    tier: Tier = feedback or cfg.train.feedback
    seed = cfg.train.seed if seed is None else seed
    review = cfg.train.review if review is None else review
    env = open_env(ws)
    persona = persona or cfg.persona
    if persona not in env.personas():
        raise UnknownName(
            f"unknown persona {persona!r}; choose one of {', '.join(env.personas())}."
        )
    agent_llm = agent_llm or make_llm(cfg.models.agent, env=env)
    updater_llm = updater_llm or make_llm(cfg.models.updater, env=env)
    lock = ws.lock("evolve train") if take_lock else None
    if lock is not None:
        lock.acquire()
    try:
        report = _train(
            ws, env, recipe_impl, name, total, tier, seed, review, persona, agent_llm, updater_llm, progress,
            generation, start_at,
        )  # fmt: skip
        if report.commits and take_lock:
            refresh_commit_graph(ws.store)
        return report
    finally:
        if lock is not None:
            lock.release()


def _train(
    ws: Workspace,
    env: Environment,
    recipe: Any,
    name: str,
    total: int,
    tier: Tier,
    seed: int,
    review: bool,
    persona: str,
    agent_llm: LLM,
    updater_llm: LLM,
    progress: Progress | None,
    generation: int | None,
    start_at: int | None,
) -> TrainReport:
    from evolve.review import as_pending

    store = ws.store
    recover(store)
    dirty = store.dirty_paths(["memory"])
    if dirty:
        shown = ", ".join(dirty[:5]) + (" ..." if len(dirty) > 5 else "")
        raise EvolveError(
            f"memory/ has uncommitted changes ({shown}); commit or discard them first."
        )
    sid = stream_id(persona, name, seed, tier)
    last = last_episode(ws, sid)
    start = 0 if last is None else last + 1
    if start_at is not None:
        start = max(start, start_at)  # the evolve loop skips a batch a rejected generation used
    tasks = stream_tasks(env, seed, max(total, start))
    history = history_before(env, tasks, persona, start)
    scope = scope_for(persona)
    reader = UnitReader(ws.root)
    applier = MemoryApplier(ws, scope)
    prompt_files = tuple(read_prompt_files(ws.prompts_dir))
    report = TrainReport(name, persona, sid, start, total)
    started = time.perf_counter()
    redactor = Redactor.from_settings(ws.config.redact.values, ws.config.redact.env)
    log_path = ws.runs_dir / f"train-{sid.replace('/', '-')}.jsonl"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    for k in range(start, total):
        task = tasks[k]
        units = reader.load()
        visible = in_scope(units, scope)
        setup = EpisodeSetup(
            prompt_files=prompt_files,
            memory=render_memory(visible, scope),
            persona=persona,
            stats=ws.config.memory.stats,
            max_turns=max_turns(ws.root, ws.config),
            verifier=make_verifier(visible),
            max_attempts=MAX_ATTEMPTS,
            redactor=redactor,
        )
        result = run_episode(
            env, agent_llm, task, setup, history=history, seed=derive_seed(sid, k), episode=k
        )
        outcome = EpisodeOutcome(
            k, task.id, result.judgement.accepted, [v.rule for v in result.judgement.violations]
        )
        if not result.judgement.accepted:
            fb = env.feedback(task, result.judgement, tier)
            ctx = RecipeContext(
                units=visible,
                scope=scope,
                episode=EpisodeView(
                    episode=k,
                    task_id=task.id,
                    instruction=task.instruction,
                    actions=summarize_actions(result.trace.calls),
                    complaint=fb.text,
                    accepted=False,
                ),
                llm=updater_llm,
                seed=derive_seed(sid, k, "update"),
                now=datetime.now(UTC).isoformat(timespec="seconds"),
                max_memory_chars=ws.config.memory.max_memory_chars,
                tools=tuple(env.tools()),
            )
            update = recipe.observe(ctx)
            ops = as_pending(update.ops, visible) if review else update.ops
            applied = applier.apply(ops, units)
            outcome.refused = [r.line() for r in [*update.refused, *applied.refused]]
            if applied.paths:
                subject, body = commit_message(name, k, task.id, fb.text, update, applied)
                trailers = [
                    (EPISODE, str(k)),
                    (RECIPE, name),
                    (TASK, task.id),
                    (OPS, format_ops((op.op, op.id) for op in applied.applied)),
                    (PERSONA, persona),
                    (STREAM, sid),
                    (KIND, "train"),
                ]
                if generation is not None:
                    trailers.append((GENERATION, str(generation)))
                outcome.commit = store.commit(applied.paths, subject, body=body, trailers=trailers)
                outcome.ops = _counts(applied)
            applier.done()
        logged = result.record.model_copy(
            update={"commit": outcome.commit, "refused": outcome.refused}
        )
        with log_path.open("a", encoding="utf-8") as handle:
            handle.write(canonical_json(logged.model_dump(mode="json")) + "\n")
        report.outcomes.append(outcome)
        history = env.advance_history(history, task, persona, k)
        if progress:
            progress(k + 1 - start, total - start)
    report.duration_s = time.perf_counter() - started
    return report
