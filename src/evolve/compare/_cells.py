"""One job of an experiment, run in its own clone of the base commit (see `Job`).

Where a job runs: `<git common dir>/evolve-compare/<experiment>/<job key>/`, a `git clone
--shared` of the workspace checked out at the experiment's base commit on a branch of its
own. Training there is the normal `evolve train` code (its lock, journals, recovery and side
ref `refs/evolve/train` are the clone's own), so the arms never see each other's memory,
refusal records or persona clock, and the workspace's HEAD, index and working tree are never
touched. When the job's training and evaluation are done, the arm's branch (and the clone's
`refs/evolve/train`) are fetched into the workspace as
`refs/evolve/arms/<experiment>/<arm>/<persona>/<tier>/<order>` (and the same path under
`refs/evolve/arm-records/`), the job's result is written atomically to
`generations/experiments/<experiment>/cells/<job key>.json` (the journal: a job whose file is
there is done), and the clone is removed. A job killed before its result file was written
left at most a clone (removed on the next run) and perhaps a stale arm ref (overwritten when
the job runs again from the base commit).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evolve import _confine as confined
from evolve._format._git import committed_env
from evolve._io import canonical_json
from evolve.agent import workspace_agent
from evolve.agent._command import command_agent
from evolve.compare._spec import ArmSpec, Experiment, Job
from evolve.episode import EpisodeRecord, EpisodeSetup
from evolve.errors import EvolveError
from evolve.evaluate import episode_setup, open_env, score_tasks
from evolve.llm import LLM, make_role_llm, usage_json, with_models
from evolve.memory import fixed_block
from evolve.workspace import AgentConfig, EvolveConfig, RecipeCaps, Workspace, load_config

CLONES = "evolve-compare"
CELL_SCHEMA = 1


@dataclass(frozen=True)
class JobSpec:
    """What a worker process needs to run one job (picklable)."""

    root: str  # the workspace
    common_dir: str  # its git common directory (clones live under it)
    base: str  # the commit every arm starts from
    experiment: Experiment
    job: Job
    cells_dir: str
    models: tuple[tuple[str, str], ...] = ()  # role -> model, over evolve.yaml


def _git(*args: str, cwd: str | Path) -> str:
    done = subprocess.run(
        ["git", "-c", "gc.auto=0", "-c", "maintenance.auto=false", *args],
        cwd=cwd,
        capture_output=True,
        env=committed_env(),  # objects as stored: no replace ref or graft
    )
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise EvolveError(
            f"git {args[0]} failed while running an experiment: "
            f"{detail[-1] if detail else 'no message'}."
        )
    return done.stdout.decode("utf-8", "replace")


def clones_dir(common_dir: str | Path, experiment: str) -> Path:
    return Path(common_dir) / CLONES / experiment


def _make_clone(spec: JobSpec) -> Path:
    clone = clones_dir(spec.common_dir, spec.experiment.name) / spec.job.key
    if clone.exists():
        shutil.rmtree(clone)  # left by a killed run: this job starts again from the base
    clone.parent.mkdir(parents=True, exist_ok=True)
    _git("clone", "--quiet", "--shared", "--no-checkout", spec.root, str(clone), cwd=spec.root)
    _git("checkout", "--quiet", "-b", "evolve-arm", spec.base, cwd=clone)
    return clone


def _config(clone: Path, spec: JobSpec) -> EvolveConfig:
    cfg = load_config(clone / "evolve.yaml")
    roles = dict(spec.models)
    return with_models(
        cfg,
        agent=roles.get("agent"),
        updater=roles.get("updater"),
        reflector=roles.get("reflector"),
        cache=roles.get("cache"),
    )


def _own_models(cfg: EvolveConfig, arm: ArmSpec) -> EvolveConfig:
    """`cfg` with the models `arm` names for itself (they win over the experiment's)."""
    if arm.models is None:
        return cfg
    return with_models(cfg, agent=arm.models.agent, updater=arm.models.updater)


def _own_agent(cfg: EvolveConfig, arm: ArmSpec) -> AgentConfig:
    """The agent `arm` is played by: the one it names, else the workspace's."""
    if arm.agent is None:
        return cfg.agent
    return cfg.agent.model_copy(update={"name": arm.agent, "command": None})


def _arm_config(cfg: EvolveConfig, spec: JobSpec) -> EvolveConfig:
    """The configuration a recipe arm trains under: its recipe rendered, its parameters."""
    assert spec.job.arm is not None
    arm = spec.experiment.arms[spec.job.arm]
    assert arm.recipe is not None
    memory = cfg.memory.model_copy(update={"inject": "recipe"})
    if arm.max_memory_chars is not None:
        memory = memory.model_copy(update={"max_memory_chars": arm.max_memory_chars})
    caps = dict(cfg.caps)
    if arm.caps is not None:  # the fields the arm gives, over the recipe's own caps
        caps[arm.recipe] = RecipeCaps.model_validate(arm.caps.model_dump(exclude_unset=True))
    agent = _own_agent(cfg, arm)
    cfg = _own_models(cfg, arm)
    return cfg.model_copy(
        update={
            "agent": agent,
            "train": cfg.train.model_copy(update={"recipe": arm.recipe, "review": arm.review}),
            "render": cfg.render.model_copy(update={"recipes": ()}),
            "memory": memory,
            "caps": caps,
        }
    )


def _episode(record: EpisodeRecord, seed: int) -> dict[str, Any]:
    return {
        "task": record.task_id,
        "family": record.family,
        "seed": seed,
        "accepted": bool(record.accepted),
        "task_success": bool(record.task_success),
        "violations": sorted(record.violations),
        "applicable": sorted(record.applicable_rules),
        "tokens": int(record.tokens),
        "cost": float(record.cost),
    }


def _evaluate(
    ws: Workspace, llm: LLM, setup: EpisodeSetup, exp: Experiment, agent: AgentConfig
) -> dict[str, Any]:
    """Score every split of `exp`: each task once per evaluation seed, played by `agent` (the
    arm's own, else the workspace's)."""
    env = open_env(ws)
    played = (
        command_agent(agent, ws.root)
        if agent.command
        else workspace_agent(agent.agent_name, llm, ws.root)
    )
    setup = replace(setup, agent=played)  # None: evolve's own agent over `llm`
    out: dict[str, Any] = {}
    for split in exp.splits:
        tasks = env.tasks(split)
        episodes: list[dict[str, Any]] = []
        for seed in exp.eval_seeds:
            records = score_tasks(env, llm, tasks, setup, runs=1, base_seed=seed, executor="serial")
            episodes += [_episode(r, seed) for r in records]
        out[split] = episodes
    return out


def prompt_chars(ws: Workspace, setup: EpisodeSetup, exp: Experiment) -> int:
    """What an arm adds to the agent's prompt: its rendered memory, plus, where skills are
    injected, the mean `<skills>` section over the evaluated tasks and seeds (the section is
    picked per task, so its length varies)."""
    chars = len(setup.memory)
    if setup.skills is None:
        return chars
    env = open_env(ws)
    sizes = [
        len(setup.skills.pick(task.instruction, seed).section)
        for split in exp.splits
        for task in env.tasks(split)
        for seed in exp.eval_seeds
    ]
    return chars + (round(sum(sizes) / len(sizes)) if sizes else 0)


def _arm_result(
    arm: str,
    spec: JobSpec,
    setup: EpisodeSetup,
    scored: dict[str, Any],
    chars: int | None = None,
) -> dict[str, Any]:
    return {
        "arm": arm,
        "type": spec.experiment.arms[arm].type,
        "persona": spec.job.persona,
        "memory_chars": len(setup.memory) if chars is None else chars,
        "splits": scored,
    }


def run_job(spec: JobSpec) -> dict[str, Any]:
    """Run one job to its end and write its result file; returns the result."""
    from evolve.train import last_episode, stream_id, train

    started = time.perf_counter()
    exp, job = spec.experiment, spec.job
    clone = _make_clone(spec)
    try:
        cfg = _config(clone, spec)
        results: list[dict[str, Any]] = []
        out: dict[str, Any] = {
            "schema": CELL_SCHEMA,
            "job": job.key,
            "kind": job.kind,
            "persona": job.persona,
            "base": spec.base,
            "digest": exp.digest(),
        }
        if job.kind == "base":
            ws = Workspace(clone, config=cfg)
            env = open_env(ws)
            shared = make_role_llm(cfg, "agent", env=env)
            for name, arm in exp.arms.items():
                llm = (
                    shared
                    if arm.models is None
                    else make_role_llm(_own_models(cfg, arm), "agent", env=env)
                )
                if arm.type in ("none", "oracle"):
                    setup = episode_setup(ws, env, job.persona, arm.type)
                elif arm.type == "fixed" and arm.chars is not None:
                    setup = replace(
                        episode_setup(ws, env, job.persona, "none"),
                        memory=fixed_block(arm.chars),
                    )
                else:
                    continue
                scored = _evaluate(ws, llm, setup, exp, _own_agent(cfg, arm))
                results.append(_arm_result(name, spec, setup, scored))
        else:
            assert job.arm is not None and job.tier is not None and job.order is not None
            arm_cfg = _arm_config(cfg, spec)
            ws = Workspace(clone, config=arm_cfg)
            env = open_env(ws)
            # Training counts every role's tokens itself (TrainReport.usage): the agent's,
            # the updater's, and the skills recipe's batch evolver's.
            # A stream HEAD already trained (say `evolve train` on the workspace before the
            # experiment) is continued, never cut short: the arm trains `episodes` new ones.
            last = last_episode(
                ws, stream_id(job.persona, arm_cfg.train.recipe, job.order, job.tier)
            )
            begin = 0 if last is None else last + 1
            report = train(
                ws,
                episodes=begin + exp.episodes,
                feedback=job.tier,  # type: ignore[arg-type]
                seed=job.order,
                persona=job.persona,
            )
            ws.store.close()
            ws = Workspace(clone, config=arm_cfg)
            llm = make_role_llm(arm_cfg, "agent", env=env)
            setup = episode_setup(ws, env, job.persona, "recipe")
            chars = prompt_chars(ws, setup, exp)
            scored = _evaluate(ws, llm, setup, exp, arm_cfg.agent)
            result = _arm_result(job.arm, spec, setup, scored, chars)
            used = report.usage
            result["train"] = {
                "episodes": len(report.outcomes),
                "stream_start": report.start,  # > 0: the stream HEAD already had, continued
                "accepted": sum(o.accepted for o in report.outcomes),
                "commits": len(report.commits),
                "tokens": sum(u.tokens for u in used.values()),
                "agent_tokens": used["agent"].tokens if "agent" in used else 0,
                "updater_tokens": used["updater"].tokens if "updater" in used else 0,
                **{
                    f"{r}_tokens": u.tokens
                    for r, u in used.items()
                    if r not in ("agent", "updater")
                },
                "cost": round(sum(u.cost for u in used.values()), 8),
                "usage": usage_json(used),
                "duration_s": round(report.duration_s, 3),
            }
            results.append(result)
            # Token-matched controls of this arm, in the same cell: a neutral block exactly as
            # long as this arm's rendered memory.
            for name, arm in exp.arms.items():
                if arm.type == "fixed" and arm.match == job.arm:
                    fixed = episode_setup(ws, env, job.persona, "fixed")
                    if setup.skills is not None:  # as long as memory and skills together
                        fixed = replace(
                            episode_setup(ws, env, job.persona, "none"),
                            memory=fixed_block(chars),
                        )
                    own = (
                        llm
                        if arm.models is None
                        else make_role_llm(_own_models(cfg, arm), "agent", env=env)
                    )
                    scored = _evaluate(ws, own, fixed, exp, _own_agent(cfg, arm))
                    results.append(_arm_result(name, spec, fixed, scored))
            ref, records_ref = job.ref(exp.name), job.records_ref(exp.name)
            assert ref is not None and records_ref is not None
            head = ws.store.head()
            ws.store.close()
            refspecs = [f"+refs/heads/evolve-arm:{ref}"]
            if _git("for-each-ref", "refs/evolve/train", cwd=clone).strip():
                refspecs.append(f"+refs/evolve/train:{records_ref}")
            _git(
                "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", str(clone), *refspecs,
                cwd=spec.root,
            )  # fmt: skip
            out["ref"] = ref
            out["sha"] = head
            out["tier"] = job.tier
            out["order"] = job.order
            out["arm"] = job.arm
        out["results"] = results
        out["duration_s"] = round(time.perf_counter() - started, 3)
        cell = os.path.relpath(os.path.join(spec.cells_dir, f"{job.key}.json"), spec.root)
        confined.write_atomic(spec.root, cell, canonical_json(out) + "\n")  # no link followed
        return out
    finally:
        shutil.rmtree(clone, ignore_errors=True)


def die_with_parent(parent: int) -> None:
    """Initializer of a worker process: exit as soon as the `evolve compare` that started it
    is gone (killed with SIGKILL, say). Otherwise an orphaned worker would go on running
    queued jobs, writing result files and arm refs beside the run that resumes, and then
    wait forever for work."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="evolve-compare-parent", daemon=True).start()


def run_job_quietly(spec: JobSpec) -> dict[str, Any]:
    """`run_job` for a worker process: an unexpected error becomes one sentence."""
    try:
        return run_job(spec)
    except EvolveError:
        raise
    except Exception as exc:  # a bug: name the job so the report says where
        detail = " ".join(str(exc).split()) or type(exc).__name__
        print(f"evolve compare: {spec.job.label()} failed: {detail}", file=sys.stderr)
        raise EvolveError(
            f"{spec.job.label()} failed with {type(exc).__name__}: {detail}."
        ) from exc
