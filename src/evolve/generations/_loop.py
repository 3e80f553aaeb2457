"""`evolve evolve`: gated generations.

A generation starts from a clean base commit, adds a batch of training episodes (memory
commits) and a reflector step (a prompt commit), then the gate decides on evidence that holds
no holdout score. A rejected generation is reset to its base. Generations are bounded.
`--dry-run` runs in a temporary shared clone and leaves the workspace exactly as it was.

A generation is a transaction (`evolve.txn`): its base is journaled before it starts; an
exception, SIGINT, SIGTERM/SIGHUP or the time limit resets it to the base and records it as
`rejected (error: ...)`; a SIGKILL is finished by the next writer.

The judged tree is the scored tree: each commit is scored in a temporary export of exactly that
commit (never the live working tree), and the protected files (the commit's tree, the disk and
the index flags) are checked at the base, before the candidate is tested and scored, after it
was scored and right before the verdict is applied.

What is judged is what is committed: every export and read is of the objects as stored (no
replace ref, graft, attribute, filter or textconv: `GitStore.export_committed`), and the
protected files each copy held (the scored copies and the workspace tests' copy, hashed in the
copy) must be the blobs committed at the base. A workspace whose git set-up could make git
show other files (`evolve.gate.git_setup`) is refused in one sentence before a generation
starts, unless the user passes `--trust-git-config`.
"""

from __future__ import annotations

import re
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import FrameType
from typing import NoReturn

from evolve._faults import fault
from evolve._format import _limits as limits
from evolve._io import derive_seed
from evolve._signals import Terminated as Terminated  # re-exported: callers catch it here
from evolve._signals import signals_held, signals_raise
from evolve.applier import guidance_of, plan_prompt_changes
from evolve.envs import Environment, Split
from evolve.errors import EvolveError, WriteFailed, write_failure
from evolve.evaluate import SplitReport, open_env, run_split
from evolve.executors import SPAWNING, choose_executor, executor_session
from evolve.gate import (
    Gate,
    GateEvidence,
    PairedGain,
    ProtectedState,
    Verdict,
    cost_cap_problem,
    export_tree,
    git_setup,
    loaded_problem,
    paired_gain,
    problems_reason,
    prompt_sizes,
    protected_state,
    protection_reason,
    run_workspace_tests,
    setup_sentence,
    temp_copy,
)
from evolve.generations._records import (
    ChangeRecord,
    GainRecord,
    GenerationRecord,
    RoleUsageRecord,
    load_records,
    save_record,
    score_record,
)
from evolve.history import refresh_commit_graph
from evolve.llm import LLM, make_role_llm
from evolve.llm._cost import Rate, find_rate
from evolve.llm._meter import Meter, RoleUsage, current_meter, difference, metering
from evolve.reflector import Reflector as Reflector  # explicit: tests substitute it
from evolve.store import GENERATION, KIND, GitStore
from evolve.train import last_episode, stream_id, train
from evolve.txn import (
    GenerationTransaction,
    WriteInterrupted,
    joined,
    last_used_number,
    lock,
    writer,
)
from evolve.workspace import Workspace

Progress = Callable[[str], None]


@dataclass
class EvolveResult:
    records: list[GenerationRecord] = field(default_factory=list)
    dry_run: bool = False
    diffs: dict[int, str] = field(default_factory=dict)  # dry run: each generation's proposal


@dataclass
class _Models:
    agent: LLM
    updater: LLM
    reflector: LLM


_signals_raise = signals_raise  # the generation's names for them (evolve._signals)
_signals_held = signals_held


class GenerationInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a generation, which was rolled back; the message says so."""


class GenerationTimeout(BaseException):
    """The generation ran past its time limit."""

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        self.seconds = seconds


_ALARM_AGAIN = 1.0  # seconds between the time limit's alarms once it has passed


@contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise GenerationTimeout(seconds)

    old = signal.signal(signal.SIGALRM, on_alarm)
    # Again every second after the limit: what a handler raises inside a `__del__` or a
    # finalizer the garbage collector runs is swallowed (printed as "Exception ignored"), and
    # a one-shot alarm that landed there would let the generation run on without a limit.
    signal.setitimer(signal.ITIMER_REAL, seconds, _ALARM_AGAIN)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def _sentence(text: str, limit: int = 240) -> str:
    """`text` as one printable line: no control characters, no lone surrogates, bounded."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    text = " ".join(_CONTROL.sub(" ", text).split()).rstrip(".")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_error(exc: BaseException, phase: str) -> str:
    """One sentence saying how a generation ended in an error (without the `error: ` prefix)."""
    if isinstance(exc, KeyboardInterrupt):
        return f"interrupted by SIGINT (Ctrl-C) during {phase}"
    if isinstance(exc, Terminated):
        return f"stopped by {exc.name} during {phase}"
    if isinstance(exc, GenerationTimeout):
        return f"ran past its time limit of {exc.seconds:g} seconds during {phase}"
    said = write_failure(exc)
    if said is not None:  # a full disk, a read-only folder: what to do, not an errno
        return f"stopped during {phase}: {_sentence(said[0])} ({said[1]}, then rerun)"
    message = _sentence(str(exc))
    return f"{type(exc).__name__} during {phase}" + (f": {message}" if message else "")


def _failures(report: SplitReport) -> list[str]:
    """The complaint lines of the failed dev episodes (what a user said; no rule names)."""
    lines: list[str] = []
    for e in report.episodes:
        if e.failure:
            lines.append(e.failure)
        lines.extend(e.violations.values())
    return lines


class _Scorer:
    """Scores a split at a commit, once: the base of one generation is often the last one's.

    Each commit is scored in a temporary export of exactly its tree, so nothing done to the
    working tree while scoring runs (an edited evalset file, a flag hiding it) is scored.
    Episodes go through the executor seam as `evolve run`'s do (`auto`: threads for HTTP
    models at concurrency > 1). An executor whose workers are other processes (`process`,
    `ray`) rebuilds the configured agent model by name (`by_name`); otherwise the live model
    object scores.
    """

    def __init__(
        self,
        ws: Workspace,
        llm: LLM,
        runs: int,
        *,
        executor: str = "auto",
        concurrency: int | None = None,
        by_name: bool = False,
    ) -> None:
        self.ws, self.llm, self.runs = ws, llm, runs
        self.executor, self.concurrency = executor, concurrency or ws.config.run.concurrency
        self.spawning = by_name and (
            choose_executor(executor, llm.name, self.concurrency, can_spawn=True) in SPAWNING
        )
        self.cache: dict[tuple[str, str], SplitReport] = {}
        # The protected files each scored copy held after scoring: (commit, split) -> path ->
        # blob id, hashed in the copy (the loop compares them with the base's committed ones).
        self.loaded: dict[tuple[str, str], dict[str, str]] = {}
        self.fault_step: str | None = None  # the fault seam's step while a copy exists

    def __call__(self, split: Split, commit: str) -> SplitReport:
        key = (commit, split)
        if key not in self.cache:
            with temp_copy("score") as tmp:
                root = tmp / "ws"
                root.mkdir()
                export_tree(self.ws.store, commit, root)
                if self.fault_step:
                    fault(self.fault_step)
                snapshot = Workspace(root, config=self.ws.config)
                self.cache[key] = run_split(
                    snapshot,
                    split,
                    llm=None if self.spawning else self.llm,
                    runs=self.runs,
                    concurrency=self.concurrency,
                    executor=self.executor,
                    log=False,
                )
                self.loaded[key] = self.ws.store.exported_ids(root, self.ws.config.protected)
        return self.cache[key]

    def problem(self, base: ProtectedState, commit: str) -> str | None:
        """Why a scored copy of `commit` did not hold the base's committed protected files
        (None when every copy scored so far did)."""
        for split in ("dev", "holdout"):
            loaded = self.loaded.get((commit, split))
            if loaded is not None:
                found = loaded_problem(base, loaded, f"the {split} scoring's copy of {commit[:10]}")
                if found:
                    return found
        return None


