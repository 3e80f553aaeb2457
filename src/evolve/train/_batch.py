"""A skills run's batches, the writer's half: apply each batch's plan and commit it once.

The proposers (`evolve.updaters._skills` per failed episode, `evolve.skills._batch` per batch)
return candidates and plans; this module, on the writer's side of `evolve train`, keeps the
batch's candidates in the process until the batch ends, has the applier write the plan with
the staging area, the failed-task record and the scoreboard's counts under one journal, and
makes one commit for the batch (its subject and trailers: `evolve.skills._batch`). A batch that writes
nothing but refused something is recorded on `refs/evolve/train`, like an episode's refusals.
Candidates live in the process until their batch commits: a run stopped in the middle of a
batch leaves no file written, and on resume the stream replays the batch.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from evolve._format import _limits as limits
from evolve._format._message import STREAM
from evolve._io import derive_seed
from evolve.applier import ApplyResult
from evolve.envs import Environment, Task
from evolve.episode import EpisodeResult
from evolve.history import clip
from evolve.llm import LLM, make_role_llm
from evolve.memory import GLOBAL_SCOPE, MemoryUnit, UnitReader
from evolve.ops import Refusal
from evolve.review import as_pending
from evolve.skills._batch import (
    BATCH,
    BATCH_KIND,
    CONSOLIDATE_KIND,
    EPISODES,
    propose_batch,
    propose_sleep,
    summary_of,
)
from evolve.skills._failed import failed_files
from evolve.skills._plan import BatchPlan, Maker
from evolve.skills._reflect import Candidate, apps_of, reflect
from evolve.skills._scoreboard import count_ops_after, strata_after
from evolve.skills._staging import STAGING_PATH, dump_staging, parse_staging
from evolve.store import EPISODE, GENERATION, KIND, OPS, PERSONA, RECIPE, TASK, format_ops
from evolve.train._trainref import CLOCK, record_refusals, recorded_refusals, refusal_path
from evolve.txn import joined
from evolve.updaters import Update, summarize_actions
from evolve.updaters._skills import SkillsUpdate
from evolve.workspace import Workspace


@dataclass
class BatchResult:
    batch: int
    episodes: list[int]
    commit: str | None = None
    plan: BatchPlan | None = None
    consolidation: str | None = None
    refusal_record: str | None = None
    summary: dict[str, int] = field(default_factory=dict)  # what the subject line counts


@dataclass
class SkillsBatches:
    """The batch state of one `evolve train --recipe skills` run (in-process only)."""

    ws: Workspace
    stream: str
    persona: str
    evolver: LLM
    tools: tuple[str, ...]
    review: bool = False
    generation: int | None = None
    clock_trailer: tuple[str, str] | None = None
    candidates: list[Candidate] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    episodes: list[int] = field(default_factory=list)
    # the skills scoreboard (evolve.skills._scoreboard): the batch's episodes' (injected,
    # held out, passed), counted in the batch's own commit
    counts: list[tuple[list[str], list[str], bool, str, bool]] = field(default_factory=list)
    # the training episodes that failed each task so far (evolve.skills._failed), written
    # with the batch's commit
    failed: dict[str, int] | None = None
    results: list[BatchResult] = field(default_factory=list)
    turns_seen: list[int] = field(default_factory=list)

    @property
    def config(self) -> Any:
        return self.ws.config.skills

    def take(self, episode: int, update: Update) -> Update:
        """Keep a failed episode's candidate and refusals for the batch; the episode itself
        writes nothing (an empty update)."""
        if isinstance(update, SkillsUpdate) and update.candidate is not None:
            cand = update.candidate
            cand.ref = f"c{len(self.candidates) + 1}"
            self.candidates.append(cand)
        self.refused += [
            r.model_copy(update={"what": f"episode {episode}: {r.what}"}) for r in update.refused
        ]
        return Update(notes=list(update.notes))

    def near_miss(
        self, episode: int, task: Task, result: EpisodeResult, llm: LLM, seed: int
    ) -> None:
        """`skills.near_misses`: an accepted episode that passed only after a retry, or with
        more than twice the median turns of this run's accepted episodes so far, is reflected
        on too (the verifier's words say which)."""
        if not self.config.near_misses:
            return
        turns, attempt = len(result.record.turns), result.record.attempt
        median = statistics.median(self.turns_seen) if self.turns_seen else None
        self.turns_seen.append(turns)
        if attempt > 1:
            why = f"The task passed, but only on attempt {attempt}: the first attempts failed."
        elif median is not None and turns > 2 * median:
            why = f"The task passed, but took {turns} turns (the median is {median:g})."
        else:
            return
        found = reflect(
            llm,
            ref="c?",
            episode=episode,
            task_id=task.id,
            instruction=task.instruction,
            actions=summarize_actions(result.trace.calls),
            verifier=why,
            tools=self.tools,
            seed=seed,
        )
        self.take(episode, SkillsUpdate(refused=found.refused, candidate=found.candidate))

    def end_episode(self, episode: int, total: int, clock: int | None = None) -> str | None:
        """After each episode: at a batch's end (or the run's), evolve and commit it; the
        batch's commit, if it made one."""
        self.episodes.append(episode)
        size = self.config.batch_size
        if (episode + 1) % size != 0 and episode + 1 < total:
            return None
        self.clock_trailer = (CLOCK, str(clock)) if clock is not None else None
        result = self._commit_batch(episode // size)
        every = self.config.consolidate_every
        if every and (episode // size + 1) % every == 0:
            result.consolidation = self._consolidate(episode // size, episode)
        self.candidates, self.refused, self.episodes, self.counts = [], [], [], []
        self.results.append(result)
        return result.commit

    # --- the batch commit ----------------------------------------------------------------

    def _units(self) -> list[MemoryUnit]:
        return UnitReader(self.ws.root).load()

    def _staging(self) -> tuple[str | None, Any]:
        full = self.ws.resolve(STAGING_PATH)
        raw = limits.read_text(self.ws.root, STAGING_PATH) if full.is_file() else None
        return raw, parse_staging(raw)

    def _maker(self, batch: int, episode: int) -> Maker:
        return Maker(
            stream=self.stream,
            batch=episode,  # ids depend on the batch's last episode: unique within a stream
            episode=episode,
            now=datetime.now(UTC).isoformat(timespec="seconds"),
            scope=GLOBAL_SCOPE,
            status="pending" if self.review else "active",
        )

    def _commit_batch(self, batch: int) -> BatchResult:
        episodes = list(self.episodes)
        last = episodes[-1]
        result = BatchResult(batch, episodes)
        failed = failed_files(self.ws.root, self.failed) if self.failed is not None else {}
        if not self.candidates and not self.refused and not self.counts and not failed:
            return result
        cfg = self.config
        units = self._units()
        raw, staging = self._staging()
        refused: list[Refusal] = list(self.refused)
        plan = propose_batch(
            self.evolver,
            units,
            self.candidates,
            staging,
            caps=cfg.caps,
            seed=derive_seed(self.stream, last, "evolve"),
            maker=self._maker(batch, last),
            promote_min_topics=cfg.promote_min_topics,
            staging_threshold=cfg.staging_threshold,
            topics=apps_of(self.tools),
            refused=refused,
        )
        result.plan = plan
        if self.review:  # new skills and changes wait for `evolve review approve`
            plan.ops = as_pending(plan.ops, units)
        tx = joined(self.ws)  # the training stream's writer lock
        text = dump_staging(plan.staging)
        files = {STAGING_PATH: text.encode("utf-8") if text else None}
        if (raw or "") == text:
            files = {}
        files.update(failed)
        counted = count_ops_after(plan.ops, units, self.counts)  # scoreboard counters
        files.update(strata_after(self.ws.root, plan.ops, units, self.counts))  # per task
        applied = tx.apply([*plan.ops, *counted], units, scope=GLOBAL_SCOPE, extra_files=files)
        all_refused = [*refused, *plan.refused, *applied.refused]
        subject = self._subject(batch, episodes, plan, applied)
        body = self._body(batch, episodes, plan, applied, all_refused)
        trailers = self._trailers(episodes, plan, BATCH_KIND, batch)
        if applied.paths:
            result.commit = tx.commit(applied.paths, subject, body=body, trailers=trailers)
            result.summary = summary_of(plan) or {"count": len(counted)}
        elif all_refused:
            result.refusal_record = self._record(last, subject, body, trailers)
        tx.end()
        return result

    def _consolidate(self, batch: int, episode: int) -> str | None:
        units = self._units()
        refused: list[Refusal] = []
        plan = propose_sleep(
            self.evolver,
            units,
            caps=self.config.caps,
            seed=derive_seed(self.stream, episode, "sleep"),
            maker=self._maker(batch, episode),
            topics=apps_of(self.tools),
            refused=refused,
        )
        if self.review:
            plan.ops = as_pending(plan.ops, units)
        tx = joined(self.ws)  # the training stream's writer lock
        applied = tx.apply(plan.ops, units, scope=GLOBAL_SCOPE)
        commit = None
        if applied.paths:
            counts = _counts(applied)
            shown = ", ".join(f"{k} {v}" for k, v in counts.items())
            subject = f"skills · {self.persona} · sleep after batch {batch}: {shown}"
            lines = ["Sleep pass (no new candidates): merge, dedup, cut.", "", "Actions:"]
            lines += [f"- {v.verdict} {v.target}: {v.why}" for v in plan.verdicts]
            lines += ["", "Operations:"]
            lines += [f"- {op.op} {op.id}: {clip(op.unit.text, 160)}" for op in applied.applied]
            refusals = [*refused, *plan.refused, *applied.refused]
            if refusals:
                lines += ["", "Refused:", *[f"- {r.line()}" for r in refusals]]
            trailers = [
                (EPISODE, str(episode)),
                (RECIPE, "skills"),
                (OPS, format_ops((v.verdict.lower(), v.target or v.ref) for v in plan.verdicts)),
                (PERSONA, self.persona),
                (STREAM, self.stream),
                (KIND, CONSOLIDATE_KIND),
                (BATCH, str(batch)),
            ]
            if self.generation is not None:
                trailers.append((GENERATION, str(self.generation)))
            commit = tx.commit(applied.paths, subject, body="\n".join(lines), trailers=trailers)
        tx.end()
        return commit

    def _subject(
        self, batch: int, episodes: list[int], plan: BatchPlan, applied: ApplyResult
    ) -> str:
        shown = ", ".join(f"{k} {n}" for k, n in summary_of(plan).items()) or "no changes"
        span = f"{episodes[0]}-{episodes[-1]}" if len(episodes) > 1 else str(episodes[0])
        return f"skills · {self.persona} · batch {batch} (episodes {span}): {shown}"

    def _body(
        self,
        batch: int,
        episodes: list[int],
        plan: BatchPlan,
        applied: ApplyResult,
        refused: list[Refusal],
    ) -> str:
        failed = len(self.candidates)
        lines = [
            f"Batch {batch}: episodes {', '.join(map(str, episodes))}; {failed} candidate(s).",
            "",
        ]
        if plan.verdicts:
            lines.append("Candidates:")
            for v in plan.verdicts:
                c = v.candidate
                target = f" -> {v.target}" if v.target else ""
                if c is None:
                    continue
                lines.append(
                    f"- {c.ref} (episode {c.episode}, {c.task_id}, topics/{c.topic}): "
                    f"{v.verdict}{target}: {clip(c.lesson, 200)}"
                )
                lines.append(f"  trigger: {clip(c.trigger, 160)}")
                lines.append(f"  verifier: {clip(c.evidence, 200)}")
                lines.append(f"  shape: {v.shape}; why: {clip(v.why, 200)}")
        if plan.promoted:
            lines += ["", "Promoted to the general shelf:"]
            lines += [f"- {shape} -> {ident}" for shape, ident in plan.promoted]
        if applied.applied:
            lines += ["", "Operations:"]
            lines += [f"- {op.op} {op.id}: {clip(op.unit.text, 160)}" for op in applied.applied]
        if refused:
            lines += ["", "Refused:", *[f"- {clip(r.line(), 400)}" for r in refused]]
        if plan.notes:
            lines += ["", "Notes:", *[f"- {n}" for n in plan.notes]]
        return "\n".join(lines)

    def _trailers(
        self, episodes: list[int], plan: BatchPlan, kind: str, batch: int
    ) -> list[tuple[str, str]]:
        tasks = sorted({c.task_id for c in self.candidates})
        trailers = [
            (EPISODE, str(episodes[-1])),
            (EPISODES, " ".join(map(str, episodes))),
            (RECIPE, "skills"),
            (TASK, " ".join(tasks) or "-"),
            (OPS, format_ops(plan.trailer_ops())),
            (PERSONA, self.persona),
            (STREAM, self.stream),
            (KIND, kind),
            (BATCH, str(batch)),
        ]
        if self.clock_trailer is not None:
            trailers.append(self.clock_trailer)
        if self.generation is not None:
            trailers.append((GENERATION, str(self.generation)))
        return trailers

    def _record(
        self, episode: int, subject: str, body: str, trailers: list[tuple[str, str]]
    ) -> str | None:
        store = self.ws.store
        base = store.head()
        if base is None:
            return None
        path = refusal_path(self.stream, episode, base)
        if path in recorded_refusals(store, self.stream):
            return None  # a resumed stream replays this batch; it is on record already
        return record_refusals(store, path, subject, body, trailers)


def _counts(applied: ApplyResult) -> dict[str, int]:
    out: dict[str, int] = {}
    for op in applied.applied:
        out[op.op] = out.get(op.op, 0) + 1
    return out


def skills_batches(
    ws: Workspace,
    recipe: str,
    stream: str,
    persona: str,
    env: Environment,
    review: bool,
    generation: int | None,
    evolver: LLM | None = None,
) -> SkillsBatches | None:
    """The batch state of a `skills` run (None for any other recipe)."""
    if recipe != "skills":
        return None
    return SkillsBatches(
        ws,
        stream,
        persona,
        evolver or make_role_llm(ws.config, "evolver", env=env),
        tuple(env.tools()),
        review=review,
        generation=generation,
    )
