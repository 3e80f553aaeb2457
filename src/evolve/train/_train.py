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
episode the same stream (persona, recipe, seed, feedback tier) ran, as `refs/evolve/train`
records it (`runs/<stream>.json`, written when a call ends, by an interrupt too), or after its
last committed episode where that is later or the record does not stand on HEAD's history; no
episode is paid for twice. A crash between writing and committing is undone by the
transaction's journal before anything else runs (`evolve.txn`).

Failed episodes: a model request that fails on every try it was allowed (`models.retry`;
`evolve.llm.RequestFailed`) makes its episode a failed one, the agent's or the updater's: it
is logged with the reason, learns nothing, and the stream goes on; the report counts them.

The code reads as its parts: a :class:`TrainRequest` (the options, resolved against
`evolve.yaml`), :func:`_open_stream` (where the stream resumes and what it stands on), the
episode loop (:class:`_EpisodeLoop`: run, judge, learn, count) and the committer
(:class:`_Committer`: one commit per episode, or per skills batch, or a record of refusals).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from evolve import _confine as confined
from evolve._format._cache import EVALSET_CACHE, UNITS_CACHE
from evolve._format._message import SKILLS_SEEN
from evolve._format._message import STREAM as STREAM  # re-exported
from evolve._io import canonical_json, derive_seed
from evolve._text import printable
from evolve.agent import Agent, read_prompt_files, use_agent_path, workspace_agent
from evolve.applier import ApplyResult
from evolve.envs import Environment, Task, Tier, environments, personas_of
from evolve.episode import EpisodeResult, EpisodeSetup, Redactor, run_episode
from evolve.errors import EvolveError, ModelError, UnknownName
from evolve.evaluate import make_verifier
from evolve.evaluate._setup import command_agent_of
from evolve.harness import load_harness
from evolve.history import clip, refresh_commit_graph, tombstone_git_reverts
from evolve.llm import LLM, RequestFailed, make_role_llm
from evolve.llm._meter import Meter, RoleUsage, difference, metering, usage_json
from evolve.memory import MemoryUnit, UnitReader, in_scope, scope_for
from evolve.ops import Op
from evolve.skills._settings import settings_of
from evolve.store import (
    EPISODE,
    GENERATION,
    KIND,
    OPS,
    PERSONA,
    RECIPE,
    TASK,
    format_ops,
)
from evolve.train._histref import RecordsHistory, StreamHistory
from evolve.train._stream import (
    history_before,
    last_episodes,
    own_last_episode,
    stream_id,
    stream_tasks,
)
from evolve.train._trainref import (
    BASE,
    CLOCK,
    Timeline,
    last_run,
    record_refusals,
    record_run,
    record_stream_commits,
    recorded_refusals,
    refusal_path,
)
from evolve.txn import Transaction, joined, writer
from evolve.updaters import (
    MAX_ATTEMPTS,
    EpisodeView,
    RecipeContext,
    Update,
    get_recipe,
    render_for,
    summarize_actions,
)
from evolve.workspace import EVALSET, RUNS, Workspace, max_turns

if TYPE_CHECKING:
    from evolve.train._batch import SkillsBatches

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
    # what the episode's model requests used, per role (agent, updater, evolver, selector)
    tokens: dict[str, int] = field(default_factory=dict)
    cost: float = 0.0
    # Why the episode failed (a model request that failed on every try), or None.
    failed: str | None = None


@dataclass
class TrainReport:
    recipe: str
    persona: str
    stream: str
    start: int
    end: int
    outcomes: list[EpisodeOutcome] = field(default_factory=list)
    duration_s: float = 0.0
    usage: dict[str, RoleUsage] = field(default_factory=dict)  # per role, this whole run

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
            "failed": sum(o.failed is not None for o in self.outcomes),
            "commits": self.commits,
            "duration_s": round(self.duration_s, 3),
            "tokens": sum(u.tokens for u in self.usage.values()),
            "cost": round(sum(u.cost for u in self.usage.values()), 8),
            "usage": usage_json(self.usage),
            "outcomes": [o.__dict__ for o in self.outcomes],
        }