def _per_episode(total: float, report: SplitReport) -> float:
    return total / len(report.episodes) if report.episodes else 0.0


def _tree(store: GitStore, commit: str) -> str:
    return store.committed_tree(commit)


def _names(paths: Sequence[str], limit: int = 5) -> str:
    return ", ".join(paths[:limit]) + (
        f" and {len(paths) - limit} more" if len(paths) > limit else ""
    )


def _moved(store: GitStore, candidate: str, when: str) -> str | None:
    """Why the workspace is no longer exactly the candidate (None when it is)."""
    head = store.head()
    if head != candidate:
        return f"HEAD moved {when} (from {candidate[:10]} to {(head or 'nothing')[:10]})"
    dirty = store.dirty_paths()
    if dirty:
        return f"the working tree changed {when} ({_names(dirty)})"
    return None


@dataclass(frozen=True)
class _Request:
    """What one `evolve` call asks for (the options that travel to every generation)."""

    count: int
    dry_run: bool
    gate: Gate
    models: _Models | None  # None: built from evolve.yaml's roles
    say: Progress
    timeout: float | None = None
    executor: str = "auto"
    concurrency: int | None = None
    trust_git_config: bool = False


@dataclass(frozen=True)
class _Loop:
    """What every generation of one run shares: the workspace it writes (the clone in a dry
    run), its models and scorer, and the gate."""

    ws: Workspace
    models: _Models
    scorer: _Scorer
    gate: Gate
    say: Progress
    dry_run: bool
    trust_git_config: bool = False


@dataclass
class _Base:
    """The generation's base: its protected state and its scores."""

    commit: str
    state: ProtectedState
    dev: SplitReport
    holdout: SplitReport


@dataclass
class _Candidate:
    """The candidate as it was checked, tested and scored (the base's scores until then)."""

    commit: str
    tree: str
    protected_hash: str
    dev: SplitReport
    holdout: SplitReport
    problem: str | None = None  # why the protected files or the tree cannot be trusted
    tests_ok: bool = True
    tests_out: str = ""
    scored: bool = False
    scored_tree: str = ""
    sizes: dict[str, int] = field(default_factory=dict)


