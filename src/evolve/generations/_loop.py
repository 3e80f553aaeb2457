"""`evolve evolve`: gated generations (DESIGN.md §7, seed 002).

A generation starts from a clean base commit, adds a batch of training episodes (memory
commits) and a reflector step (a prompt commit), then the gate decides on evidence that holds
no holdout score. A rejected generation is reset to its base. Generations are bounded.
`--dry-run` runs in a temporary shared clone and leaves the workspace exactly as it was.

A generation is a transaction (see `_journal`): its base is journaled before it starts; an
exception, SIGINT, SIGTERM/SIGHUP or the time limit resets it to the base and records it as
`rejected (error: ...)`; a SIGKILL is finished by the next writer.

The judged tree is the scored tree: each commit is scored in a temporary export of exactly that
commit (never the live working tree), and the protected files (the commit's tree, the disk and
the index flags) are checked at the base, before the candidate is tested and scored, after it
was scored and right before the verdict is applied.
"""

from __future__ import annotations

import re
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import FrameType
from typing import NoReturn

from evolve._faults import fault
from evolve._io import derive_seed
from evolve._signals import Terminated as Terminated  # re-exported: callers catch it here
from evolve._signals import signals_held, signals_raise
from evolve.applier import guidance_of, journal_end, plan_prompt_changes, write_files
from evolve.envs import Environment, Split
from evolve.errors import EvolveError
from evolve.evaluate import SplitReport, open_env, run_split
from evolve.executors import SPAWNING, choose_executor, executor_session
from evolve.gate import (
    Gate,
    GateEvidence,
    ProtectedState,
    Verdict,
    cost_cap_problem,
    export_tree,
    paired_gain,
    problems_reason,
    protected_state,
    protection_reason,
    run_workspace_tests,
    temp_copy,
)
from evolve.generations._journal import (
    GenerationJournal,
    abort,
    begin,
    end_journal,
    last_used_number,
    rollback,
    set_phase,
)
from evolve.generations._records import (
    ChangeRecord,
    GainRecord,
    GenerationRecord,
    load_records,
    save_record,
    score_record,
)
from evolve.history import refresh_commit_graph
from evolve.llm import LLM, make_role_llm
from evolve.llm._cost import Rate, find_rate
from evolve.recovery import WriteInterrupted, writer
from evolve.reflector import Reflector as Reflector  # explicit: tests substitute it
from evolve.store import GENERATION, KIND, GitStore
from evolve.train import last_episode, stream_id, train
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


@contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise GenerationTimeout(seconds)

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
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
        return self.cache[key]


def _per_episode(total: float, report: SplitReport) -> float:
    return total / len(report.episodes) if report.episodes else 0.0


def _tree(store: GitStore, commit: str) -> str:
    return str(store.repo.git.rev_parse(f"{commit}^{{tree}}")).strip()


def _prompt_sizes(store: GitStore, commit: str) -> dict[str, int]:
    files = store.read_tree_files(commit, "prompts")
    return {
        path: len(data.decode("utf-8", "replace"))
        for path, data in sorted(files.items())
        if path.endswith(".md")
    }


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


@dataclass
class _Txn:
    """The running generation: its journal and what an error record needs to say."""

    ws: Workspace
    journal: GenerationJournal
    refused: list[str] = field(default_factory=list)

    def phase(self, name: str, **changes: object) -> None:
        set_phase(self.ws.store, self.journal, name, **changes)


