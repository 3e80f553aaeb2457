"""Learning from an episode someone else's agent played: `evolve.open(path).record(...)`.

A user's own agent (any code, any model) does a task; they tell evolve what it did and what
the user said. The workspace's recipe learns from it exactly as from a training episode: its
complaint goes to the recipe, the applier writes what it proposes, and training's committer
makes one commit with the usual trailers (`Evolve-Episode`, `Evolve-Recipe`, `Evolve-Task`,
`Evolve-Ops`, `Evolve-Stream`), or records the refusals on `refs/evolve/train`. Recorded
episodes form their own stream per persona and recipe (``<persona>/<recipe>/recorded/user``),
numbered in the order they were recorded, and tick the persona's clock like any episode.

The caller holds the writer lock (:func:`learn_recorded` takes the transaction).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from evolve._io import derive_seed
from evolve._text import printable
from evolve.agent import Trace, Turn
from evolve.envs import ApiCall, Judgement, Task, Violation
from evolve.episode import EpisodeResult, Redactor
from evolve.episode._records import CallRecord, EpisodeRecord, TurnRecord
from evolve.errors import EvolveError
from evolve.history import tombstone_git_reverts
from evolve.llm import LLM, RequestFailed
from evolve.memory import in_scope, load_units
from evolve.train._trainref import Timeline, last_run, record_run
from evolve.txn import Transaction
from evolve.updaters import EpisodeView, RecipeContext, get_recipe, summarize_actions

RECORDED_FAMILY = "recorded"
# What the recipe is told of a failed episode the user said nothing about.
NO_COMPLAINT = "The task was not done."
# The longest transcript text the recipe sees (its prompt has a budget too).
MAX_ACTIONS = 8000


def recorded_stream(persona: str, recipe: str) -> str:
    """The stream id of the episodes recorded for `persona` with `recipe`."""
    return f"{persona}/{recipe}/recorded/user"


@dataclass(frozen=True)
class RecordedEpisode:
    """An episode a user's own agent played, as the recipe is to learn from it."""

    task_id: str
    instruction: str
    success: bool
    complaint: str = ""
    violations: Mapping[str, str] = field(default_factory=dict)
    calls: Sequence[ApiCall] = ()
    transcript: str = ""
    persona: str = "alex"
    model: str = "recorded"

    @property
    def accepted(self) -> bool:
        return self.success and not self.violations and not self.complaint.strip()

    def complaint_text(self) -> str:
        """What the recipe is told: the complaint, then each violation's sentence."""
        lines = [self.complaint.strip()] if self.complaint.strip() else []
        lines += [text.strip() for text in self.violations.values() if text.strip()]
        return "\n".join(lines) or NO_COMPLAINT

    def actions(self) -> str:
        """The transcript the recipe sees: the recorded calls, then the text transcript."""
        parts = [summarize_actions(self.calls)] if self.calls else []
        if self.transcript.strip():
            parts.append(self.transcript.strip())
        return printable("\n".join(parts), MAX_ACTIONS)


@dataclass
class RecordedOutcome:
    """What recording one episode did."""

    episode: int
    stream: str
    learned: bool  # the recipe was asked (the episode was not accepted)
    commit: str | None = None
    ops: dict[str, int] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    refusal_record: str | None = None
    failed: str | None = None  # the updater's model failed on every try


def _redacted(ep: RecordedEpisode, hide: Redactor) -> RecordedEpisode:
    """`ep` with secrets hidden by value in everything the recipe, a unit or a commit could
    carry (the complaint, the violations, the transcript, the calls)."""
    calls = [
        replace(
            c,
            args=hide(dict(c.args)),
            result=hide(c.result),
            error=hide.text(c.error) if c.error is not None else None,
        )
        for c in ep.calls
    ]
    return replace(
        ep,
        instruction=hide.text(ep.instruction),
        complaint=hide.text(ep.complaint),
        violations={rule: hide.text(text) for rule, text in ep.violations.items()},
        transcript=hide.text(ep.transcript),
        calls=tuple(calls),
    )