class _Generation:
    """One generation, phase by phase; each phase is noted in the journal, so the record of
    one that ends in an error names it. The phases: score the base, propose (training
    episodes, the reflector), check, test and score the candidate, let the gate decide (and
    confirm right before its verdict is applied), record."""

    def __init__(self, loop: _Loop, gtx: GenerationTransaction, stream_end: int | None) -> None:
        self.loop, self.gtx, self.stream_end = loop, gtx, stream_end
        self.ws, self.store, self.cfg = loop.ws, loop.ws.store, loop.ws.config
        self.protected = tuple(self.cfg.protected)
        self.number = gtx.number
        self.changes: list[ChangeRecord] = []

    def _state(self, rev: str) -> ProtectedState:
        return protected_state(
            self.store, rev, self.protected, trust_git_config=self.loop.trust_git_config
        )

    def run(self) -> GenerationRecord:
        s0 = self._state(self.gtx.base)
        if s0.problems:
            return self._unjudged(s0)
        base = self._score_base(s0)
        if self.cfg.gate.train_episodes > 0:
            self._train()
        self._reflect(base.dev)
        cand = self._candidate(base)
        if cand.commit != base.commit and cand.problem is None:
            self._test_and_score(base, cand)
        gain = paired_gain(
            base.dev.per_task(), cand.dev.per_task(), samples=self.cfg.gate.bootstrap_samples,
            confidence=self.cfg.gate.confidence,
            seed=derive_seed(self.cfg.gate.seed, self.number, "bootstrap"),
        )  # fmt: skip
        verdict = self._decide(base, cand, gain)
        return self._record(base, cand, gain, verdict)

    def _score_base(self, s0: ProtectedState) -> _Base:
        base = self.gtx.base
        self.gtx.phase("base scoring")
        self.loop.say(f"generation {self.number}: scoring the base {base[:10]} on dev and holdout")
        scorer = self.loop.scorer
        return _Base(base, s0, scorer("dev", base), scorer("holdout", base))

    def _train(self) -> None:
        """Training episodes: the generation's memory commits."""
        cfg, number = self.cfg, self.number
        sid = stream_id(cfg.persona, cfg.train.recipe, cfg.train.seed, cfg.train.feedback)
        last = last_episode(self.ws, sid)
        start = max(0 if last is None else last + 1, self.stream_end or 0)
        self.stream_end = start + cfg.gate.train_episodes
        self.gtx.phase("training", stream_end=self.stream_end)
        self.loop.say(f"generation {number}: training episodes {start}..{self.stream_end - 1}")
        models = self.loop.models
        report = train(
            self.ws, episodes=self.stream_end, start_at=start, generation=number,
            take_lock=False, agent_llm=models.agent, updater_llm=models.updater,
        )  # fmt: skip
        for outcome in report.outcomes:
            if outcome.commit:
                subject = self.store.commit_info(outcome.commit).subject
                self.changes.append(
                    ChangeRecord(kind="memory", commit=outcome.commit, subject=subject)
                )
        fault("batch")

    def _reflect(self, dev_base: SplitReport) -> None:
        """The reflector's proposal from the failed dev episodes: the generation's prompt
        commit (its refusals go in the commit and the record)."""
        cfg, number, ws = self.cfg, self.number, self.ws
        self.gtx.phase("the reflector")
        failed = sum(not e.accepted for e in dev_base.episodes)
        self.loop.say(f"generation {number}: reflecting on {failed} failed dev episodes")
        system_md = ws.root / "prompts" / "system.md"
        system = limits.read_text(ws.root, "prompts/system.md") if system_md.is_file() else ""
        proposal = Reflector(self.loop.models.reflector).propose(
            _failures(dev_base),
            guidance_of(system),
            parameters={k: (v.min, v.max) for k, v in cfg.parameters.items()},
            max_chars=cfg.gate.max_prompt_chars,
            seed=derive_seed(cfg.gate.seed, number, "reflector"),
        )
        planned = plan_prompt_changes(
            ws, guidance=proposal.guidance, edits=proposal.edits, parameters=proposal.parameters,
            max_chars=cfg.gate.max_prompt_chars,
        )  # fmt: skip
        refused = self.gtx.refused
        refused += [r.line() for r in [*proposal.refused, *planned.refused]]
        if planned.files:
            self._commit_prompts(planned.files, refused)

    def _commit_prompts(self, files: Mapping[str, bytes | None], refused: list[str]) -> None:
        tx = joined(self.ws)
        paths = tx.write(files, allowed=("prompts/",))
        fault("reflector")
        body = "\n".join(["Proposed by the reflector from the failed dev episodes.", "", *refused])
        sha = tx.commit(
            paths, f"reflector: generation {self.number}: {', '.join(paths)}", body=body,
            trailers=[(KIND, "reflector"), (GENERATION, str(self.number))],
        )  # fmt: skip
        if sha:
            subject = self.store.commit_info(sha).subject
            self.changes.append(ChangeRecord(kind="prompt", commit=sha, subject=subject))

    def _candidate(self, base: _Base) -> _Candidate:
        """HEAD now, checked: still the candidate, its protected files as at the base."""
        store = self.store
        candidate = store.head()
        assert candidate is not None
        tree = _tree(store, candidate)
        s1 = self._state(candidate)
        problem = (
            self.loop.scorer.problem(base.state, base.commit)
            or protection_reason(store, base.state, s1, "during the generation")
            or _moved(store, candidate, "during the generation")
        )
        return _Candidate(
            candidate, tree, s1.tree, base.dev, base.holdout, problem=problem, scored_tree=tree
        )

    def _test_and_score(self, base: _Base, cand: _Candidate) -> None:
        """The workspace tests (against the base's protected files), then the candidate's
        scores, then the protected files checked again."""
        store, number, candidate = self.store, self.number, cand.commit
        self.gtx.phase("workspace tests")
        self.loop.say(
            f"generation {number}: workspace tests, then scoring the candidate {candidate[:10]}"
        )
        cand.tests_ok, cand.tests_out = run_workspace_tests(
            store, base.commit, candidate, self.protected
        )
        self.gtx.phase("scoring")
        cand.scored_tree = _tree(store, candidate)
        scorer = self.loop.scorer
        cand.dev = scorer("dev", candidate)
        scorer.fault_step = "scoring"
        try:
            cand.holdout = scorer("holdout", candidate)
        finally:
            scorer.fault_step = None
        cand.scored = True
        s2 = self._state(candidate)
        cand.problem = (
            scorer.problem(base.state, candidate)
            or protection_reason(store, base.state, s2, "during scoring")
            or _moved(store, candidate, "during scoring")
        )

    def _evidence(self, base: _Base, cand: _Candidate, gain: PairedGain) -> GateEvidence:
        gate, dev_base, dev = self.cfg.gate, base.dev, cand.dev
        cand.sizes = prompt_sizes(self.store, cand.commit)
        return GateEvidence(
            base_protected_hash=base.state.tree,
            candidate_protected_hash=cand.protected_hash,
            protected_dirty=(),
            tests_passed=cand.tests_ok,
            tests_output=cand.tests_out,
            dev_gain=gain,
            min_gain=gate.min_gain,
            prompt_chars=sum(cand.sizes.values()),
            max_prompt_chars=gate.max_prompt_chars,
            base_tokens=dev_base.tokens_per_episode,
            candidate_tokens=dev.tokens_per_episode,
            max_token_factor=gate.max_token_factor,
            base_cost=_per_episode(dev_base.cost, dev_base),
            candidate_cost=_per_episode(dev.cost, dev),
            max_cost=gate.max_cost,
            changed=cand.commit != base.commit,
            protected_problem=cand.problem,
            scored_tree=cand.scored_tree,
            candidate_tree=cand.tree,
        )

    def _decide(self, base: _Base, cand: _Candidate, gain: PairedGain) -> Verdict:
        """The gate decides on the evidence, and confirms right before its verdict is applied
        that the workspace is still exactly what was judged; a rejection resets to the base."""
        evidence = self._evidence(base, cand, gain)
        self.gtx.phase("the verdict")
        gate = self.loop.gate
        verdict = gate.decide(evidence)
        if verdict.accepted:
            s3 = self._state(cand.commit)
            when = "before the verdict was applied"
            late = protection_reason(self.store, base.state, s3, when) or _moved(
                self.store, cand.commit, when
            )
            verdict = gate.confirm(verdict, late)
        fault("verdict")
        if not verdict.accepted:
            self.gtx.rollback()
        return verdict

    def _record(
        self, base: _Base, cand: _Candidate, gain: PairedGain, verdict: Verdict
    ) -> GenerationRecord:
        final = self.store.head()
        assert final is not None
        judged = cand.scored or cand.commit == base.commit  # the candidate's scores are its own
        return GenerationRecord(
            number=self.number,
            started=self.gtx.journal.started,
            finished=datetime.now(UTC).isoformat(timespec="seconds"),
            dry_run=self.loop.dry_run,
            base=base.commit,
            candidate=cand.commit,
            final=final,
            changes=self.changes,
            refused=self.gtx.refused,
            dev_base=score_record(base.dev.summary()),
            dev=score_record(cand.dev.summary()) if judged else None,
            holdout_base=score_record(base.holdout.summary()),
            holdout=score_record(cand.holdout.summary()) if judged else None,
            dev_gain=GainRecord(
                mean=gain.mean, low=gain.low, high=gain.high, tasks=gain.tasks, pairs=gain.pairs
            ),
            prompt_sizes=cand.sizes,
            protected_hash=base.state.tree,
            protected_hash_candidate=cand.protected_hash,
            tests_passed=cand.tests_ok,
            tests_output=cand.tests_out[-2000:],
            stream_end=self.stream_end,
            verdict="accepted" if verdict.accepted else "rejected",
            reason=verdict.reason,
            scored_tree=cand.scored_tree if cand.scored else None,
        )

    def _unjudged(self, s0: ProtectedState) -> GenerationRecord:
        """The record of a generation that could not be judged at its base (nothing ran)."""
        gtx, journal = self.gtx, self.gtx.journal
        now = datetime.now(UTC).isoformat(timespec="seconds")
        gtx.rollback()
        verdict = self.loop.gate.cannot_judge(problems_reason(s0) or "")
        return GenerationRecord(
            number=journal.number,
            started=journal.started,
            finished=now,
            dry_run=self.loop.dry_run,
            base=journal.base,
            candidate=journal.base,
            final=self.store.head() or journal.base,
            protected_hash=s0.tree,
            protected_hash_candidate=s0.tree,
            tests_passed=False,
            stream_end=journal.stream_end,
            verdict="accepted" if verdict.accepted else "rejected",
            reason=verdict.reason,
        )


