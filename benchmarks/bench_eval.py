"""CPU of `evolve run --split dev` (the sim), this code against an older one, end to end.

Runs `python -m evolve run --split dev --json` as a user does, on two workspaces:

- `default`: the workspace `evolve init` makes (no memory yet);
- `1k units`: `_workspace.build_workspace` (1,000 TEPA units of the persona, all rendered
  into the prompt, on a 10,000-commit history).

Each is scored by this checkout's code and by the code at `--old` (default 46b70e9, main
before the scoring work), exported with `git archive` into a temporary folder and put first
on PYTHONPATH; the two alternate, so a busy moment of the machine hits both. Prints the
median CPU time (user + system of the process) of each, their ratio, and `python -c pass`;
with `--demo`, also the wall and CPU time of one `evolve demo` by each.

This code's timed runs find what earlier runs remembered in `.git/` (`evolve-config.cache`,
`evolve-evalset.cache`, `evolve-memory.cache`, `evolve-sim.cache`: see the README), as a
user's second run does; the `cold` column is the median of runs with those files deleted
first (a run after `evolve.yaml`, the evalset and memory all changed).

Run: `python benchmarks/bench_eval.py [--old REV] [--repeats N] [--units N --commits N]
[--demo]`.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _workspace import build_workspace  # noqa: E402

from evolve.workspace import init_workspace  # noqa: E402

HERE = Path(__file__).resolve().parents[1]


def export(rev: str, target: Path) -> Path:
    """This repository at `rev` (its `src/` and the files `evolve init` copies), written under
    `target`, read from git (no worktree); returns its `src/`."""
    data = subprocess.run(
        ["git", "archive", "--format=tar", rev], cwd=HERE, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(target, filter="data")
    return target / "src"


def old_copy(root: Path, release: Path) -> Path:
    """A copy of the workspace at `root` whose evolve.yaml is the one at `release` (the old
    code's), with the recipe and persona lines `root`'s has, committed."""
    target = root.with_name(root.name + "-old")
    shutil.copytree(root, target, symlinks=True)
    mine = (root / "evolve.yaml").read_text(encoding="utf-8").splitlines()
    text = (release / "evolve.yaml").read_text(encoding="utf-8")
    for key in ("  recipe:", "persona:"):
        ours = next((line for line in mine if line.startswith(key)), None)
        theirs = next((line for line in text.splitlines() if line.startswith(key)), None)
        if ours is not None and theirs is not None:
            text = text.replace(theirs, ours, 1)
    (target / "evolve.yaml").write_text(text, encoding="utf-8")
    subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-am", "the old release's evolve.yaml"],
        cwd=target, check=True,
    )  # fmt: skip
    return target


def cpu_of(command: list[str], cwd: Path, src: Path) -> float:
    """User + system CPU seconds of one run of `command` with `src` first on the path."""
    return timed(command, cwd, src)[1]


def timed(command: list[str], cwd: Path, src: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of `command` with `src` first on the path (the CPU of
    the processes it starts and waits for included)."""
    # As an installed package runs: with its bytecode (some shells set PYTHONDONTWRITEBYTECODE,
    # which would recompile every module on every run, old and new alike).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(src)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        command, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--old", default="46b70e9", help="the revision to compare against")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--units", type=int, default=1_000)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--demo", action="store_true", help="also time `evolve demo`, old and new")
    args = parser.parse_args()
    command = [sys.executable, "-m", "evolve", "run", "--split", "dev", "--json"]
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        old = export(args.old, Path(tmp) / "old")
        new = HERE / "src"
        workspaces = {
            "default": init_workspace(Path(tmp) / "default").root,
            f"{args.units // 1000}k units" if args.units >= 1000 else f"{args.units} units": (
                build_workspace(Path(tmp) / "many", units=args.units, commits=args.commits).root
            ),
        }
        # The old code refuses keys it does not know, so it scores a copy whose evolve.yaml is
        # the old release's (with the same edits); units, history and evalset are the same.
        old_roots = {name: old_copy(root, old.parent) for name, root in workspaces.items()}
        print(f"set up in {time.perf_counter() - t0:.1f}s; old code: {args.old}")
        floor = [cpu_of([sys.executable, "-c", "pass"], Path(tmp), new) for _ in range(5)]
        rows: list[tuple[str, float, float, float]] = []
        for name, root in workspaces.items():
            for where, src in ((old_roots[name], old), (root, new)):  # warm: bytecode, page cache
                cpu_of(command, where, src)
            times: dict[str, list[float]] = {"old": [], "new": [], "cold": []}
            for _ in range(args.repeats):
                times["old"].append(cpu_of(command, old_roots[name], old))
                times["new"].append(cpu_of(command, root, new))
            for _ in range(args.repeats):
                for cache in (root / ".git").glob("evolve-*.cache"):
                    if cache.name != "evolve-log.cache":
                        cache.unlink()
                times["cold"].append(cpu_of(command, root, new))
            median = {k: statistics.median(v) for k, v in times.items()}
            rows.append((name, median["old"], median["new"], median["cold"]))
        demo: dict[str, tuple[float, float]] = {}
        if args.demo:
            for label, src in (("old", old), ("new", new)):
                target = Path(tmp) / f"demo-{label}"
                demo[label] = timed([*command[:3], "demo", str(target)], Path(tmp), src)
    print(f"\n`evolve run --split dev` (sim), CPU per process, median of {args.repeats}")
    print(
        f"{'workspace':<12} {'old s':>8} {'new s':>8} {'old/new':>8}   {'cold s':>8} {'old/cold':>8}"
    )
    for name, before, after, cold in rows:
        print(
            f"{name:<12} {before:8.3f} {after:8.3f} {before / after:7.2f}x   {cold:8.3f} "
            f"{before / cold:7.2f}x"
        )
    print("target: old/new >= 3x")
    print(f"{'python -c pass':<12} {statistics.median(floor):17.3f}")
    for label, (wall, cpu) in demo.items():
        print(f"evolve demo ({label}): {wall:.2f} s wall, {cpu:.2f} s CPU   target <= 10 s wall")


if __name__ == "__main__":
    main()
