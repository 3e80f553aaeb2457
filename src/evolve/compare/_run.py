"""`evolve compare`: run an experiment's jobs (resuming), then write and record its results.

Layout (all under the workspace, none of it tracked by git):

- `generations/experiments/<name>/plan.json`: the experiment's digest, base commit and models;
  results of another plan are never mixed in (`--fresh` starts over);
- `generations/experiments/<name>/cells/<job>.json`: one file per finished job, written
  atomically: the journal of what is done;
- `generations/experiments/<name>/results.json` and `results.md`: the results, also committed
  to `refs/evolve/records` as `experiments/<name>/results.{json,md}`.

Resuming: a job is done when its file is there, belongs to this plan and (for a recipe arm)
its arm ref exists; every other job runs again from the base commit (an interrupted job's
clone is removed, its arm ref overwritten). An arm ref a person moved since (a revert on the
arm) is never trained over: its result stays that of the commit it was measured on, and the
run says so. So a run killed at
any point, SIGKILL included, is finished by running the same command again, and finished
jobs are never redone.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evolve import _confine as confined
from evolve._faults import fault
from evolve._io import atomic_write
from evolve.agent import agents
from evolve.compare._cells import (
    JobSpec,
    clones_dir,
    die_with_parent,
    run_job,
    run_job_quietly,
)
from evolve.compare._results import build_results, results_markdown
from evolve.compare._spec import (
    ARM_RECORDS_REF,
    ARMS_REF,
    Experiment,
    ExperimentError,
    Job,
    load_experiment,
    plan,
)
from evolve.envs import capabilities, personas_of
from evolve.errors import EvolveError, UnknownName
from evolve.evaluate import open_env
from evolve.generations._records import RECORDS_REF
from evolve.llm import make_role_llm, with_models
from evolve.llm._roles import RoleName
from evolve.updaters import RECIPES
from evolve.workspace import Workspace

Say = Callable[[str], None]
EXPERIMENTS = "generations/experiments"


@dataclass
class Prepared:
    """An experiment checked against the workspace, with what is left to run."""

    experiment: Experiment
    base: str
    models: dict[str, str]
    folder: Path
    jobs: list[Job]
    done: dict[str, dict[str, Any]] = field(default_factory=dict)  # job key -> cell
    moved: list[str] = field(default_factory=list)  # arm refs moved since they were measured
    needs_fresh: bool = False  # results of another plan are there: the run asks for --fresh

    @property
    def pending(self) -> list[Job]:
        return [j for j in self.jobs if j.key not in self.done]


def _models(ws: Workspace, exp: Experiment, overrides: dict[str, str | None]) -> dict[str, str]:
    """Roles -> model names: command line > experiment file > evolve.yaml."""
    chosen = {
        "agent": overrides.get("agent") or exp.models.agent or ws.config.models.agent,
        "updater": overrides.get("updater") or exp.models.updater or ws.config.models.updater,
        "reflector": overrides.get("reflector") or ws.config.models.reflector,
    }
    if overrides.get("cache"):
        chosen["cache"] = str(overrides["cache"])
    return chosen


def prepare(
    ws: Workspace, path: Path, *, overrides: dict[str, str | None] | None = None
) -> Prepared:
    """Check the experiment file and the workspace; find the jobs left. Writes nothing.

    Raises:
        ExperimentError: a wrong experiment file (one sentence).
        EvolveError: the workspace has no commit, or an unknown model is named.
    """
    env = open_env(ws)
    splits = {s: [t.id for t in env.tasks(s)] for s in ("train", "dev", "holdout")}
    exp = load_experiment(
        path,
        personas=personas_of(env) or [ws.config.persona],
        recipes=sorted(RECIPES),
        splits=splits,
    )
    oracle = sorted(name for name, arm in exp.arms.items() if arm.type == "oracle")
    if oracle and "oracle" not in capabilities(env):
        raise ExperimentError(
            f"{path}: arm {oracle[0]!r} is an oracle arm, but the environment {env.name!r} "
            "states no user preferences; remove the arm."
        )
    models = _models(ws, exp, overrides or {})
    cfg = with_models(ws.config, **{k: v for k, v in models.items() if k != "cache"})
    roles: list[RoleName] = ["agent", "updater"]
    if any(a.recipe == "skills" for a in exp.arms.values()):
        roles.append("evolver")  # the skills recipe's batch evolver (models.evolver)
    for role in roles:
        make_role_llm(cfg, role, env=env)  # an unknown model is refused before anything runs
    for name, arm in exp.arms.items():  # and so is one an arm names for itself
        if arm.agent is not None:
            try:
                agents.lookup(arm.agent)
            except UnknownName as exc:
                raise ExperimentError(f"{path}: arm {name!r}: {exc}") from None
        if arm.models is not None:
            own = with_models(cfg, agent=arm.models.agent, updater=arm.models.updater)
            for role in ("agent", "updater") if arm.type == "recipe" else ("agent",):
                make_role_llm(own, role, env=env)
    base = ws.store.head()
    if base is None:
        raise EvolveError("the workspace has no commit yet; commit it before comparing.")
    folder = ws.root / EXPERIMENTS / exp.name
    prepared = Prepared(exp, base, models, folder, plan(exp))
    known = _read_plan(folder)
    if known is not None and known != _plan_doc(prepared):
        # another plan's results: `run` refuses them unless --fresh
        prepared.needs_fresh = any((folder / "cells").glob("*.json"))
        return prepared
    for job in prepared.jobs:
        cell = _finished(ws, prepared, job)
        if cell is not None:
            prepared.done[job.key] = cell
    return prepared


def _plan_doc(p: Prepared) -> dict[str, Any]:
    return {
        "experiment": p.experiment.name,
        "digest": p.experiment.digest(),
        "base": p.base,
        "models": p.models,
    }


def _read_plan(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / "plan.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _finished(ws: Workspace, p: Prepared, job: Job) -> dict[str, Any] | None:
    try:
        cell = json.loads((p.folder / "cells" / f"{job.key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(cell, dict) or cell.get("digest") != p.experiment.digest():
        return None
    if cell.get("base") != p.base:
        return None
    ref = job.ref(p.experiment.name)
    if ref is not None:
        now = ws.store.ref_sha(ref)
        if now is None or cell.get("sha") is None:
            return None  # the arm's branch is gone: measure it again
        if now != cell["sha"]:
            # Moved by hand since (a revert on the arm, say): kept, never trained over.
            p.moved.append(f"{ref} (measured at {str(cell['sha'])[:10]}, now {now[:10]})")
    return cell


def _delete_refs(ws: Workspace, prefix: str) -> None:
    out = ws.store.git("for-each-ref", "--format=%(refname)", prefix)
    for ref in out.split():
        ws.store.git("update-ref", "-d", ref)


def _ensure_ignored(ws: Workspace, folder: Path) -> None:
    """Keep the results out of `git status` in a workspace whose .gitignore predates them
    (`.git/info/exclude` is the repository's own, untracked ignore list)."""
    probe = folder.relative_to(ws.root) / "plan.json"
    done = subprocess.run(
        ["git", "check-ignore", "-q", "--no-index", str(probe)], cwd=ws.root, capture_output=True
    )
    if done.returncode == 0:
        return
    exclude = ws.store.common_dir / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    line = f"/{EXPERIMENTS}/"
    if line not in text.splitlines():
        atomic_write(
            exclude, text + ("" if text.endswith("\n") or not text else "\n") + line + "\n"
        )


def default_workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))