def _models(ws: Workspace, env: Environment, models: _Models | None) -> _Models:
    """The models the request named, else the roles of evolve.yaml; refused when
    `gate.max_cost` cannot be checked for the agent model."""
    cfg = ws.config
    if models is None:
        models = _Models(
            agent=make_role_llm(cfg, "agent", env=env),
            updater=make_role_llm(cfg, "updater", env=env),
            reflector=make_role_llm(cfg, "reflector", env=env),
        )
    meter = current_meter()
    if meter is not None:  # models handed in are counted too
        models = _Models(
            agent=meter.wrap(models.agent, "agent"),
            updater=meter.wrap(models.updater, "updater"),
            reflector=meter.wrap(models.reflector, "reflector"),
        )
    prices = {k: Rate(p.input, p.output) for k, p in cfg.prices.items()}
    unpriced = cost_cap_problem(
        cfg.gate.max_cost, models.agent.name, find_rate(models.agent.name, prices) is not None
    )
    if unpriced:
        raise EvolveError(unpriced)
    return models


def _open_loop(ws: Workspace, request: _Request) -> _Loop:
    env = open_env(ws)
    _check_splits(env)
    models = _models(ws, env, request.models)
    scorer = _Scorer(
        ws, models.agent, ws.config.gate.runs, executor=request.executor,
        concurrency=request.concurrency, by_name=request.models is None,
    )  # fmt: skip
    return _Loop(
        ws, models, scorer, request.gate, request.say, request.dry_run, request.trust_git_config
    )