def last_episode(ws: Workspace, stream: str) -> int | None:
    """The last episode of `stream` that made a commit on the current branch."""
    return own_last_episode(ws.store, stream, last_episodes(ws.store).get(stream))


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
        why = f" ({op.reason})" if op.op == "evict" and op.reason else ""  # the cap, its add
        body.append(f"- {op.op} {op.id}: {clip(op.unit.text, BODY_TEXT)}{why}")
    refused = [*update.refused, *result.refused]
    if refused:
        body += ["", "Refused:", *[f"- {r.line()}" for r in refused]]
    if update.notes:
        body += ["", "Notes:", *[f"- {n}" for n in update.notes]]
    return subject, "\n".join(body)


@dataclass(frozen=True)
class TrainRequest:
    """What one `train` call asks for, resolved against `evolve.yaml`: the options that
    travel together through the stream."""

    recipe: str
    episodes: int  # the stream runs up to this episode (exclusive)
    feedback: Tier
    seed: int
    review: bool  # new units wait as `pending` for `evolve review`
    persona: str
    generation: int | None = None  # the evolve loop's generation this training is part of
    start_at: int | None = None  # the evolve loop skips a batch a rejected generation used

    @property
    def stream(self) -> str:
        return stream_id(self.persona, self.recipe, self.seed, self.feedback)

    @property
    def scope(self) -> str:
        return scope_for(self.persona)

    def trailers(self, *pairs: tuple[str, str]) -> list[tuple[str, str]]:
        """`pairs`, then `Evolve-Generation` when a generation runs this training."""
        out = list(pairs)
        if self.generation is not None:
            out.append((GENERATION, str(self.generation)))
        return out


class TrainModels(msgspec.Struct, frozen=True):
    """The recipe and the models the stream runs with."""

    recipe: Any  # the updater recipe (`evolve.updaters`): proposes with the updater model
    agent: LLM
    updater: LLM
    evolver: LLM | None = None  # the skills recipe's batch evolver (None: from evolve.yaml)
    meter: Meter | None = None  # counts every role's tokens (evolve.llm._meter)
    player: Agent | None = None  # who plays the episodes (agent/_seam.py); None: `agent`'s loop


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
    agent: Agent | None = None,
) -> TrainReport:
    """Run the training stream up to episode `episodes` (resuming after the last commit).

    `agent` plays the episodes (any `evolve.agent.Agent`, e.g. a scripted one); None: evolve's
    own function-call loop over the agent model.

    Raises:
        UnknownName: an unknown recipe or persona.
        EvolveError: `memory/` or `prompts/` has uncommitted changes, or the lock is held.
    """
    cfg = ws.config
    name = recipe or cfg.train.recipe
    recipe_impl = get_recipe(name)
    env = _open_env(ws)
    request = TrainRequest(
        recipe=name,
        episodes=episodes if episodes is not None else cfg.train.episodes,
        feedback=feedback or cfg.train.feedback,
        seed=cfg.train.seed if seed is None else seed,
        review=cfg.train.review if review is None else review,
        persona=persona or cfg.persona,
        generation=generation,
        start_at=start_at,
    )
    known = personas_of(env)  # None: one implicit user, whatever its name
    if known is not None and request.persona not in known:
        raise UnknownName(f"unknown persona {request.persona!r}; choose one of {', '.join(known)}.")
    # Every role's tokens are counted (a generation's meter, when training runs in one).
    with metering() as meter:
        before = meter.snapshot()
        models = TrainModels(
            recipe_impl,
            meter.wrap(agent_llm or make_role_llm(cfg, "agent", env=env), "agent"),
            meter.wrap(updater_llm or make_role_llm(cfg, "updater", env=env), "updater"),
            None if evolver_llm is None else meter.wrap(evolver_llm, "evolver"),
            meter,
            agent,
        )
        # Under the caller's lock (take_lock=False: a generation, an experiment arm) the
        # caller handles an interrupt; otherwise `writer` undoes the write in flight (txn).
        with writer(ws, "evolve train") if take_lock else nullcontext(joined(ws)) as tx:
            loop = _EpisodeLoop(tx, env, request, models, _open_stream(tx, env, request))
            report = loop.run(progress)
            report.usage = difference(meter.snapshot(), before)
            record_stream_commits(ws.store, report.stream, _episode_commits(report))
            if report.commits and take_lock:
                refresh_commit_graph(ws.store)
            return report


