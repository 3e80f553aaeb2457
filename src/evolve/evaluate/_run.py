"""`evolve run`: score a split. Never touches `memory/` or `prompts/`.

Episode logs go to `generations/runs/<stamp>-<split>-<persona>/` (ignored by git, so a run
never makes the tree dirty); the folder appears whole or not at all.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evolve import _confine as confined
from evolve._io import canonical_json, derive_seed
from evolve.envs import Environment, Split, Task, make_env, personas_of
from evolve.episode._run import EpisodeSetup, run_episode
from evolve.errors import ConfigError, ModelError, UnknownName
from evolve.evaluate._report import SplitReport
from evolve.executors import SPAWNING, choose_executor, get_executor
from evolve.llm import LLM, make_role_llm, with_models  # (no HTTP client imported for these)

if TYPE_CHECKING:  # the full path's modules: `evolve run`'s fast path does not import them
    from evolve.episode._records import EpisodeRecord
    from evolve.evaluate._setup import InjectMode
    from evolve.workspace import EvolveConfig, Workspace

RUNS = "generations/runs"  # evolve.workspace.RUNS
EVALSET = "evalset"  # evolve.workspace.EVALSET

Progress = Callable[[int, int], None]


def episode_seed(base: int, task_id: str, run: int) -> int:
    """The seed of run `run` of task `task_id` under evaluation seed `base`: every stochastic
    part of the episode (the model's sampling; for `sim`, its lapses and computed-value
    failures) draws from it. Run k's seed does not depend on how many runs there are, so
    run 0 of `--runs 3` is the episode `--runs 1` gives for the same seed."""
    return derive_seed(base, task_id, run)


def open_env(ws: Workspace) -> Environment:
    """The workspace's environment over its evalset. A link out of the workspace in
    `evalset/` (or `evalset/` as one) is refused by name first: the environment reads the
    evalset's files by path and knows no workspace (`evolve._confine`). The folders of
    ``agent.path`` join the import path first (`evolve.agent.use_agent_path`)."""
    confined.check_tree(ws.root, EVALSET)
    if ws.config.agent.path:
        from evolve.agent import use_agent_path

        use_agent_path(ws.root, ws.config.agent.path, ws.is_protected)
    return make_env(ws.config.environment, ws.evalset_dir)


def _token() -> str:
    import uuid  # (and `platform`): only where a worker spec is made

    return uuid.uuid4().hex


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker process needs to rebuild a run's episode by name: the workspace root,
    the configuration (with the command line's model overrides), the persona and the
    injection mode. Picklable; live objects (environment, model, verifier) are rebuilt."""

    root: str
    config: EvolveConfig
    persona: str
    inject: InjectMode | None
    base_seed: int
    token: str = field(default_factory=_token)


# One rebuilt context per worker process and spec (a pool serves one run). A Ray actor runs
# jobs on several threads, so the context is built under a lock, once.
_CONTEXTS: dict[str, tuple[Environment, LLM, EpisodeSetup, Any]] = {}
_CONTEXT_LOCK = threading.Lock()


def _context(spec: WorkerSpec) -> tuple[Environment, LLM, EpisodeSetup, Any]:
    with _CONTEXT_LOCK:
        if spec.token not in _CONTEXTS:
            from evolve.evaluate._setup import episode_setup, with_agent
            from evolve.workspace import Workspace

            ws = Workspace(Path(spec.root), config=spec.config)
            env = open_env(ws)
            llm = make_role_llm(spec.config, "agent", env=env)
            setup = with_agent(episode_setup(ws, env, spec.persona, spec.inject), ws, llm)
            _CONTEXTS.clear()
            _CONTEXTS[spec.token] = (env, llm, setup, env.initial_history(spec.persona))
        return _CONTEXTS[spec.token]


class FirstAnswer:
    """Stops a run whose model has never answered: its first failed episode (a request that
    failed on every try, `EpisodeRecord.model_error`) before any episode got through is a
    setup mistake (a wrong URL, a server not started), said in that episode's one sentence.
    Once an episode has got through, later failures are counted and the run goes on."""

    def __init__(self) -> None:
        self.seen = False
        self._lock = threading.Lock()

    def check(self, record: EpisodeRecord) -> EpisodeRecord:
        with self._lock:
            if record.model_error is None:
                self.seen = True
            elif not self.seen:
                raise ModelError(record.model_error)
        return record


_ANSWERED: dict[str, FirstAnswer] = {}  # per worker process and spec


@dataclass(frozen=True)
class SpawnedEpisode:
    """A picklable episode job for the process and ray executors: item = (task id, run)."""

    spec: WorkerSpec

    def __call__(self, item: tuple[str, int]) -> EpisodeRecord:
        task_id, run = item
        env, llm, setup, history = _context(self.spec)
        task = env.task(task_id)
        seed = episode_seed(self.spec.base_seed, task.id, run)
        record = run_episode(env, llm, task, setup, history=history, seed=seed, run=run).record
        with _CONTEXT_LOCK:
            answered = _ANSWERED.setdefault(self.spec.token, FirstAnswer())
        return answered.check(record)