def _run(
    ws: Workspace,
    request: _Request,
    first: int,
    stream_end: int | None,
    diffs: dict[int, str] | None = None,
) -> list[GenerationRecord]:
    """Run generations `first`.. (`request.count` of them) under the caller's lock."""
    with metering() as meter:  # every role's tokens, per generation (evolve.llm._meter)
        loop = _open_loop(ws, request)
        return _generations(loop, request, first, stream_end, meter, diffs)


def _generations(
    loop: _Loop,
    request: _Request,
    first: int,
    stream_end: int | None,
    meter: Meter,
    diffs: dict[int, str] | None,
) -> list[GenerationRecord]:
    ws = loop.ws
    records = []
    for number in range(first, first + request.count):
        before = meter.snapshot()
        record = _one(loop, request, number, stream_end, meter, before)
        stream_end = record.stream_end
        if diffs is not None and record.candidate != record.base:
            diff = ws.store.committed_diff(record.base, record.candidate, ["memory", "prompts"])
            diffs[number] = diff.removesuffix("\n")
        request.say(f"generation {number}: {record.outcome()} ({record.reason})")
        records.append(record)
    return records


def _one(
    loop: _Loop,
    request: _Request,
    number: int,
    stream_end: int | None,
    meter: Meter,
    before: Mapping[str, RoleUsage],
) -> GenerationRecord:
    """Generation `number` as a transaction: journaled base, the phases, the record; any error
    or interrupt rolls it back and records why (`_abort`)."""
    ws, store = loop.ws, loop.ws.store
    gtx: GenerationTransaction | None = None
    try:
        with _time_limit(request.timeout):
            head = store.head()
            assert head is not None
            protected_hash = store.protected_hash(head, tuple(ws.config.protected))
            gtx = joined(ws).generation(number, protected_hash, dry_run=request.dry_run)
            fault("start")
            record = _Generation(loop, gtx, stream_end).run()
            record.usage = {
                role: RoleUsageRecord(**u.as_json())
                for role, u in difference(meter.snapshot(), before).items()
            }
            gtx.phase("the record")
            fault("record")
            if not request.dry_run:
                save_record(ws, record)
    except BaseException as exc:
        if gtx is None:
            raise
        _abort(gtx, exc, request.say)
    gtx.end()
    return record