def _open_env(ws: Workspace) -> Environment:
    """`open_env(ws)`; evolve's own persona world remembers its validated evalset in `.git/`
    (as `evolve run`'s fast path does: keyed by the evalset's bytes and the validating code),
    so a training process does not parse and validate an unchanged evalset again."""
    confined.check_tree(ws.root, EVALSET)  # first, as open_env: a link out, refused by name
    if ws.config.agent.path:  # as open_env: the workspace's agent folders, importable
        use_agent_path(ws.root, ws.config.agent.path, ws.is_protected)
    factory = environments.lookup(ws.config.environment)
    from evolve.envs.persona_world import PersonaWorldEnv

    if factory is not PersonaWorldEnv:
        from evolve.evaluate import open_env  # scoring's runner: only for another environment

        return open_env(ws)
    return PersonaWorldEnv(ws.evalset_dir, remember=str(ws.store.git_dir / EVALSET_CACHE))


def _episode_commits(report: TrainReport) -> dict[int, str]:
    """{episode: its commit} of a run, for the stream's own record (`_trainref`)."""
    return {o.episode: o.commit for o in report.outcomes if o.commit}


def batch_end(ws: Workspace, k: int, total: int) -> bool:
    """Whether episode `k` ends a skills batch (as `SkillsBatches.end_episode` decides)."""
    return (k + 1) % ws.config.skills.batch_size == 0 or k + 1 >= total


Counts = list[tuple[list[str], list[str], bool, str, bool]]


def score_episodes(
    ws: Workspace,
    request: TrainRequest,
    outcomes: Counts,
    k: int,
    clock: int,
    failed: dict[str, int] | None = None,
) -> None:
    """Count training episodes on the skills scoreboard (see evolve.skills._scoreboard) and
    retire what is then confidently harmful; the commits carry episode `k`, like the
    episode or batch commit (`outcomes` empty: a skills batch counted them already)."""
    from evolve.skills._failed import failed_files
    from evolve.train._scoreboard import settle  # looked up per call (a test stops it midway)

    settle(
        ws,
        outcomes,
        episodes=str(k),
        recipe=request.recipe,
        confidence=settings_of(ws.config).retire_confidence,
        extra_trailers=request.trailers(
            (PERSONA, request.persona), (STREAM, request.stream), (CLOCK, str(clock))
        ),
        extra_files=failed_files(ws.root, failed) if failed is not None else None,
    )


# An episode's scoreboard outcome (`SKILLS_SEEN`), carried by its memory commit when a count
# commit follows (`pass|fail <injected ids>|- <held-out ids>|-`): a stream stopped between the
# two replays the count on resume (`_rescore`), since the memory commit already moved the
# resume point.
def seen_trailer(seen: tuple[list[str], list[str]], passed: bool) -> str:
    return " ".join(
        ["pass" if passed else "fail", ",".join(seen[0]) or "-", ",".join(seen[1]) or "-"]
    )


def _rescore(
    ws: Workspace, sid: str, last: int | None, failed: dict[str, int] | None
) -> Counts | None:
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
) -> tuple[Counts, bool]:
    """The episode's scoreboard outcome (none unless skills were selected), flagged with
    whether its task failed in an earlier episode (the pooled counters count only those; the
    per-task record every one, evolve.skills._strata), and whether its task failed now; then
    `failed` counts the episode (every failing episode is counted, so a revert of one commit
    takes back only its own: evolve.skills._failed). Without a record (skills off) nothing
    counts."""
    if failed is None:
        return [], False
    before = task_id in failed
    counts: Counts = [(*seen, passed, task_id, before)] if seen[0] or seen[1] else []
    if not passed:
        from evolve.skills._failed import fail

        fail(failed, task_id)
    return counts, not passed


# --- the stream before its next episode ------------------------------------------------


class _Stream(msgspec.Struct):
    """Where the stream resumes and what it stands on (read from the workspace)."""

    sid: str
    last: int | None  # the stream's last committed episode
    start: int
    tasks: list[Task]
    past: StreamHistory | None  # the history side ref (environments that record it)
    history: Any
    reader: UnitReader
    timeline: Timeline
    first: list[MemoryUnit] | None = None  # the read made at the start, for the first episode