def _generation(
    ws: Workspace,
    env: Environment,
    number: int,
    models: _Models,
    scorer: _Scorer,
    gate: Gate,
    stream_end: int | None,
    dry_run: bool,
    say: Progress,
    txn: _Txn,
) -> GenerationRecord:
    cfg = ws.config
    store = ws.store
    protected = tuple(cfg.protected)
    base = txn.journal.base
    started = txn.journal.started
    s0 = protected_state(store, base, protected)
    base_hash = s0.tree
    if s0.problems:
        return _unjudged(txn, s0, dry_run)
    txn.phase("base scoring")
    say(f"generation {number}: scoring the base {base[:10]} on dev and holdout")
    dev_base, hold_base = scorer("dev", base), scorer("holdout", base)
    changes: list[ChangeRecord] = []
    refused = txn.refused

    if cfg.gate.train_episodes > 0:
        sid = stream_id(cfg.persona, cfg.train.recipe, cfg.train.seed, cfg.train.feedback)
        last = last_episode(ws, sid)
        start = max(0 if last is None else last + 1, stream_end or 0)
        stream_end = start + cfg.gate.train_episodes
        txn.phase("training", stream_end=stream_end)
        say(f"generation {number}: training episodes {start}..{stream_end - 1}")
        report = train(
            ws, episodes=stream_end, start_at=start, generation=number,
            take_lock=False, agent_llm=models.agent, updater_llm=models.updater,
        )  # fmt: skip
        for outcome in report.outcomes:
            if outcome.commit:
                changes.append(
                    ChangeRecord(
                        kind="memory",
                        commit=outcome.commit,
                        subject=store.commit_info(outcome.commit).subject,
                    )
                )
        fault("batch")

    txn.phase("the reflector")
    say(
        f"generation {number}: reflecting on {sum(not e.accepted for e in dev_base.episodes)} failed dev episodes"
    )
    system = (
        (ws.root / "prompts" / "system.md").read_text(encoding="utf-8")
        if (ws.root / "prompts" / "system.md").is_file()
        else ""
    )
    proposal = Reflector(models.reflector).propose(
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
    refused += [r.line() for r in [*proposal.refused, *planned.refused]]
    if planned.files:
        paths = write_files(ws, planned.files, allowed=("prompts/",))
        fault("reflector")
        body = "\n".join(["Proposed by the reflector from the failed dev episodes.", "", *refused])
        sha = store.commit(
            paths, f"reflector: generation {number}: {', '.join(paths)}", body=body,
            trailers=[(KIND, "reflector"), (GENERATION, str(number))],
        )  # fmt: skip
        journal_end(store)
        if sha:
            changes.append(
                ChangeRecord(kind="prompt", commit=sha, subject=store.commit_info(sha).subject)
            )

    candidate = store.head()
    assert candidate is not None
    changed = candidate != base
    cand_tree = _tree(store, candidate)
    s1 = protected_state(store, candidate, protected)
    cand_hash = s1.tree
    problem = protection_reason(store, s0, s1, "during the generation") or _moved(
        store, candidate, "during the generation"
    )
    scored_tree = cand_tree
    tests_ok, tests_out, dev, holdout = True, "", dev_base, hold_base
    scored = False
    if changed and problem is None:
        txn.phase("workspace tests")
        say(f"generation {number}: workspace tests, then scoring the candidate {candidate[:10]}")
        tests_ok, tests_out = run_workspace_tests(store, base, candidate, protected)
        txn.phase("scoring")
        scored_tree = _tree(store, candidate)
        dev = scorer("dev", candidate)
        scorer.fault_step = "scoring"
        try:
            holdout = scorer("holdout", candidate)
        finally:
            scorer.fault_step = None
        scored = True
        s2 = protected_state(store, candidate, protected)
        problem = protection_reason(store, s0, s2, "during scoring") or _moved(
            store, candidate, "during scoring"
        )
    gain = paired_gain(
        dev_base.per_task(), dev.per_task(), samples=cfg.gate.bootstrap_samples,
        confidence=cfg.gate.confidence, seed=derive_seed(cfg.gate.seed, number, "bootstrap"),
    )  # fmt: skip
    sizes = _prompt_sizes(store, candidate)
    evidence = GateEvidence(
        base_protected_hash=base_hash,
        candidate_protected_hash=cand_hash,
        protected_dirty=(),
        tests_passed=tests_ok,
        tests_output=tests_out,
        dev_gain=gain,
        min_gain=cfg.gate.min_gain,
        prompt_chars=sum(sizes.values()),
        max_prompt_chars=cfg.gate.max_prompt_chars,
        base_tokens=dev_base.tokens_per_episode,
        candidate_tokens=dev.tokens_per_episode,
        max_token_factor=cfg.gate.max_token_factor,
        base_cost=_per_episode(dev_base.cost, dev_base),
        candidate_cost=_per_episode(dev.cost, dev),
        max_cost=cfg.gate.max_cost,
        changed=changed,
        protected_problem=problem,
        scored_tree=scored_tree,
        candidate_tree=cand_tree,
    )
    txn.phase("the verdict")
    verdict = gate.decide(evidence)
    if verdict.accepted:
        # Right before the verdict is applied: still exactly what was judged?
        s3 = protected_state(store, candidate, protected)
        late = protection_reason(store, s0, s3, "before the verdict was applied") or _moved(
            store, candidate, "before the verdict was applied"
        )
        if late is not None:
            verdict = Verdict(False, late)
    fault("verdict")
    if not verdict.accepted:
        rollback(ws, txn.journal)
    final = store.head()
    assert final is not None
    return GenerationRecord(
        number=number,
        started=started,
        finished=datetime.now(UTC).isoformat(timespec="seconds"),
        dry_run=dry_run,
        base=base,
        candidate=candidate,
        final=final,
        changes=changes,
        refused=refused,
        dev_base=score_record(dev_base.summary()),
        dev=score_record(dev.summary()) if scored or not changed else None,
        holdout_base=score_record(hold_base.summary()),
        holdout=score_record(holdout.summary()) if scored or not changed else None,
        dev_gain=GainRecord(
            mean=gain.mean, low=gain.low, high=gain.high, tasks=gain.tasks, pairs=gain.pairs
        ),
        prompt_sizes=sizes,
        protected_hash=base_hash,
        protected_hash_candidate=cand_hash,
        tests_passed=tests_ok,
        tests_output=tests_out[-2000:],
        stream_end=stream_end,
        verdict="accepted" if verdict.accepted else "rejected",
        reason=verdict.reason,
        scored_tree=scored_tree if scored else None,
    )


def _unjudged(txn: _Txn, s0: ProtectedState, dry_run: bool) -> GenerationRecord:
    """The record of a generation that could not be judged at its base (nothing ran)."""
    journal = txn.journal
    now = datetime.now(UTC).isoformat(timespec="seconds")
    rollback(txn.ws, journal)
    return GenerationRecord(
        number=journal.number,
        started=journal.started,
        finished=now,
        dry_run=dry_run,
        base=journal.base,
        candidate=journal.base,
        final=txn.ws.store.head() or journal.base,
        protected_hash=s0.tree,
        protected_hash_candidate=s0.tree,
        tests_passed=False,
        stream_end=journal.stream_end,
        verdict="rejected",
        reason=f"the generation cannot be judged: {problems_reason(s0)}",
    )


def _run(
    ws: Workspace,
    count: int,
    first: int,
    stream_end: int | None,
    *,
    dry_run: bool,
    gate: Gate,
    models: _Models | None,
    say: Progress,
    diffs: dict[int, str] | None = None,
    timeout: float | None = None,
    executor: str = "auto",
    concurrency: int | None = None,
) -> list[GenerationRecord]:
    env = open_env(ws)
    _check_splits(env)
    cfg = ws.config
    by_name = models is None
    if models is None:
        models = _Models(
            agent=make_role_llm(cfg, "agent", env=env),
            updater=make_role_llm(cfg, "updater", env=env),
            reflector=make_role_llm(cfg, "reflector", env=env),
        )
    prices = {k: Rate(p.input, p.output) for k, p in cfg.prices.items()}
    unpriced = cost_cap_problem(
        cfg.gate.max_cost, models.agent.name, find_rate(models.agent.name, prices) is not None
    )
    if unpriced:
        raise EvolveError(unpriced)
    scorer = _Scorer(
        ws, models.agent, cfg.gate.runs, executor=executor, concurrency=concurrency,
        by_name=by_name,
    )  # fmt: skip
    store = ws.store
    records = []
    for number in range(first, first + count):
        txn: _Txn | None = None
        try:
            with _time_limit(timeout):
                head = store.head()
                assert head is not None
                journal = begin(
                    ws, number, store.protected_hash(head, tuple(cfg.protected)), dry_run=dry_run
                )
                txn = _Txn(ws, journal)
                fault("start")
                record = _generation(
                    ws, env, number, models, scorer, gate, stream_end, dry_run, say, txn
                )
                txn.phase("the record")
                fault("record")
                if not dry_run:
                    save_record(ws, record)
        except BaseException as exc:
            if txn is None:
                raise
            _abort(ws, txn, exc, say)
        end_journal(store)
        stream_end = record.stream_end
        if diffs is not None and record.candidate != record.base:
            diffs[number] = store.repo.git.diff(
                record.base, record.candidate, "--", "memory", "prompts"
            )
        say(f"generation {number}: {record.outcome()} ({record.reason})")
        records.append(record)
    return records


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


def _abort(ws: Workspace, txn: _Txn, exc: BaseException, say: Progress) -> NoReturn:
    """Roll the generation back, record it, and raise what the caller should see."""
    journal = txn.journal
    reason = "error: " + describe_error(exc, journal.phase)
    with _signals_held():
        try:
            record = abort(ws, journal, reason, txn.refused)
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
) -> EvolveResult:
    """Run gated generations (see the module docstring).

    `timeout` limits each generation (seconds); a generation past it is rolled back and
    recorded as `rejected (error: ...)`. `executor` and `concurrency` spread the scoring
    episodes as in `evolve run` (default: auto, `run.concurrency`).

    Raises:
        EvolveError: more generations than `gate.max_generations`, a dirty tree, a held lock,
            not a git repository, or a generation that ended in an error (after its rollback).
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
    say = progress or (lambda _msg: None)
    gate = gate or Gate()
    try:
        with _signals_raise(), executor_session(executor):
            return _evolve(ws, count, dry_run, gate, models, say, timeout, executor, concurrency)
    except Terminated as exc:  # between generations: nothing was running
        raise WriteInterrupted(
            f"stopped by {exc.name} between generations; every finished generation is recorded.",
            exc.name,
        ) from None


def _evolve(
    ws: Workspace,
    count: int,
    dry_run: bool,
    gate: Gate,
    models: _Models | None,
    say: Progress,
    timeout: float | None,
    executor: str = "auto",
    concurrency: int | None = None,
) -> EvolveResult:
    store = ws.store
    with writer(ws, "evolve evolve --dry-run" if dry_run else "evolve evolve"):
        _check_clean(ws)
        _check_hand_edits(ws)
        previous = load_records(ws)
        first = last_used_number(ws) + 1
        ends = [r.stream_end for r in previous if r.stream_end is not None]
        stream_end = max(ends) if ends else None
        if not dry_run:
            records = _run(
                ws, count, first, stream_end, dry_run=False, gate=gate, models=models, say=say,
                timeout=timeout, executor=executor, concurrency=concurrency,
            )  # fmt: skip
            refresh_commit_graph(store)
            return EvolveResult(records)
        with temp_copy("dry-run") as tmp:
            clone = tmp / "ws"
            subprocess.run(
                ["git", "clone", "--quiet", "--shared", str(ws.root), str(clone)],
                check=True,
                capture_output=True,
            )
            # The side refs too (persona timelines), so the dry run trains on the same clock.
            subprocess.run(
                ["git", "fetch", "--quiet", "origin", "refs/evolve/*:refs/evolve/*"],
                cwd=clone,
                check=True,
                capture_output=True,
            )
            inner = Workspace(clone, ws.config)  # keeps the command line's model choices
            diffs: dict[int, str] = {}
            records = _run(
                inner, count, first, stream_end, dry_run=True, gate=gate, models=models,
                say=say, diffs=diffs, timeout=timeout, executor=executor,
                concurrency=concurrency,
            )  # fmt: skip
            return EvolveResult(records, dry_run=True, diffs=diffs)
