"""`evolve train`: the episode stream — run, check, complain, update, commit.

Each rejected episode's complaint goes to the recipe; the applier writes what it proposes and
the store makes one commit for the episode, with trailers. Episodes that change nothing make
no commit. The recipe reads its state from `memory/` before every episode, so a hand edit or a
revert between episodes takes effect at once.

Episode commits read like `ace · alex · episode 13 (pay_back-1): modify 1` (recipe, persona,
episode, task, the non-zero counts; a revoke paired with the add that supersedes it is one
modify). Refusals of an episode that commits nothing are recorded on `refs/evolve/train`
instead, so they reach git history all the same (`evolve log` lists them). Each episode is
judged at the persona's own clock (its episodes across every stream, kept on the same side
ref), so preference drift happens once per persona, not once per stream.

Training needs committed `memory/` and `prompts/`: what the agent was given is then what HEAD
records.

Resuming: the stream is deterministic for its seed, so a stopped run resumes after the last
committed episode of the same stream (persona, recipe, seed, feedback tier); episodes after it
that changed nothing are replayed and change nothing again. A crash between writing and
committing is undone by the applier's journal before anything else runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
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
from evolve.history import clip, refresh_commit_graph, tombstone_git_reverts
from evolve.llm import LLM, make_role_llm
from evolve.memory import MemoryUnit, UnitReader, in_scope, scope_for
from evolve.ops import Op
from evolve.recovery import writer
from evolve.skills._failed import fail, failed_files, load_failed
from evolve.skills._records import check_records
from evolve.skills._select import make_picker, settings_of, skills_of
from evolve.skills._strata import load_strata
from evolve.store import (
    EPISODE,
    GENERATION,
    KIND,
    OPS,
    PERSONA,
    RECIPE,
    TASK,
    GitStore,
    format_ops,
)
from evolve.train._batch import skills_batches
from evolve.train._histref import RecordsHistory, StreamHistory
from evolve.train._stream import STREAM, history_before, last_episodes, stream_id, stream_tasks
from evolve.train._trainref import (
    BASE,
    CLOCK,
    Timeline,
    record_refusals,
    recorded_refusals,
    refusal_path,
)
from evolve.updaters import (
    MAX_ATTEMPTS,
    EpisodeView,
    RecipeContext,
    Update,
    get_recipe,
    render_for,
    summarize_actions,
)
from evolve.workspace import Workspace, max_turns

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
    clock: int | None = None  # the persona's own clock at this episode (drift is keyed to it)
    refusal_record: str | None = None  # refs/evolve/train commit of refusals that committed nothing
    # skills: the batch this episode ended (its commit is the batch's), and its episodes
    batch: int | None = None
    batch_episodes: list[int] | None = None


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
    episode = last_episodes(ws.store).get(stream)
    return None if episode is None else int(episode)


def _counts(result: ApplyResult) -> dict[str, int]:
    counts: dict[str, int] = {}
    for op in result.applied:
        counts[op.op] = counts.get(op.op, 0) + 1
    return counts


SUBJECT_ORDER = ("add", "modify", "revoke", "evict", "reactivate")


def reader_counts(applied: Sequence[Op]) -> dict[str, int]:
    """Operation counts as a reviewer reads them: a rewrite is a modify, and a revoke paired
    with the add that `supersedes` the revoked unit (or that it is `revoked_by`) is one modify."""
    adds = [op for op in applied if op.op in ("add", "reactivate")]
    paired: set[int] = set()
    modify = 0
    for op in applied:
        if op.op != "revoke":
            continue
        for i, new in enumerate(adds):
            if i in paired:
                continue
            if new.unit.supersedes == op.id or (op.unit.revoked_by or None) == new.id:
                paired.add(i)
                modify += 1
                break
    counts: dict[str, int] = {}
    for op in applied:
        name = "modify" if op.op == "rewrite" else op.op
        counts[name] = counts.get(name, 0) + 1
    for i in paired:
        counts[adds[i].op] -= 1
    counts["revoke"] = counts.get("revoke", 0) - modify
    counts["modify"] = counts.get("modify", 0) + modify
    return {k: v for k, v in counts.items() if v > 0}


def commit_subject(
    recipe: str, persona: str | None, episode: int, task_id: str, counts: dict[str, int]
) -> str:
    """`ace · alex · episode 13 (pay_back-1): modify 1` — only the non-zero counts."""
    ordered = [op for op in SUBJECT_ORDER if op in counts]
    ordered += sorted(op for op in counts if op not in SUBJECT_ORDER)
    shown = ", ".join(f"{op} {counts[op]}" for op in ordered) or "no changes"
    who = f"{recipe} · {persona}" if persona else recipe
    return f"{who} · episode {episode} ({task_id}): {shown}"


BODY_TEXT = 160


def commit_message(
    recipe: str,
    episode: int,
    task_id: str,
    complaint: str,
    update: Update,
    result: ApplyResult,
    *,
    persona: str | None = None,
) -> tuple[str, str]:
    subject = commit_subject(recipe, persona, episode, task_id, reader_counts(result.applied))
    body = ["Complaint:", *[f"  {line}" for line in complaint.splitlines()], "", "Operations:"]
    for op in result.applied:
        body.append(f"- {op.op} {op.id}: {clip(op.unit.text, BODY_TEXT)}")
    refused = [*update.refused, *result.refused]
    if refused:
        body += ["", "Refused:", *[f"- {r.line()}" for r in refused]]
    if update.notes:
        body += ["", "Notes:", *[f"- {n}" for n in update.notes]]
    return subject, "\n".join(body)


def _record_refusals(
    store: GitStore,
    recorded: set[str],
    recipe: str,
    persona: str,
    sid: str,
    episode: int,
    clock: int,
    task_id: str,
    complaint: str,
    update: Update,
    applied: ApplyResult,
    generation: int | None,
) -> str | None:
    """Put the refusals of an episode that committed nothing on `refs/evolve/train`, once."""
    base = store.head()
    assert base is not None
    path = refusal_path(sid, episode, base)
    if path in recorded:
        return None  # a resumed stream replays this episode; it is on record already
    refused = [*update.refused, *applied.refused]
    subject = commit_subject(recipe, persona, episode, task_id, {"refused": len(refused)})
    body = ["Complaint:", *[f"  {line}" for line in complaint.splitlines()], "", "Refused:"]
    body += [f"- {clip(r.line(), 400)}" for r in refused]
    if update.notes:
        body += ["", "Notes:", *[f"- {n}" for n in update.notes]]
    trailers = [
        (EPISODE, str(episode)),
        (RECIPE, recipe),
        (TASK, task_id),
        (PERSONA, persona),
        (STREAM, sid),
        (CLOCK, str(clock)),
        (BASE, base),
    ]
    if generation is not None:
        trailers.append((GENERATION, str(generation)))
    recorded.add(path)
    return record_refusals(store, path, subject, "\n".join(body), trailers)


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
    evolver_llm: LLM | None = None,
) -> TrainReport:
    """Run the training stream up to episode `episodes` (resuming after the last commit).

    Raises:
        UnknownName: an unknown recipe or persona.
        EvolveError: `memory/` or `prompts/` has uncommitted changes, or the lock is held.
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
    agent_llm = agent_llm or make_role_llm(cfg, "agent", env=env)
    updater_llm = updater_llm or make_role_llm(cfg, "updater", env=env)
    # Under the caller's lock (take_lock=False: a generation, an experiment arm) the caller
    # handles an interrupt; otherwise `writer` undoes the write in flight (evolve.recovery).
    with writer(ws, "evolve train") if take_lock else nullcontext():
        report = _train(
            ws, env, recipe_impl, name, total, tier, seed, review, persona, agent_llm, updater_llm, progress,
            generation, start_at, evolver_llm,
        )  # fmt: skip
        if report.commits and take_lock:
            refresh_commit_graph(ws.store)
        return report


