"""`evolve compare --executor ray`: an experiment's jobs on a Ray cluster, everything they
need and make travelling through git (docs/guides/compare.md, "On a Ray cluster").

The driver bundles the base commit's history once (`git bundle`, put in Ray's object store
once); each job, on whatever node Ray gives it, fetches that bundle into a repository of its
own in a temporary folder, runs there exactly what a local job runs (`run_job`: its own clone,
training, scoring), and sends back its result and a bundle of the arm's refs (the arm's branch
and its training records). The driver fetches those refs into the workspace as
`refs/evolve/arms/...` and `refs/evolve/arm-records/...`, then writes the job's result file:
the same journal as a local run, in the same order (refs first, then the file), so a run
stopped at any point resumes exactly as a local one does, whichever executor runs it again.
No node needs the workspace's folder; each needs evolve installed and git.

The cluster is the `ray` executor's: `RAY_ADDRESS`, or a local one started for the command
and shut down after it (`evolve.executors._ray.ray_session`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from evolve import _confine as confined
from evolve._format._git import committed_env
from evolve._io import canonical_json
from evolve.compare._cells import JobSpec, run_job_quietly
from evolve.errors import EvolveError
from evolve.workspace import Workspace

#: The branch the base commit is under in a job's repository (and in the bundle sent).
BASE_BRANCH = "refs/heads/evolve-base"
_BASE_REF = "refs/evolve-compare-base/"  # the workspace's ref a bundle is made from, removed


def _git(cwd: Path | str, *args: str) -> bytes:
    done = subprocess.run(
        ["git", "-c", "gc.auto=0", "-c", "maintenance.auto=false", *args],
        cwd=cwd,
        capture_output=True,
        env=committed_env(),
    )
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise EvolveError(
            f"git {args[0]} failed while running an experiment on Ray: "
            f"{said[-1] if said else 'no message'}."
        )
    return done.stdout


def _bundle(repo: Path | str, refs: list[str], folder: str) -> bytes:
    path = os.path.join(folder, "refs.bundle")
    _git(repo, "bundle", "create", "--quiet", path, *refs)
    return Path(path).read_bytes()


def base_bundle(ws: Workspace, experiment: str, base: str) -> bytes:
    """The history of `base` as a git bundle (its one ref: :data:`BASE_BRANCH`)."""
    ref = _BASE_REF + experiment
    ws.store.git("update-ref", ref, base)
    try:
        with tempfile.TemporaryDirectory(prefix="evolve-bundle-") as tmp:
            data = _bundle(ws.root, [ref], tmp)
    finally:
        ws.store.git("update-ref", "-d", ref)
    return data


def ship_job(spec: JobSpec, bundle: bytes) -> tuple[dict[str, Any], bytes]:
    """Run one job where Ray put it: in a repository of its own holding the base commit
    (from `bundle`). Returns its result and a bundle of the arm's refs (empty for a job that
    trains no arm)."""
    with tempfile.TemporaryDirectory(prefix="evolve-compare-") as tmp:
        root = Path(tmp) / "ws"
        _git(tmp, "init", "--quiet", str(root))
        incoming = Path(tmp) / "base.bundle"
        incoming.write_bytes(bundle)
        ref = _git(tmp, "bundle", "list-heads", str(incoming)).split()[1].decode()
        _git(root, "fetch", "--quiet", "--no-tags", str(incoming), f"+{ref}:{BASE_BRANCH}")
        (root / "cells").mkdir()
        local = replace(
            spec, root=str(root), common_dir=str(root / ".git"), cells_dir=str(root / "cells")
        )
        cell = run_job_quietly(local)
        arm_refs = [
            r
            for r in (
                spec.job.ref(spec.experiment.name),
                spec.job.records_ref(spec.experiment.name),
            )
            if r is not None and _git(root, "for-each-ref", r).strip()
        ]
        return cell, (_bundle(root, arm_refs, tmp) if arm_refs else b"")


def bring_back(ws: Workspace, spec: JobSpec, cell: dict[str, Any], refs: bytes) -> None:
    """The driver's half of a job: fetch its arm refs from `refs` (a bundle), then write its
    result file (the journal: written last, as a local job writes it)."""
    if refs:
        with tempfile.TemporaryDirectory(prefix="evolve-bundle-") as tmp:
            path = Path(tmp) / "arm.bundle"
            path.write_bytes(refs)
            heads = _git(ws.root, "bundle", "list-heads", str(path)).decode().split()
            names = heads[1::2]
            wanted = {
                spec.job.ref(spec.experiment.name),
                spec.job.records_ref(spec.experiment.name),
            }
            if not names or not set(names) <= wanted:
                raise EvolveError(
                    f"{spec.job.label()} sent back refs it does not own "
                    f"({', '.join(sorted(set(names) - wanted)) or 'none'}); nothing was kept."
                )
            specs = [f"+{name}:{name}" for name in names]
            _git(
                ws.root, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", str(path), *specs
            )
    cell_path = os.path.relpath(os.path.join(spec.cells_dir, f"{spec.job.key}.json"), ws.root)
    confined.write_atomic(ws.root, cell_path, canonical_json(cell) + "\n")


def run_on_ray(
    ws: Workspace,
    specs: list[JobSpec],
    workers: int | None,
    finished: Callable[[JobSpec, dict[str, Any]], None],
) -> None:
    """Run `specs` on the Ray cluster, at most `workers` at once (default: the cluster's
    CPUs); each finished job is brought back and passed to `finished` as it ends.

    Raises:
        ConfigError: Ray is missing, or its cluster cannot be reached or started.
        EvolveError: a job failed (the others are cancelled; what finished is kept).
    """
    if not specs:
        return
    from evolve.executors._ray import import_ray, ray_session

    ray = import_ray()
    bundle = base_bundle(ws, specs[0].experiment.name, specs[0].base)
    with ray_session(ray):
        task = ray.remote(num_cpus=1, max_retries=0)(ship_job)
        shared = ray.put(bundle)
        limit = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        queue = list(reversed(specs))
        flight: dict[Any, JobSpec] = {}
        try:
            while queue or flight:
                while queue and len(flight) < limit:
                    spec = queue.pop()
                    flight[task.remote(spec, shared)] = spec
                [ready], _ = ray.wait(list(flight), num_returns=1)
                spec = flight.pop(ready)
                try:
                    cell, refs = ray.get(ready)
                except ray.exceptions.RayTaskError as exc:
                    cause = getattr(exc, "cause", None)
                    if isinstance(cause, EvolveError):
                        raise EvolveError(str(cause)) from exc
                    raise EvolveError(f"{spec.job.label()} failed on the Ray cluster.") from exc
                except ray.exceptions.RayError as exc:
                    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                    raise EvolveError(
                        f"{spec.job.label()} was lost on the Ray cluster "
                        f"({type(exc).__name__}: {' '.join(first.split()).rstrip('.')}); rerun "
                        "to resume."
                    ) from exc
                bring_back(ws, spec, cell, refs)
                finished(spec, cell)
        except BaseException:
            for ref in flight:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
            raise