def _open_stream(tx: Transaction, env: Environment, request: TrainRequest) -> _Stream:
    """Finish a write a dead writer left, refuse uncommitted memory, answer plain `git
    revert`s, and read where the stream resumes (its clock saved before any episode runs)."""
    ws, store = tx.ws, tx.store
    tx.recover_write()
    _check_committed(tx)
    tombstone_git_reverts(ws, take_lock=False)  # a plain `git revert` gets its tombstones
    sid = request.stream
    last = last_episode(ws, sid)
    ran = last_run(store, sid)
    start = 1 + max(-1 if last is None else last, -1 if ran is None else ran)
    if request.start_at is not None:
        start = max(start, request.start_at)
    tasks = stream_tasks(env, request.seed, max(request.episodes, start))
    past = StreamHistory.load(store, sid) if isinstance(env, RecordsHistory) else None
    history = history_before(env, tasks, request.persona, start, past)
    reader, first = _check_memory(ws, request)
    timeline = Timeline.load(store, request.persona)
    added = timeline.extend(sid, start, request.episodes)
    if added:
        # Saved before the episodes run: a resumed stream replays the same clock values.
        timeline.save(store, added)
    return _Stream(sid, last, start, tasks, past, history, reader, timeline, first)


def _check_committed(tx: Transaction) -> None:
    """The episodes' memory commits must stand on committed memory and prompts: what the
    agent was given is then exactly what HEAD records."""
    folders = ("memory", "prompts")
    if not tx.store.dirty_paths(folders):  # the common case: one `git status` for both
        return
    for folder in folders:
        dirty = tx.store.dirty_paths([folder])
        if dirty:
            shown = ", ".join(dirty[:5]) + (" ..." if len(dirty) > 5 else "")
            raise EvolveError(
                f"{folder}/ has uncommitted changes ({shown}); commit or discard them first."
            )


def _check_memory(ws: Workspace, request: TrainRequest) -> tuple[UnitReader, list[MemoryUnit]]:
    """Memory a person edited so that it cannot be read (a key given twice, ...) is refused
    before anything is written (the timeline, a run log), not after episodes ran. Returns the
    reader and its read, which the first episode uses unless something wrote memory since."""
    # what an earlier process read of each unchanged file is remembered in .git/
    reader = UnitReader(ws.root, remember=str(ws.store.git_dir / UNITS_CACHE))
    loaded = reader.load()
    if settings_of(ws.config).enabled or request.recipe == "skills":
        from evolve.skills._records import check_records
        from evolve.skills._select import skills_of

        check_records(ws.root)
        skills_of(in_scope(loaded, request.scope))  # two skills with one id: refused
    return reader, loaded


# --- one episode -------------------------------------------------------------------------


class _Episode(msgspec.Struct):
    """One episode as the loop runs it: its task, the memory it was given, what happened."""

    k: int
    task: Task
    clock: int  # the persona's own clock (drift is keyed to it)
    units: list[MemoryUnit]
    visible: list[MemoryUnit]
    result: EpisodeResult
    outcome: EpisodeOutcome

    @property
    def seen(self) -> tuple[list[str], list[str]]:
        return (self.result.record.skills_injected, self.result.record.skills_held_out)