def batch_end(ws: Workspace, k: int, total: int) -> bool:
    """Whether episode `k` ends a skills batch (as `SkillsBatches.end_episode` decides)."""
    return (k + 1) % ws.config.skills.batch_size == 0 or k + 1 >= total


def score_episodes(
    ws: Workspace,
    outcomes: list[tuple[list[str], list[str], bool, str, bool]],
    k: int,
    recipe: str,
    persona: str,
    sid: str,
    clock: int,
    generation: int | None,
    failed: dict[str, int] | None = None,
) -> None:
    """Count training episodes on the skills scoreboard (see evolve.skills._scoreboard) and
    retire what is then confidently harmful; the commits carry episode `k`, like the
    episode or batch commit (`outcomes` empty: a skills batch counted them already)."""
    from evolve.skills._scoreboard import settle

    extra = [(PERSONA, persona), (STREAM, sid), (CLOCK, str(clock))]
    if generation is not None:
        extra.append((GENERATION, str(generation)))
    settle(
        ws,
        outcomes,
        episodes=str(k),
        recipe=recipe,
        confidence=settings_of(ws.config).retire_confidence,
        extra_trailers=extra,
        extra_files=failed_files(ws.root, failed) if failed is not None else None,
    )


# An episode's scoreboard outcome, carried by its memory commit when a count commit follows
# (`pass|fail <injected ids>|- <held-out ids>|-`): a stream stopped between the two replays
# the count on resume (`_rescore`), since the memory commit already moved the resume point.
SKILLS_SEEN = "Evolve-Skills-Seen"


