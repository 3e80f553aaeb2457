"""`evolve evolve`: gated generations (DESIGN.md §7, seed 002).

A generation starts from a clean base commit, adds a batch of training episodes (memory
commits) and a reflector step (a prompt commit), then the gate decides on evidence that holds
no holdout score. A rejected generation is reset to its base. Generations are bounded.
`--dry-run` runs in a temporary shared clone and leaves the workspace exactly as it was.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from evolve._io import derive_seed
from evolve.applier import guidance_of, journal_end, plan_prompt_changes, recover, write_files
from evolve.envs import Environment, Split
from evolve.errors import EvolveError
from evolve.evaluate import SplitReport, open_env, run_split
from evolve.gate import Gate, GateEvidence, paired_gain, run_workspace_tests
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
from evolve.reflector import Reflector
from evolve.store import GENERATION, KIND
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


def _prompt_sizes(ws: Workspace) -> dict[str, int]:
    return {
        p.relative_to(ws.root).as_posix(): len(p.read_text(encoding="utf-8"))
        for p in sorted(ws.prompts_dir.rglob("*.md"))
    }


def _failures(report: SplitReport) -> list[str]:
    """The complaint lines of the failed dev episodes (what a user said; no rule names)."""
    lines: list[str] = []
    for e in report.episodes:
        if e.failure:
            lines.append(e.failure)
        lines.extend(e.violations.values())
    return lines


class _Scorer:
    """Scores a split at a commit, once: the base of one generation is often the last one's."""

    def __init__(self, ws: Workspace, llm: LLM, runs: int) -> None:
        self.ws, self.llm, self.runs = ws, llm, runs
        self.cache: dict[tuple[str, str], SplitReport] = {}

    def __call__(self, split: Split, commit: str) -> SplitReport:
        key = (commit, split)
        if key not in self.cache:
            self.cache[key] = run_split(self.ws, split, llm=self.llm, runs=self.runs, log=False)
        return self.cache[key]


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
) -> GenerationRecord:
    cfg = ws.config
    store = ws.store
    protected = tuple(cfg.protected)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    base = store.head()
    assert base is not None
    base_hash = store.protected_hash(base, protected)
    say(f"generation {number}: scoring the base {base[:10]} on dev and holdout")
    dev_base, hold_base = scorer("dev", base), scorer("holdout", base)
    changes: list[ChangeRecord] = []
    refused: list[str] = []

    if cfg.gate.train_episodes > 0:
        sid = stream_id(cfg.persona, cfg.train.recipe, cfg.train.seed, cfg.train.feedback)
        last = last_episode(ws, sid)
        start = max(0 if last is None else last + 1, stream_end or 0)
        say(
            f"generation {number}: training episodes {start}..{start + cfg.gate.train_episodes - 1}"
        )
        report = train(
            ws, episodes=start + cfg.gate.train_episodes, start_at=start, generation=number,
            take_lock=False, agent_llm=models.agent, updater_llm=models.updater,
        )  # fmt: skip
        stream_end = start + cfg.gate.train_episodes
        for outcome in report.outcomes:
            if outcome.commit:
                changes.append(
                    ChangeRecord(
                        kind="memory",
                        commit=outcome.commit,
                        subject=store.commit_info(outcome.commit).subject,
                    )
                )

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
    cand_hash = store.protected_hash(candidate, protected)
    dirty_protected = tuple(store.dirty_paths([p.rstrip("/") for p in protected]))
    if changed:
        say(f"generation {number}: workspace tests, then scoring the candidate {candidate[:10]}")
        tests_ok, tests_out = run_workspace_tests(store, base, candidate, protected)
        dev, holdout = scorer("dev", candidate), scorer("holdout", candidate)
    else:
        tests_ok, tests_out, dev, holdout = True, "", dev_base, hold_base
    gain = paired_gain(
        dev_base.per_task(), dev.per_task(), samples=cfg.gate.bootstrap_samples,
        confidence=cfg.gate.confidence, seed=derive_seed(cfg.gate.seed, number, "bootstrap"),
    )  # fmt: skip
    sizes = _prompt_sizes(ws)
    evidence = GateEvidence(
        base_protected_hash=base_hash,
        candidate_protected_hash=cand_hash,
        protected_dirty=dirty_protected,
        tests_passed=tests_ok,
        tests_output=tests_out,
        dev_gain=gain,
        min_gain=cfg.gate.min_gain,
        prompt_chars=sum(sizes.values()),
        max_prompt_chars=cfg.gate.max_prompt_chars,
        base_tokens=dev_base.tokens_per_episode,
        candidate_tokens=dev.tokens_per_episode,
        max_token_factor=cfg.gate.max_token_factor,
        changed=changed,
    )
    verdict = gate.decide(evidence)
    if not verdict.accepted:
        # Also clears untracked files a generation left (the tree was clean at the start).
        store.reset_hard(base)
        store.clean_untracked()
    final = store.head()
    assert final is not None
    record = GenerationRecord(
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
        dev=score_record(dev.summary()),
        holdout_base=score_record(hold_base.summary()),
        holdout=score_record(holdout.summary()),
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
    )
    return record


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
) -> list[GenerationRecord]:
    env = open_env(ws)
    cfg = ws.config
    if models is None:
        models = _Models(
            agent=make_role_llm(cfg, "agent", env=env),
            updater=make_role_llm(cfg, "updater", env=env),
            reflector=make_role_llm(cfg, "reflector", env=env),
        )
    scorer = _Scorer(ws, models.agent, cfg.gate.runs)
    records = []
    for number in range(first, first + count):
        record = _generation(ws, env, number, models, scorer, gate, stream_end, dry_run, say)
        stream_end = record.stream_end
        if diffs is not None and record.candidate != record.base:
            diffs[number] = ws.store.repo.git.diff(
                record.base, record.candidate, "--", "memory", "prompts"
            )
        if not dry_run:
            save_record(ws, record)
        say(f"generation {number}: {record.verdict} ({record.reason})")
        records.append(record)
    return records