def _result(ep: RecordedEpisode, task: Task, k: int) -> EpisodeResult:
    turns = [Turn(call=c) for c in ep.calls]
    violations = tuple(Violation(rule, text, text) for rule, text in ep.violations.items())
    judgement = Judgement(
        task_success=ep.success,
        failure=None if ep.success else ep.complaint_text(),
        applicable=tuple(ep.violations),
        violations=violations,
    )
    record = EpisodeRecord(
        task_id=task.id,
        family=task.family,
        split=task.split,
        persona=ep.persona,
        run=0,
        seed=0,
        episode=k,
        model=ep.model,
        turns=[
            TurnRecord(call=CallRecord(c.tool, dict(c.args), c.ok, c.result, c.error))
            for c in ep.calls
        ],
        hit_turn_limit=False,
        final_state={},
        task_success=ep.success,
        failure=judgement.failure,
        applicable_rules=list(ep.violations),
        violations=dict(ep.violations),
        accepted=ep.accepted,
        input_tokens=0,
        output_tokens=0,
        prompt_chars=0,
        duration_s=0.0,
    )
    return EpisodeResult(record, judgement, Trace(turns=turns), "")


def learn_recorded(
    tx: Transaction,
    ep: RecordedEpisode,
    *,
    recipe: str,
    updater: LLM,
    review: bool = False,
    tools: tuple[str, ...] = (),
) -> RecordedOutcome:
    """Learn from `ep` with `recipe` (one commit, or a record of refusals), under `tx`'s lock.

    Raises:
        EvolveError: `memory/` or `prompts/` has uncommitted changes, or the recipe learns
            in batches (`skills`: train it with `evolve train`).
        UnknownName: an unknown recipe.
    """
    from evolve.review import as_pending
    from evolve.train._train import (
        EpisodeOutcome,
        TrainRequest,
        _check_committed,
        _Committer,
        _counts,
        _Episode,
        last_episode,
    )

    if recipe == "skills":
        raise EvolveError(
            "record() learns with the per-episode recipes; the skills recipe learns in "
            "batches: set train.recipe to another recipe, or train skills with `evolve train`."
        )
    recipe_impl = get_recipe(recipe)
    ws, store = tx.ws, tx.store
    ep = _redacted(ep, Redactor.from_settings(ws.config.redact.values, ws.config.redact.env))
    tx.recover_write()
    _check_committed(tx)
    tombstone_git_reverts(ws, take_lock=False)  # a plain `git revert` gets its tombstones
    sid = recorded_stream(ep.persona, recipe)
    last, ran = last_episode(ws, sid), last_run(store, sid)
    k = 1 + max(-1 if last is None else last, -1 if ran is None else ran)
    timeline = Timeline.load(store, ep.persona)
    added = timeline.extend(sid, k, k + 1)
    if added:
        timeline.save(store, added)
    clock = timeline.clock(sid, k)
    outcome = RecordedOutcome(k, sid, learned=not ep.accepted)
    if ep.accepted:
        record_run(store, sid, k)
        return outcome
    request = TrainRequest(
        recipe=recipe, episodes=k + 1, feedback="instance", seed=0, review=review,
        persona=ep.persona,
    )  # fmt: skip
    task = Task(ep.task_id, RECORDED_FAMILY, RECORDED_FAMILY, "train", ep.instruction)
    units = load_units(ws.root)
    visible = in_scope(units, request.scope)
    complaint = ep.complaint_text()
    ctx = RecipeContext(
        units=visible,
        scope=request.scope,
        episode=EpisodeView(
            episode=k,
            task_id=ep.task_id,
            instruction=ep.instruction,
            actions=ep.actions(),
            complaint=complaint,
            accepted=False,
        ),
        llm=updater,
        seed=derive_seed(sid, k, "update"),
        now=datetime.now(UTC).isoformat(timespec="seconds"),
        max_memory_chars=ws.config.memory.max_memory_chars,
        tools=tools,
    )
    try:
        update = recipe_impl.observe(ctx)
    except RequestFailed as exc:  # the updater's model failed: the episode learns nothing
        outcome.failed = printable(str(exc), 300)
        record_run(store, sid, k)
        return outcome
    committer = _Committer(tx, request, sid)
    episode = _Episode(
        k, task, clock, units, visible, _result(ep, task, k),
        EpisodeOutcome(k, ep.task_id, False, list(ep.violations), clock=clock),
    )  # fmt: skip
    ops = as_pending(update.ops, visible) if review else update.ops
    applier = committer.applier
    applied = applier.apply(ops, units)
    outcome.refused = [r.line() for r in [*update.refused, *applied.refused]]
    if applied.paths:
        outcome.commit = committer.commit(episode, complaint, update, applied, owes=False)
        outcome.ops = _counts(applied)
    elif outcome.refused:
        outcome.refusal_record = committer.record_refusals(episode, complaint, update, applied)
    applier.done()
    record_run(store, sid, k)
    return outcome