def run(
    ws: Workspace,
    p: Prepared,
    *,
    workers: int | None = None,
    fresh: bool = False,
    say: Say | None = None,
    executor: str = "process",
) -> dict[str, Any]:
    """Run the jobs left (holding the workspace's writer lock), then write the results.

    `executor`: "process" (each job in a process of this machine, `workers` at once) or
    "ray" (each job on a Ray cluster, its refs and result brought back through git:
    `evolve.compare._ray`).

    Raises:
        EvolveError: results of another plan exist (without `fresh`), a job failed, or the
            lock is held.
        ConfigError: `executor` is "ray" and Ray is missing or its cluster unreachable.
    """
    from evolve.txn import writer

    exp = p.experiment
    say = say or (lambda _line: None)
    started = time.perf_counter()
    with writer(ws, "evolve compare"):
        known = _read_plan(p.folder)
        another = known is not None and known != _plan_doc(p)
        if another and not any((p.folder / "cells").glob("*.json")):
            fresh = True  # another plan that finished no job: nothing to keep or mix
        if another and not fresh:
            raise EvolveError(
                f"{p.folder.relative_to(ws.root)} holds results of another plan of experiment "
                f"{exp.name} (a changed file, base commit or model); rerun with --fresh to "
                "discard them, or give the experiment another name."
            )
        rel = p.folder.relative_to(ws.root).as_posix()
        confined.check(ws.root, rel)  # a link out is refused before anything is removed
        if fresh:
            shutil.rmtree(p.folder, ignore_errors=True)
            _delete_refs(ws, f"{ARMS_REF}/{exp.name}/")
            _delete_refs(ws, f"{ARM_RECORDS_REF}/{exp.name}/")
            p.done.clear()
        shutil.rmtree(clones_dir(ws.store.common_dir, exp.name), ignore_errors=True)
        cells_dir = p.folder / "cells"
        confined.make_folders(ws.root, f"{rel}/cells")
        _ensure_ignored(ws, p.folder)
        confined.write_atomic(
            ws.root, f"{rel}/plan.json", json.dumps(_plan_doc(p), indent=2) + "\n"
        )
        pending = p.pending
        total = len(p.jobs)
        # Said once the lock is held: a run refused by another's lock announces no work.
        say(f"experiment {exp.name}: {total} jobs, {len(pending)} to run, on {p.base[:10]}")
        if p.done:
            say(f"resuming: {len(p.done)} of {total} jobs are done and kept")
        for moved in p.moved:
            say(
                f"note: arm {moved} moved since it was measured; its result is of the measured "
                "commit (--fresh measures every arm again)"
            )
        models = tuple(sorted(p.models.items()))
        specs = [
            JobSpec(
                str(ws.root), str(ws.store.common_dir), p.base, exp, job, str(cells_dir), models
            )
            for job in pending
        ]
        count = len(p.done)

        def finished(spec: JobSpec, cell: dict[str, Any]) -> None:
            nonlocal count
            count += 1
            p.done[spec.job.key] = cell
            say(f"[{count}/{total}] {spec.job.label()} ({cell['duration_s']:.1f}s)")
            fault("compare-cell")

        if executor == "ray":
            from evolve.compare._ray import run_on_ray

            run_on_ray(ws, specs, workers, finished)  # `workers` None: the cluster's CPUs
        elif (workers := workers or default_workers()) <= 1 or len(specs) <= 1:
            for spec in specs:
                finished(spec, run_job(spec))
        else:
            context = multiprocessing.get_context("spawn")
            with cf.ProcessPoolExecutor(
                max_workers=workers,
                mp_context=context,
                initializer=die_with_parent,
                initargs=(os.getpid(),),
            ) as pool:
                futures = {pool.submit(run_job_quietly, spec): spec for spec in specs}
                try:
                    for future in cf.as_completed(futures):
                        finished(futures[future], future.result())
                except BaseException:
                    for other in futures:
                        other.cancel()
                    raise
        shutil.rmtree(clones_dir(ws.store.common_dir, exp.name), ignore_errors=True)
        cells = [p.done[j.key] for j in p.jobs]
        continued = [
            f"{c['arm']} · {c['persona']} · {c['tier']} · order {c['order']} from episode "
            f"{r['train']['stream_start']}"
            for c in cells
            for r in c.get("results", [])
            if r.get("train", {}).get("stream_start")
        ]
        if continued:
            say(
                f"note: HEAD already holds training of {len(continued)} arm stream(s) "
                f"({'; '.join(continued[:3])}{' ...' if len(continued) > 3 else ''}); those "
                "arms continued it with that memory (compare from a commit without it for "
                "arms that all start alike)"
            )
        doc = build_results(exp, cells, base=p.base, duration_s=time.perf_counter() - started)
        doc["models"] = p.models
        text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
        markdown = results_markdown(doc)
        rel = p.folder.relative_to(ws.root).as_posix()
        confined.write_atomic(ws.root, f"{rel}/results.json", text)  # no link followed out
        confined.write_atomic(ws.root, f"{rel}/results.md", markdown)
        ws.store.write_side_ref(
            RECORDS_REF,
            {
                f"experiments/{exp.name}/results.json": text.encode("utf-8"),
                f"experiments/{exp.name}/results.md": markdown.encode("utf-8"),
            },
            f"experiment {exp.name}: {len(cells)} cells on {p.base[:10]}",
        )
        return doc


def load_results(ws: Workspace) -> list[dict[str, Any]]:
    """Every experiment's results recorded on `refs/evolve/records` (newest per name)."""
    files = ws.store.read_side_ref(RECORDS_REF, "experiments")
    out = []
    for path, raw in sorted(files.items()):
        if not path.endswith("/results.json"):
            continue
        try:
            out.append(json.loads(raw))
        except ValueError:
            continue
    return out


__all__ = ["ExperimentError", "Prepared", "load_results", "prepare", "run"]