def seen_trailer(seen: tuple[list[str], list[str]], passed: bool) -> str:
    return " ".join(
        ["pass" if passed else "fail", ",".join(seen[0]) or "-", ",".join(seen[1]) or "-"]
    )


def _rescore(
    ws: Workspace, sid: str, last: int | None, failed: dict[str, int] | None
) -> list[tuple[list[str], list[str], bool, str, bool]] | None:
    """The count the stream's last episode still owes (its memory commit is the stream's
    newest: the process stopped before the count commit), or None."""
    if failed is None or last is None:
        return None
    newest = next(iter(ws.store.log(grep_trailer=STREAM, grep_value=sid, max_count=1)), None)
    if newest is None:
        return None
    t = newest.trailers
    if t.get(STREAM) != sid or t.get(KIND) != "train" or t.get(EPISODE) != str(last):
        return None
    parts = (t.get(SKILLS_SEEN) or "").split(" ")
    if len(parts) != 3 or parts[0] not in ("pass", "fail") or TASK not in t:
        return None
    injected, held = ([] if p == "-" else p.split(",") for p in parts[1:])
    counts, failed_now = stratum(failed, t[TASK], (injected, held), parts[0] == "pass")
    return counts if counts or failed_now else None


def stratum(
    failed: dict[str, int] | None, task_id: str, seen: tuple[list[str], list[str]], passed: bool
) -> tuple[list[tuple[list[str], list[str], bool, str, bool]], bool]:
    """The episode's scoreboard outcome (none unless skills were selected), flagged with
    whether its task failed in an earlier episode (the pooled counters count only those; the
    per-task record every one, evolve.skills._strata), and whether its task failed now; then
    `failed` counts the episode (every failing episode is counted, so a revert of one commit
    takes back only its own: evolve.skills._failed). Without a record (skills off) nothing
    counts."""
    if failed is None:
        return [], False
    before = task_id in failed
    counts = [(*seen, passed, task_id, before)] if seen[0] or seen[1] else []
    if not passed:
        fail(failed, task_id)
    return counts, not passed


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
    evolver_llm: LLM | None = None,
) -> TrainReport:
    from evolve.review import as_pending

    store = ws.store
    recover(store)
    # The episodes' memory commits must stand on committed memory and prompts: what the agent
    # was given is then exactly what HEAD records.
    for folder in ("memory", "prompts"):
        dirty = store.dirty_paths([folder])
        if dirty:
            shown = ", ".join(dirty[:5]) + (" ..." if len(dirty) > 5 else "")
            raise EvolveError(
                f"{folder}/ has uncommitted changes ({shown}); commit or discard them first."
            )
    tombstone_git_reverts(ws, take_lock=False)  # a plain `git revert` gets its tombstones
    sid = stream_id(persona, name, seed, tier)
    last = last_episode(ws, sid)
    start = 0 if last is None else last + 1
    if start_at is not None:
        start = max(start, start_at)  # the evolve loop skips a batch a rejected generation used
    tasks = stream_tasks(env, seed, max(total, start))
    past = StreamHistory.load(store, sid) if isinstance(env, RecordsHistory) else None
    history = history_before(env, tasks, persona, start, past)
    # Memory a person edited so that it cannot be read (a key given twice, ...) is refused
    # before anything is written (the timeline below, a run log), not after episodes ran.
    reader = UnitReader(ws.root)
    # Read once here; the first episode uses this read unless something wrote memory since.
    loaded = reader.load()
    first: list[MemoryUnit] | None = loaded
    if settings_of(ws.config).enabled or name == "skills":
        check_records(ws.root)
        skills_of(in_scope(loaded, scope_for(persona)))  # two skills with one id: refused
    timeline = Timeline.load(store, persona)
    added = timeline.extend(sid, start, total)
    if added:
        # Saved before the episodes run: a resumed stream replays the same clock values.
        timeline.save(store, added)
    recorded = recorded_refusals(store, sid)
    scope = scope_for(persona)
    applier = MemoryApplier(ws, scope)
    prompt_files = tuple(read_prompt_files(ws.prompts_dir))
    report = TrainReport(name, persona, sid, start, total)
    started = time.perf_counter()
    redactor = Redactor.from_settings(ws.config.redact.values, ws.config.redact.env)
    log_path = ws.runs_dir / f"train-{sid.replace('/', '-')}.jsonl"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # skills (issue 13): failed episodes feed a batch; the batch, not the episode, commits.
    batches = skills_batches(ws, name, sid, persona, env, review, generation, evolver_llm)
    failed = load_failed(ws.root) if settings_of(ws.config).enabled or batches else None
    if batches is not None:
        batches.failed = failed
    owed = None if batches is not None else _rescore(ws, sid, last, failed)
    if owed is not None and last is not None:  # stopped between an episode and its count
        score_episodes(
            ws, owed, last, name, persona, sid, timeline.clock(sid, last), generation, failed
        )
        first = None  # the count commit wrote memory: read again
    for k in range(start, total):
        task = tasks[k]
        units = first if first is not None else reader.load()
        first = None
        visible = in_scope(units, scope)
        setup = EpisodeSetup(
            prompt_files=prompt_files,
            memory=render_for(visible, scope, (name,)),  # the agent sees what this recipe learns
            persona=persona,
            stats=ws.config.memory.stats,
            max_turns=max_turns(ws.root, ws.config),
            verifier=make_verifier(visible, (name,)),
            max_attempts=MAX_ATTEMPTS,
            redactor=redactor,
            skills=make_picker(
                ws.config,
                visible,  # global skills and this persona's own
                training=True,
                env=env,
                recipe=name,
                strata=load_strata(ws.root) if failed is not None else None,
                task=task.id,
            ),  # issue 13: the scoreboard's hold-out, balanced within the task
        )
        # The persona's preferences (and their scheduled drift) are read at the persona's own
        # clock, which runs across every stream the workspace trained for it.
        clock = timeline.clock(sid, k)
        result = run_episode(
            env, agent_llm, task, setup, history=history, seed=derive_seed(sid, k), episode=clock
        )
        outcome = EpisodeOutcome(
            k,
            task.id,
            result.judgement.accepted,
            [v.rule for v in result.judgement.violations],
            clock=clock,
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
            if batches is not None:
                update = batches.take(k, update)
            ops = as_pending(update.ops, visible) if review else update.ops
            applied = applier.apply(ops, units)
            outcome.refused = [r.line() for r in [*update.refused, *applied.refused]]
            if applied.paths:
                subject, body = commit_message(
                    name, k, task.id, fb.text, update, applied, persona=persona
                )
                trailers = [
                    (EPISODE, str(k)),
                    (RECIPE, name),
                    (TASK, task.id),
                    (OPS, format_ops((op.op, op.id) for op in applied.applied)),
                    (PERSONA, persona),
                    (STREAM, sid),
                    (KIND, "train"),
                    (CLOCK, str(clock)),
                ]
                if generation is not None:
                    trailers.append((GENERATION, str(generation)))
                seen_now = (result.record.skills_injected, result.record.skills_held_out)
                if batches is None and failed is not None:  # a count commit follows
                    passed = result.record.task_success
                    if seen_now[0] or seen_now[1] or not passed:
                        trailers.append((SKILLS_SEEN, seen_trailer(seen_now, passed)))
                outcome.commit = store.commit(applied.paths, subject, body=body, trailers=trailers)
                outcome.ops = _counts(applied)
            elif outcome.refused:
                outcome.refusal_record = _record_refusals(
                    store, recorded, name, persona, sid, k, clock, task.id, fb.text, update,
                    applied, generation,
                )  # fmt: skip
            applier.done()
        elif batches is not None:  # skills.near_misses: a pass after retries may teach too
            batches.near_miss(k, task, result, updater_llm, derive_seed(sid, k, "update"))
        seen = (result.record.skills_injected, result.record.skills_held_out)
        # The scoreboard counts an episode only when its task failed before (evolve.skills._failed).
        counts, failed_now = stratum(failed, task.id, seen, result.record.task_success)
        if batches is not None:
            batches.counts.extend(counts)  # counted in the batch's own commit
            ended = batches.end_episode(k, total, clock)
            if ended is not None:
                done = batches.results[-1]
                outcome.commit = ended
                outcome.ops = dict(done.summary)
                outcome.batch, outcome.batch_episodes = done.batch, list(done.episodes)
            if batch_end(ws, k, total):  # then retire what is confidently harmful
                score_episodes(ws, [], k, name, persona, sid, clock, generation)
        elif counts or failed_now:
            # The skills scoreboard: count the episode, retire what is confidently harmful.
            score_episodes(ws, counts, k, name, persona, sid, clock, generation, failed)
        logged = result.record.model_copy(
            update={"commit": outcome.commit, "refused": outcome.refused, "episode": k}
        )
        with log_path.open("a", encoding="utf-8") as handle:
            handle.write(canonical_json(logged.model_dump(mode="json")) + "\n")
        report.outcomes.append(outcome)
        if past is not None and isinstance(env, RecordsHistory):
            # Kept on the side ref: a stream resumed in a new process replays it (_histref).
            record = env.history_record(task, persona, result.trace.calls)
            past.save(store, k, record)
            history = env.history_with(history, record)
        else:
            history = env.advance_history(history, task, persona, k)
        if progress:
            progress(k + 1 - start, total - start)
    report.duration_s = time.perf_counter() - started
    return report