def _check_clean(ws: Workspace) -> None:
    dirty = ws.store.dirty_paths()
    if dirty:
        shown = ", ".join(dirty[:8]) + (" ..." if len(dirty) > 8 else "")
        raise EvolveError(
            f"the workspace has uncommitted changes ({shown}); commit or discard them before evolving."
        )


def evolve(
    ws: Workspace,
    *,
    generations: int | None = None,
    dry_run: bool = False,
    gate: Gate | None = None,
    models: _Models | None = None,
    progress: Progress | None = None,
) -> EvolveResult:
    """Run gated generations (see the module docstring).

    Raises:
        EvolveError: more generations than `gate.max_generations`, a dirty tree, a held lock,
            or not a git repository.
    """
    cfg = ws.config.gate
    count = generations if generations is not None else cfg.generations
    if count < 1:
        raise EvolveError("--generations must be at least 1.")
    if count > cfg.max_generations:
        raise EvolveError(
            f"{count} generations exceed gate.max_generations ({cfg.max_generations}) in evolve.yaml; ask for fewer."
        )
    store = ws.store
    say = progress or (lambda _msg: None)
    gate = gate or Gate()
    with ws.lock("evolve evolve --dry-run" if dry_run else "evolve evolve"):
        recover(store)
        _check_clean(ws)
        previous = load_records(ws)
        first = (previous[-1].number + 1) if previous else 1
        stream_end = previous[-1].stream_end if previous else None
        if not dry_run:
            records = _run(
                ws, count, first, stream_end, dry_run=False, gate=gate, models=models, say=say
            )
            refresh_commit_graph(store)
            return EvolveResult(records)
        tmp = Path(tempfile.mkdtemp(prefix="evolve-dry-run-"))
        try:
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
                inner,
                count,
                first,
                stream_end,
                dry_run=True,
                gate=gate,
                models=models,
                say=say,
                diffs=diffs,
            )
            return EvolveResult(records, dry_run=True, diffs=diffs)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