def score_tasks(
    env: Environment,
    llm: LLM,
    tasks: list[Task],
    setup: EpisodeSetup,
    *,
    runs: int,
    base_seed: int,
    concurrency: int = 1,
    executor: str = "auto",
    spawn: WorkerSpec | None = None,
    progress: Progress | None = None,
) -> list[EpisodeRecord]:
    """Run every task `runs` times (evaluation: the persona as it is now, fresh history).

    `executor` names how episodes are spread (see `evolve.executors`); `auto` picks by model
    and `concurrency`. The `process` executor rebuilds each episode in a worker from `spawn`,
    so it needs one (a live model object cannot be sent to another process). Records come
    back in the order of the jobs whatever the executor.

    Raises:
        UnknownName: for an unknown executor.
        ConfigError: for `process` without a `spawn` spec.
    """
    jobs = [(task, run) for run in range(runs) for task in tasks]
    name = choose_executor(executor, llm.name, concurrency, can_spawn=spawn is not None)
    pool = get_executor(name, concurrency)

    def label(index: int) -> str:
        task, run = jobs[index]
        return f"the episode of task {task.id} (run {run})"

    if name in SPAWNING:
        if spawn is None:
            raise ConfigError(
                f"the {name} executor rebuilds the model by name in each worker and cannot "
                "take a live model object; choose --executor threads or asyncio."
            )
        items = [(task.id, run) for task, run in jobs]
        return pool.map(SpawnedEpisode(spawn), items, progress=progress, label=label)

    history = env.initial_history(setup.persona)
    answered = FirstAnswer()

    def one(job: tuple[Task, int]) -> EpisodeRecord:
        task, run = job
        seed = episode_seed(base_seed, task.id, run)
        record = run_episode(env, llm, task, setup, history=history, seed=seed, run=run).record
        return answered.check(record)

    return pool.map(one, jobs, progress=progress, label=label)


def write_run_log(ws: Workspace, report: SplitReport) -> Path:
    """Write the episodes and the summary to a new folder under `generations/runs/`."""
    return write_log(ws.root, report)


def write_log(root: Path, report: SplitReport) -> Path:
    """Write the episodes and the summary to a new folder under `root/generations/runs/`
    (the workspace at `root`)."""
    runs_dir = root / RUNS
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    final = runs_dir / f"{stamp}-{report.split}-{report.persona}"
    # Confined (evolve._confine): generations/ or generations/runs/ as a link out of the
    # workspace is refused by name, and the files are opened without following a link.
    confined.make_folders(root, RUNS)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-run-", dir=runs_dir))
    try:
        episodes = "".join(
            canonical_json(record.model_dump(mode="json")) + "\n" for record in report.episodes
        )
        confined.write_atomic(root, f"{RUNS}/{tmp.name}/episodes.jsonl", episodes)
        report.log_dir = str(final.relative_to(root))
        summary = json.dumps(report.summary(), indent=2, sort_keys=True) + "\n"
        confined.write_atomic(root, f"{RUNS}/{tmp.name}/summary.json", summary)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def check_persona(env: Environment, persona: str) -> None:
    """Raises UnknownName unless `env` knows `persona` (an environment without personas has
    one implicit user, whatever its name)."""
    known = personas_of(env)
    if known is not None and persona not in known:
        raise UnknownName(f"unknown persona {persona!r}; choose one of {', '.join(known)}.")


def run_split(
    ws: Workspace,
    split: Split,
    *,
    model: str | None = None,
    llm: LLM | None = None,
    runs: int | None = None,
    concurrency: int | None = None,
    executor: str = "auto",
    persona: str | None = None,
    inject: InjectMode | None = None,
    progress: Progress | None = None,
    log: bool = True,
    seed: int | None = None,
) -> SplitReport:
    """Score `split` for `persona` and write the episode logs.

    `seed` is the evaluation seed (default `run.seed`): the episode of task T in run k uses
    `episode_seed(seed, T, k)`, so the same seed gives the same episodes and another seed
    may differ wherever the episode is stochastic.

    Raises:
        UnknownName: for an unknown split, persona or model.
        ModelError: when the model cannot be reached.
    """
    from evolve.evaluate._setup import episode_setup, with_agent

    cfg = ws.config
    env = open_env(ws)
    persona = persona or cfg.persona
    check_persona(env, persona)
    tasks = env.tasks(split)
    base_seed = cfg.run.seed if seed is None else seed
    spawn: WorkerSpec | None = None
    if llm is None:
        cfg = with_models(cfg, agent=model)
        llm = make_role_llm(cfg, "agent", env=env)
        # Built from the configuration by name: a worker process can build the same one.
        spawn = WorkerSpec(str(ws.root), cfg, persona, inject, base_seed)
    runs = runs or cfg.run.runs
    # Played by the agent the workspace names (a scored copy's, when the gate scores one).
    setup = with_agent(episode_setup(ws, env, persona, inject), ws, llm)
    started = time.perf_counter()
    records = score_tasks(
        env,
        llm,
        tasks,
        setup,
        runs=runs,
        base_seed=base_seed,
        concurrency=concurrency or cfg.run.concurrency,
        executor=executor,
        spawn=spawn,
        progress=progress,
    )
    player = setup.agent.name if setup.agent is not None else llm.name  # a command: its name
    report = SplitReport(split, persona, player, runs, records, time.perf_counter() - started)
    report.seed = base_seed
    if log:
        write_run_log(ws, report)
    return report