def _check_splits(env: Environment) -> None:
    """A generation is judged on dev and reported on holdout: refuse before any work (and any
    journal) when either names no task, rather than train and reflect for a certain reject."""
    empty = [split for split in ("dev", "holdout") if not env.tasks(split)]
    if empty:
        where = (
            "install tasks of more scenarios and run `evolve appworld splits`"
            if env.name == "appworld"
            else "name tasks for it in evalset/splits.yaml"
        )
        raise EvolveError(
            f"the evalset's {' and '.join(empty)} split{'s are' if len(empty) > 1 else ' is'} "
            f"empty, so no generation can be judged; {where}."
        )


def _abort(gtx: GenerationTransaction, exc: BaseException, say: Progress) -> NoReturn:
    """Roll the generation back, record it, and raise what the caller should see."""
    journal = gtx.journal
    reason = "error: " + describe_error(exc, journal.phase)
    with _signals_held():
        try:
            record = gtx.abort(reason)
        except WriteFailed:
            raise  # the reset is done; the sentence says the record waits for the next command
        except Exception as second:
            raise EvolveError(
                f"generation {journal.number} failed ({reason}) and its rollback failed too "
                f"({_sentence(str(second), 120) or type(second).__name__}); the next evolve "
                "command will finish it."
            ) from exc
    say(f"generation {journal.number}: {record.outcome()}")
    if isinstance(exc, KeyboardInterrupt):
        raise GenerationInterrupted(
            f"generation {journal.number} was interrupted during {journal.phase}; the workspace "
            f"was reset to its base {journal.base[:10]} and the generation recorded as rejected."
        ) from exc
    if isinstance(exc, Terminated):  # the command exits 128 + the signal, like Ctrl-C's 130
        raise WriteInterrupted(
            f"generation {journal.number} {reason.removeprefix('error: ')}; the workspace was "
            f"reset to its base {journal.base[:10]} and the generation recorded as rejected.",
            exc.name,
        ) from exc
    raise EvolveError(
        f"generation {journal.number} {reason.removeprefix('error: ')}; the workspace was reset "
        f"to its base {journal.base[:10]} and the generation recorded as rejected."
    ) from exc


def _check_clean(ws: Workspace) -> None:
    dirty = ws.store.dirty_paths()
    if dirty:
        shown = ", ".join(dirty[:8]) + (" ..." if len(dirty) > 8 else "")
        raise EvolveError(
            f"the workspace has uncommitted changes ({shown}); commit or discard them before evolving."
        )


def _check_git_setup(ws: Workspace, trusted: bool) -> None:
    """Refuse, in one sentence and before any work, a workspace whose git set-up can make
    git show files other than those committed (unless the user trusts it)."""
    head = ws.store.head()
    if trusted or head is None:
        return
    found = git_setup(ws.store, head, ws.config.protected)
    if found:
        raise EvolveError(setup_sentence(found))