class _Committer:
    """Commits what an episode learned (one commit), or records its refusals when it
    committed nothing; a skills run commits per batch (`SkillsBatches`) instead."""

    def __init__(self, tx: Transaction, request: TrainRequest, sid: str) -> None:
        self.tx, self.request, self.sid = tx, request, sid
        self.applier = tx.applier(request.scope)
        self.recorded = recorded_refusals(tx.store, sid)

    def commit(
        self, ep: _Episode, complaint: str, update: Update, applied: ApplyResult, *, owes: bool
    ) -> str | None:
        """The episode's memory commit; `owes`: a scoreboard count commit follows, so the
        episode's outcome rides along (`SKILLS_SEEN`) for a resume to replay."""
        r = self.request
        subject, body = commit_message(
            r.recipe, ep.k, ep.task.id, complaint, update, applied, persona=r.persona
        )
        trailers = r.trailers(
            (EPISODE, str(ep.k)),
            (RECIPE, r.recipe),
            (TASK, ep.task.id),
            (OPS, format_ops((op.op, op.id) for op in applied.applied)),
            (PERSONA, r.persona),
            (STREAM, self.sid),
            (KIND, "train"),
            (CLOCK, str(ep.clock)),
        )
        passed = ep.result.record.task_success
        if owes and (ep.seen[0] or ep.seen[1] or not passed):
            trailers.append((SKILLS_SEEN, seen_trailer(ep.seen, passed)))
        return self.tx.commit(applied.paths, subject, body=body, trailers=trailers)

    def record_refusals(
        self, ep: _Episode, complaint: str, update: Update, applied: ApplyResult
    ) -> str | None:
        """Put the refusals of an episode that committed nothing on `refs/evolve/train`,
        once."""
        store, r = self.tx.store, self.request
        base = store.head()
        assert base is not None
        path = refusal_path(self.sid, ep.k, base)
        if path in self.recorded:
            return None  # a resumed stream replays this episode; it is on record already
        refused = [*update.refused, *applied.refused]
        subject = commit_subject(r.recipe, r.persona, ep.k, ep.task.id, {"refused": len(refused)})
        body = ["Complaint:", *[f"  {line}" for line in complaint.splitlines()], "", "Refused:"]
        body += [f"- {clip(x.line(), 400)}" for x in refused]
        if update.notes:
            body += ["", "Notes:", *[f"- {n}" for n in update.notes]]
        trailers = r.trailers(
            (EPISODE, str(ep.k)),
            (RECIPE, r.recipe),
            (TASK, ep.task.id),
            (PERSONA, r.persona),
            (STREAM, self.sid),
            (CLOCK, str(ep.clock)),
            (BASE, base),
        )
        self.recorded.add(path)
        return record_refusals(store, path, subject, "\n".join(body), trailers)

    def end_batch(self, batches: SkillsBatches, ep: _Episode) -> None:
        """A skills batch that ends with this episode commits (its commit is the episode's)."""
        ended = batches.end_episode(ep.k, self.request.episodes, ep.clock)
        if ended is not None:
            done = batches.results[-1]
            ep.outcome.commit = ended
            ep.outcome.ops = dict(done.summary)
            ep.outcome.batch, ep.outcome.batch_episodes = done.batch, list(done.episodes)


