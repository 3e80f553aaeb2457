"""`evolve run`: score a split. Never touches `memory/` or `prompts/`.

Episode logs go to `generations/runs/<stamp>-<split>-<persona>/` (ignored by git, so a run
never makes the tree dirty); the folder appears whole or not at all.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from evolve._io import canonical_json, derive_seed
from evolve.envs import Environment, Split, Task, make_env
from evolve.episode import EpisodeRecord, EpisodeSetup, run_episode
from evolve.errors import UnknownName
from evolve.evaluate._report import SplitReport
from evolve.evaluate._setup import InjectMode, episode_setup
from evolve.llm import LLM, make_role_llm, with_models
from evolve.workspace import Workspace

Progress = Callable[[int, int], None]


def episode_seed(base: int, task_id: str, run: int) -> int:
    return derive_seed(base, task_id, run)


def open_env(ws: Workspace) -> Environment:
    return make_env(ws.config.environment, ws.evalset_dir)


def score_tasks(
    env: Environment,
    llm: LLM,
    tasks: list[Task],
    setup: EpisodeSetup,
    *,
    runs: int,
    base_seed: int,
    concurrency: int = 1,
    progress: Progress | None = None,
) -> list[EpisodeRecord]:
    """Run every task `runs` times (evaluation: the persona as it is now, fresh history)."""
    jobs = [(task, run) for run in range(runs) for task in tasks]
    history = env.initial_history(setup.persona)
    done = 0

    def one(job: tuple[Task, int]) -> EpisodeRecord:
        task, run = job
        seed = episode_seed(base_seed, task.id, run)
        return run_episode(env, llm, task, setup, history=history, seed=seed, run=run).record

    records: list[EpisodeRecord] = []
    if concurrency <= 1:
        for job in jobs:
            records.append(one(job))
            done += 1
            if progress:
                progress(done, len(jobs))
    else:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            for record in pool.map(one, jobs):
                records.append(record)
                done += 1
                if progress:
                    progress(done, len(jobs))
    return records


def write_run_log(ws: Workspace, report: SplitReport) -> Path:
    """Write the episodes and the summary to a new folder under `generations/runs/`."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    final = ws.runs_dir / f"{stamp}-{report.split}-{report.persona}"
    ws.runs_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-run-", dir=ws.runs_dir))
    try:
        with (tmp / "episodes.jsonl").open("w", encoding="utf-8") as handle:
            for record in report.episodes:
                handle.write(canonical_json(record.model_dump(mode="json")) + "\n")
        report.log_dir = str(final.relative_to(ws.root))
        (tmp / "summary.json").write_text(
            json.dumps(report.summary(), indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def run_split(
    ws: Workspace,
    split: Split,
    *,
    model: str | None = None,
    llm: LLM | None = None,
    runs: int | None = None,
    concurrency: int | None = None,
    persona: str | None = None,
    inject: InjectMode | None = None,
    progress: Progress | None = None,
    log: bool = True,
) -> SplitReport:
    """Score `split` for `persona` and write the episode logs.

    Raises:
        UnknownName: for an unknown split, persona or model.
        ModelError: when the model cannot be reached.
    """
    cfg = ws.config
    env = open_env(ws)
    persona = persona or cfg.persona
    known = env.personas()
    if persona not in known:
        raise UnknownName(f"unknown persona {persona!r}; choose one of {', '.join(known)}.")
    tasks = env.tasks(split)
    if llm is None:
        llm = make_role_llm(with_models(cfg, agent=model), "agent", env=env)
    runs = runs or cfg.run.runs
    setup = episode_setup(ws, env, persona, inject)
    started = time.perf_counter()
    records = score_tasks(
        env,
        llm,
        tasks,
        setup,
        runs=runs,
        base_seed=cfg.run.seed,
        concurrency=concurrency or cfg.run.concurrency,
        progress=progress,
    )
    report = SplitReport(split, persona, llm.name, runs, records, time.perf_counter() - started)
    if log:
        write_run_log(ws, report)
    return report