def _check_hand_edits(ws: Workspace) -> None:
    """Read the files a person may edit (memory, the skills' records, the tuned parameters)
    as the generation will: one that cannot be read (a key given twice, not UTF-8, ...) is
    refused in one sentence before a generation starts, not recorded as a rejected one."""
    from evolve.memory import load_units
    from evolve.skills._records import check_records
    from evolve.skills._select import settings_of
    from evolve.workspace import load_parameters

    load_parameters(ws.root, ws.config)
    load_units(ws.root)
    if settings_of(ws.config).enabled or ws.config.train.recipe == "skills":
        check_records(ws.root)


def evolve(
    ws: Workspace,
    *,
    generations: int | None = None,
    dry_run: bool = False,
    gate: Gate | None = None,
    models: _Models | None = None,
    progress: Progress | None = None,
    timeout: float | None = None,
    executor: str = "auto",
    concurrency: int | None = None,
    trust_git_config: bool = False,
) -> EvolveResult:
    """Run gated generations (see the module docstring).

    `timeout` limits each generation (seconds); a generation past it is rolled back and
    recorded as `rejected (error: ...)`. `executor` and `concurrency` spread the scoring
    episodes as in `evolve run` (default: auto, `run.concurrency`). `trust_git_config` lets
    generations start in a workspace whose git set-up could make git show files other than
    those committed (`evolve.gate.git_setup`); the gate judges the committed files either way.

    Raises:
        EvolveError: more generations than `gate.max_generations`, a dirty tree, a held lock,
            not a git repository, a git set-up not trusted (one sentence naming it), or a
            generation that ended in an error (after its rollback).
        GenerationInterrupted: Ctrl-C (a KeyboardInterrupt, after the generation's rollback).
        WriteInterrupted: SIGTERM or SIGHUP (after the rollback; the message says what became
            of the generation).
    """
    cfg = ws.config.gate
    count = generations if generations is not None else cfg.generations
    if count < 1:
        raise EvolveError("--generations must be at least 1.")
    if count > cfg.max_generations:
        raise EvolveError(
            f"{count} generations exceed gate.max_generations ({cfg.max_generations}) in evolve.yaml; ask for fewer."
        )
    if timeout is not None and timeout <= 0:
        raise EvolveError("--timeout must be a positive number of seconds.")
    request = _Request(
        count, dry_run, gate or Gate(), models, progress or (lambda _msg: None), timeout,
        executor, concurrency, trust_git_config,
    )  # fmt: skip
    from evolve._format._cache import frozen

    try:
        with _signals_raise(), executor_session(executor), frozen() if dry_run else nullcontext():
            return _evolve(ws, request)
    except Terminated as exc:  # between generations: nothing was running
        raise WriteInterrupted(
            f"stopped by {exc.name} between generations; every finished generation is recorded.",
            exc.name,
        ) from None


def _evolve(ws: Workspace, request: _Request) -> EvolveResult:
    store = ws.store
    with writer(ws, "evolve evolve --dry-run" if request.dry_run else "evolve evolve"):
        _check_clean(ws)
        _check_git_setup(ws, request.trust_git_config)
        _check_hand_edits(ws)
        previous = load_records(ws)
        first = last_used_number(ws) + 1
        ends = [r.stream_end for r in previous if r.stream_end is not None]
        stream_end = max(ends) if ends else None
        if not request.dry_run:
            records = _run(ws, request, first, stream_end)
            refresh_commit_graph(store)
            return EvolveResult(records)
        return _dry_run(ws, request, first, stream_end)


def _dry_run(ws: Workspace, request: _Request, first: int, stream_end: int | None) -> EvolveResult:
    """The generations in a temporary shared clone (under its own writer lock), with each
    one's proposed diff; the workspace is left exactly as it was."""
    with temp_copy("dry-run") as tmp:
        clone = tmp / "ws"
        # The side refs too (persona timelines), so the dry run trains on the same clock.
        ws.store.shared_clone(clone, "refs/evolve/*")
        inner = Workspace(clone, ws.config)  # keeps the command line's model choices
        diffs: dict[int, str] = {}
        with lock(inner, "evolve evolve --dry-run"):  # its writes are journaled like any
            records = _run(inner, request, first, stream_end, diffs)
        return EvolveResult(records, dry_run=True, diffs=diffs)