class _EpisodeLoop:
    """Run, judge, learn and count each episode of the stream, in order."""

    def __init__(
        self,
        tx: Transaction,
        env: Environment,
        request: TrainRequest,
        models: TrainModels,
        stream: _Stream,
    ) -> None:
        ws = tx.ws
        self.ws, self.env, self.request, self.models, self.stream = ws, env, request, models, stream
        self.committer = _Committer(tx, request, stream.sid)
        self.prompt_files = tuple(read_prompt_files(ws.prompts_dir))
        # The agent the workspace names plays each episode (None: evolve's own, over the model).
        self.agent = workspace_agent(ws.config.agent.agent_name, models.agent, ws.root)
        self.report = TrainReport(
            request.recipe, request.persona, stream.sid, stream.start, request.episodes
        )
        self.started = time.perf_counter()
        self.redactor = Redactor.from_settings(ws.config.redact.values, ws.config.redact.env)
        self.log_rel = f"{RUNS}/train-{stream.sid.replace('/', '-')}.jsonl"
        self.log_path = ws.root / self.log_rel
        # Confined (evolve._confine): a committed link as generations/, generations/runs/ or
        # the log itself is refused by name before the first episode, never appended through.
        confined.make_folders(ws.root, RUNS)
        confined.check(ws.root, self.log_rel)
        # skills: failed episodes feed a batch; the batch, not the episode, commits.
        self.batches: SkillsBatches | None = None
        if request.recipe == "skills":  # the batch writer (and the skill library) loads here
            from evolve.train._batch import skills_batches

            self.batches = skills_batches(
                ws, request.recipe, stream.sid, request.persona, env, request.review,
                request.generation, models.evolver,
            )  # fmt: skip
        self.failed: dict[str, int] | None = None
        if settings_of(ws.config).enabled or self.batches:  # the scoreboard's record of tasks
            from evolve.skills._failed import load_failed

            self.failed = load_failed(ws.root)
        if self.batches is not None:
            self.batches.failed = self.failed

    def run(self, progress: Progress | None) -> TrainReport:
        stream, total = self.stream, self.request.episodes
        owed = None if self.batches is not None else _rescore(
            self.ws, stream.sid, stream.last, self.failed
        )  # fmt: skip
        if owed is not None and stream.last is not None:  # stopped between an episode and its count
            clock = stream.timeline.clock(stream.sid, stream.last)
            score_episodes(self.ws, self.request, owed, stream.last, clock, self.failed)
            stream.first = None  # the count commit wrote memory: read again
        ran = None  # the last episode run to its end in this call
        meter = self.models.meter
        try:
            for k in range(stream.start, total):
                before = meter.snapshot() if meter is not None else {}
                ep = self._run(k)
                ep.outcome.failed = ep.result.record.model_error
                if ep.outcome.failed is not None and ran is None and not self.report.outcomes:
                    # A model that never answered in this call: a setup mistake, not bad luck.
                    raise ModelError(ep.outcome.failed)
                if ep.outcome.failed is not None:
                    pass  # the model failed the episode: nothing to learn, nothing to count
                elif not ep.outcome.accepted:
                    self._learn(ep)
                elif self.batches is not None:  # near_misses: a pass after retries may teach
                    self.batches.near_miss(
                        k, ep.task, ep.result, self.models.updater,
                        derive_seed(stream.sid, k, "update"),
                    )  # fmt: skip
                if ep.outcome.failed is None:
                    self._count(ep)
                if meter is not None:
                    used = difference(meter.snapshot(), before)
                    ep.outcome.tokens = {role: u.tokens for role, u in used.items()}
                    ep.outcome.cost = round(sum(u.cost for u in used.values()), 8)
                self._log(ep)
                self.report.outcomes.append(ep.outcome)
                self._advance(ep)
                if self.batches is None or batch_end(self.ws, k, total):
                    ran = k  # a skills batch's episodes count as run once the batch committed
                if progress:
                    progress(k + 1 - stream.start, total - stream.start)
        except BaseException:
            if ran is not None:
                with suppress(Exception):  # the error on its way out is the one to report
                    record_run(self.ws.store, stream.sid, ran)
            raise
        if ran is not None:
            record_run(self.ws.store, stream.sid, ran)
        self.report.duration_s = time.perf_counter() - self.started
        return self.report

    def _setup(self, task: Task, visible: list[MemoryUnit]) -> EpisodeSetup:
        ws, name = self.ws, self.request.recipe
        skills = None  # the picker (and the skill library) loads only where skills are on
        if settings_of(ws.config, name).enabled:
            from evolve.skills._select import make_picker
            from evolve.skills._strata import load_strata

            skills = make_picker(
                ws.config,
                visible,  # global skills and this persona's own
                training=True,
                env=self.env,
                recipe=name,
                strata=load_strata(ws.root) if self.failed is not None else None,
                task=task.id,
            )  # the scoreboard's hold-out, balanced within the task
        return EpisodeSetup(
            prompt_files=self.prompt_files,
            memory=render_for(visible, self.request.scope, (name,)),  # what this recipe learns
            persona=self.request.persona,
            stats=ws.config.memory.stats,
            max_turns=max_turns(ws.root, ws.config),
            verifier=make_verifier(visible, (name,)),
            max_attempts=MAX_ATTEMPTS,
            redactor=self.redactor,
            # who plays: the Python API's agent, else `agent.name`'s, else `agent.command`'s, else
            # evolve's own over the model
            agent=self.models.player or self.agent or command_agent_of(ws.config.agent, ws.root),
            skills=skills,
            harness=load_harness(ws.root),  # prompts/harness.yaml, read as each episode starts
        )

    def _run(self, k: int) -> _Episode:
        stream = self.stream
        task = stream.tasks[k]
        units = stream.first if stream.first is not None else stream.reader.load()
        stream.first = None
        visible = in_scope(units, self.request.scope)
        setup = self._setup(task, visible)
        # The persona's preferences (and their scheduled drift) are read at the persona's own
        # clock, which runs across every stream the workspace trained for it.
        clock = stream.timeline.clock(stream.sid, k)
        result = run_episode(
            self.env, self.models.agent, task, setup, history=stream.history,
            seed=derive_seed(stream.sid, k), episode=clock,
        )  # fmt: skip
        judgement = result.judgement
        outcome = EpisodeOutcome(
            k, task.id, judgement.accepted, [v.rule for v in judgement.violations], clock=clock
        )
        return _Episode(k, task, clock, units, visible, result, outcome)

    def _learn(self, ep: _Episode) -> None:
        """A rejected episode: its complaint goes to the recipe, the applier writes what it
        proposes, and the committer commits it (or records the refusals)."""
        request, sid, k = self.request, self.stream.sid, ep.k
        fb = self.env.feedback(ep.task, ep.result.judgement, request.feedback)
        ctx = RecipeContext(
            units=ep.visible,
            scope=request.scope,
            episode=EpisodeView(
                episode=k,
                task_id=ep.task.id,
                instruction=ep.task.instruction,
                actions=summarize_actions(ep.result.trace.calls),
                complaint=fb.text,
                accepted=False,
            ),
            llm=self.models.updater,
            seed=derive_seed(sid, k, "update"),
            now=datetime.now(UTC).isoformat(timespec="seconds"),
            max_memory_chars=self.ws.config.memory.max_memory_chars,
            tools=tuple(self.env.tools()),
        )
        try:
            update = self.models.recipe.observe(ctx)
        except RequestFailed as exc:  # the updater's model failed: the episode learns nothing
            ep.outcome.failed = printable(str(exc), 300)
            return
        if self.batches is not None:
            update = self.batches.take(k, update)
        ops = update.ops
        if request.review:
            from evolve.review import as_pending  # only where ops wait for a person

            ops = as_pending(update.ops, ep.visible)
        applier = self.committer.applier
        applied = applier.apply(ops, ep.units)
        ep.outcome.refused = [r.line() for r in [*update.refused, *applied.refused]]
        if applied.paths:
            owes = self.batches is None and self.failed is not None  # a count commit follows
            ep.outcome.commit = self.committer.commit(ep, fb.text, update, applied, owes=owes)
            ep.outcome.ops = _counts(applied)
        elif ep.outcome.refused:
            ep.outcome.refusal_record = self.committer.record_refusals(ep, fb.text, update, applied)
        applier.done()

    def _count(self, ep: _Episode) -> None:
        """The skills scoreboard: count the episode (in the batch's commit, or one of its own)
        and retire what is then confidently harmful. It counts an episode only when its task
        failed before (evolve.skills._failed)."""
        counts, failed_now = stratum(
            self.failed, ep.task.id, ep.seen, ep.result.record.task_success
        )
        if self.batches is not None:
            self.batches.counts.extend(counts)  # counted in the batch's own commit
            self.committer.end_batch(self.batches, ep)
            if batch_end(self.ws, ep.k, self.request.episodes):
                score_episodes(self.ws, self.request, [], ep.k, ep.clock)
        elif counts or failed_now:
            score_episodes(self.ws, self.request, counts, ep.k, ep.clock, self.failed)

    def _log(self, ep: _Episode) -> None:
        logged = ep.result.record.model_copy(
            update={"commit": ep.outcome.commit, "refused": ep.outcome.refused, "episode": ep.k}
        )
        entry = logged.model_dump(mode="json")
        if ep.outcome.tokens:  # every role's tokens, beside the agent's own count
            entry["usage"] = {"tokens": ep.outcome.tokens, "cost": ep.outcome.cost}
        if self.request.generation is not None:  # the report tells rejected generations apart
            entry["generation"] = self.request.generation
        line = canonical_json(entry) + "\n"
        confined.append_text(self.ws.root, self.log_rel, line)  # O_NOFOLLOW, at open time

    def _advance(self, ep: _Episode) -> None:
        """The user's history after this episode (what the next one is judged against)."""
        stream, env, persona = self.stream, self.env, self.request.persona
        if stream.past is not None and isinstance(env, RecordsHistory):
            # Kept on the side ref: a stream resumed in a new process replays it (_histref).
            record = env.history_record(ep.task, persona, ep.result.trace.calls)
            stream.past.save(self.ws.store, ep.k, record)
            stream.history = env.history_with(stream.history, record)
        else:
            stream.history = env.advance_history(stream.history, ep.task, persona, ep.k)
