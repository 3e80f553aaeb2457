"""Costs that do not grow with history: one `evolve train --episodes 1`
process at 1k, 30k and 100k commits, and the peak memory of `evolve log -n 0 --json`.

For each size, builds a workspace (`_workspace.build_workspace`: `evolve init`'s files, 1,000
TEPA units in `memory/`, the history written through `git fast-import` with the training
loop's trailers, plus a commit-graph as `evolve train` leaves it) and measures, in one run:

- `evolve train --episodes 1 --seed S` as a user runs it (its own process, the sim models):
  each run starts a new stream (a new seed), so nothing it needs from history is at the top
  of the branch. Only runs whose episode committed are kept; the wall time is the median.
- floor: on a copy of the same workspace, the change each of those runs committed made the
  way a person makes it: the files written, then `git add -A && git commit` with the same
  message, as processes. The two sides alternate, so a busy moment hits both.
- context (not a target): a Python process that only starts, imports the four standard
  modules any such writer needs (`subprocess` to run git, `json` for `--json`, `hashlib` for
  object ids, `re` for text) and reads every unit file once, added to the floor: the least
  any Python program that does this job pays. What the 5x target leaves for the program's
  own work is printed beside it.
- at the largest size, `evolve log -n 0 --json` twice (the first run starts the log cache,
  the second uses it): the peak resident memory of evolve's own process (VmHWM, read at exit
  in the process itself; the git processes it runs are their own).

Prints one table with the targets beside: train within 1.2x across sizes and <= 5x the floor;
the log's peak <= 64 MiB. With `--old REV`, the code at REV (exported with `git archive`, first
on PYTHONPATH) also trains, on its own copy of each workspace, in the same rounds, and a second
table prints both side by side.

Run: `python benchmarks/bench_scale.py [--sizes 1000,30000,100000 --units 1000 --runs 5]
[--old REV]`, or `--quick` (100 units; 300, 1,000 and 3,000 commits; 3 runs).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _workspace import build_workspace  # noqa: E402
from bench_eval import export  # noqa: E402

PY = sys.executable
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
MIB = 1024 * 1024
# Runs `evolve` in this process and, when it exits, writes its peak resident set (KiB) to
# the file named by the first argument: VmHWM, the high-water mark of this program's own
# memory. (`ru_maxrss` would not do: Linux carries into it, across exec, the size of the
# process that forked this one, here the benchmark holding a 100,000-commit import.)
_PEAK = (
    "import atexit, resource, runpy, sys\n"
    "out = sys.argv.pop(1)\n"
    "def _peak():\n"
    "    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
    "    try:\n"
    "        with open('/proc/self/status', encoding='ascii') as f:\n"
    "            kib = next(int(l.split()[1]) for l in f if l.startswith('VmHWM:'))\n"
    "    except (OSError, StopIteration):\n"
    "        pass\n"
    "    with open(out, 'w') as f:\n"
    "        f.write(str(kib))\n"
    "atexit.register(_peak)\n"
    "sys.argv[0] = 'evolve'\n"
    "runpy.run_module('evolve', run_name='__main__', alter_sys=True)\n"
)


def _git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, check=True).stdout


def _cpu() -> float:
    """CPU seconds of the processes this one ran and waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _train(root: Path, seed: int, src: Path | None = None) -> tuple[float, float, str | None]:
    """(wall seconds, CPU seconds, the commit it made or None) of one
    `evolve train --episodes 1` (CPU: its own and its git processes'); `src`: the code to run
    (first on PYTHONPATH), else this checkout's."""
    argv = [PY, "-m", "evolve", "train", "--episodes", "1", "--seed", str(seed), "--json"]
    env = ENV if src is None else {**ENV, "PYTHONPATH": str(src)}
    cpu, start = _cpu(), time.perf_counter()
    done = subprocess.run(argv, cwd=root, capture_output=True, text=True, env=env, check=True)
    wall, cpu = time.perf_counter() - start, _cpu() - cpu
    commits = json.loads(done.stdout)["commits"]
    return wall, cpu, (commits[0] if commits else None)


def _floor(source: Path, floor: Path, sha: str) -> tuple[float, float]:
    """Make `sha`'s change (made in `source`) on `floor` with `git add -A && git commit`."""
    changed = _git(source, "diff-tree", "--no-commit-id", "-r", "--name-only", "-z", sha)
    message = floor.parent / "message.txt"
    message.write_bytes(_git(source, "log", "-1", "--format=%B", sha))
    for path in (p.decode() for p in changed.split(b"\0") if p):
        target = floor / path
        exists = subprocess.run(["git", "cat-file", "-e", f"{sha}:{path}"], cwd=source)
        if exists.returncode:
            target.unlink(missing_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(_git(source, "show", f"{sha}:{path}"))
    cpu, start = _cpu(), time.perf_counter()
    subprocess.run(
        f"git add -A && git commit -q --cleanup=verbatim -F {message}",
        shell=True, cwd=floor, check=True, env=ENV,
    )  # fmt: skip
    return time.perf_counter() - start, _cpu() - cpu


def _log_peak(root: Path, scratch: Path) -> tuple[float, float]:
    """(wall seconds, evolve's peak MiB) of one `evolve log -n 0 --json`."""
    out = scratch / "peak.txt"
    argv = [PY, "-c", _PEAK, str(out), "log", "-n", "0", "--json"]
    start = time.perf_counter()
    subprocess.run(argv, cwd=root, stdout=subprocess.DEVNULL, env=ENV, check=True)
    wall = time.perf_counter() - start
    return wall, int(out.read_text(encoding="utf-8")) / 1024


# The least any Python program doing this job pays beyond the floor's git commands: start
# the interpreter, import the standard modules it cannot do without (git runs as a process,
# the report is JSON, objects are named by hashes, text is matched), read every unit file once
# (context for the <= 5x target, not a target).
_READ_UNITS = (
    "import hashlib, json, re, subprocess\n"
    "import os\n"
    "for d, _, files in os.walk('memory'):\n"
    "    for f in files:\n"
    "        with open(os.path.join(d, f), 'rb') as handle:\n"
    "            handle.read()\n"
)


def _python_reads(root: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of a Python process that only reads the unit files."""
    cpu, start = _cpu(), time.perf_counter()
    subprocess.run([PY, "-c", _READ_UNITS], cwd=root, check=True, env=ENV)
    return time.perf_counter() - start, _cpu() - cpu


def _python_pass(repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([PY, "-c", "pass"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,30000,100000", help="commits, comma-separated")
    parser.add_argument("--units", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=5, help="train runs kept per size")
    parser.add_argument("--quick", action="store_true", help="100 units; 300/1k/3k commits")
    parser.add_argument("--old", help="also train with the code at this revision, side by side")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.units, args.runs = "300,1000,3000", 100, 3
    sizes = [int(s) for s in args.sizes.split(",")]
    # per size: train wall, train CPU, floor wall, floor CPU (seconds)
    times: dict[int, tuple[list[float], list[float], list[float], list[float]]] = {}
    # per size: CPU seconds of a Python process that only reads the unit files
    reads: dict[int, list[float]] = {c: [] for c in sizes}
    # per size, with --old: the old code's train wall and CPU (seconds)
    olds: dict[int, tuple[list[float], list[float]]] = {c: ([], []) for c in sizes}
    with tempfile.TemporaryDirectory() as tmp:
        old_src = export(args.old, Path(tmp) / "old") if args.old else None
        for commits in sizes:
            t0 = time.perf_counter()
            build_workspace(Path(tmp) / f"ws-{commits}", units=args.units, commits=commits)
            shutil.copytree(
                Path(tmp) / f"ws-{commits}", Path(tmp) / f"floor-{commits}", symlinks=True
            )
            if old_src is not None:
                shutil.copytree(
                    Path(tmp) / f"ws-{commits}", Path(tmp) / f"old-{commits}", symlinks=True
                )
                _train(Path(tmp) / f"old-{commits}", 10_000, old_src)  # not timed
            _train(Path(tmp) / f"ws-{commits}", 10_000)  # bytecode, first caches: not timed
            times[commits] = ([], [], [], [])
            print(f"{commits:>7} commits: built in {time.perf_counter() - t0:.1f}s", flush=True)
        # Rounds run every size in turn, so that a busy moment of the machine hits all.
        seeds = dict.fromkeys(sizes, 0)
        old_seeds = dict.fromkeys(sizes, 0)
        for _ in range(args.runs):
            for commits in sizes:
                ws, floor = Path(tmp) / f"ws-{commits}", Path(tmp) / f"floor-{commits}"
                sha = None
                while sha is None and seeds[commits] < 20 * args.runs:
                    seeds[commits] += 1  # a new stream each run
                    wall, cpu, sha = _train(ws, seeds[commits])
                if sha is None:
                    raise SystemExit(f"no episode committed at {commits} commits")
                floor_wall, floor_cpu = _floor(ws, floor, sha)
                reads[commits].append(_python_reads(floor)[1])
                for kept, value in zip(
                    times[commits], (wall, cpu, floor_wall, floor_cpu), strict=True
                ):
                    kept.append(value)
                if old_src is not None:  # the same kind of run (one that commits), old code
                    old_sha = None
                    while old_sha is None and old_seeds[commits] < 20 * args.runs:
                        old_seeds[commits] += 1
                        old_wall, old_cpu, old_sha = _train(
                            Path(tmp) / f"old-{commits}", old_seeds[commits], old_src
                        )
                    if old_sha is None:
                        raise SystemExit(f"no episode committed at {commits} commits (old code)")
                    olds[commits][0].append(old_wall)
                    olds[commits][1].append(old_cpu)
        top = max(sizes)
        cold = _log_peak(Path(tmp) / f"ws-{top}", Path(tmp))
        warm = _log_peak(Path(tmp) / f"ws-{top}", Path(tmp))
        py = _python_pass() * 1e3
    rows = {c: [_median_ms(v) for v in times[c]] for c in sizes}
    low_wall = min(r[0] for r in rows.values())
    low_cpu = min(r[1] for r in rows.values())
    print(f"\n{args.units} units, {args.runs} runs per size (medians); python -c pass {py:.1f} ms")
    print(
        f"{'commits':>8} {'train ms':>9} {'floor ms':>9} {'x floor':>8} {'x smallest':>11}"
        f" | {'train CPU':>9} {'floor CPU':>9} {'x floor':>8} {'x smallest':>11}"
    )
    for commits, (wall, cpu, floor_wall, floor_cpu) in rows.items():
        print(
            f"{commits:>8} {wall:9.1f} {floor_wall:9.1f} {wall / floor_wall:7.2f}x "
            f"{wall / low_wall:10.2f}x | {cpu:9.1f} {floor_cpu:9.1f} {cpu / floor_cpu:7.2f}x "
            f"{cpu / low_cpu:10.2f}x"
        )
    print(
        "context, not a target: a Python process that only starts, imports hashlib, json, re "
        "and subprocess and reads the unit files, added to the floor (CPU ms):"
    )
    for commits, (_, cpu, _, floor_cpu) in rows.items():
        least = floor_cpu + _median_ms(reads[commits])
        print(
            f"{commits:>8} python floor {least:7.1f} ({least / floor_cpu:.2f}x the floor); "
            f"train {cpu / least:.2f}x it; 5x the floor leaves {5 * floor_cpu - least:.1f} ms "
            f"for everything else the run does (it takes {cpu - least:.1f})"
        )
    for what, i, low in (("wall", 0, low_wall), ("CPU", 1, low_cpu)):
        spread = max(r[i] for r in rows.values()) / low
        worst = max(r[i] / r[i + 2] for r in rows.values())
        print(
            f"train ({what}) across sizes: {spread:.2f}x (target <= 1.2x) "
            f"{'ok' if spread <= 1.2 else 'MISSED'}; vs the floor: up to {worst:.2f}x "
            f"(target <= 5x) {'ok' if worst <= 5 else 'MISSED'}"
        )
    print(
        f"log -n 0 --json at {top} commits: {cold[0] * 1e3:.0f} ms cold, {warm[0] * 1e3:.0f} ms "
        f"warm; evolve's peak {cold[1]:.1f} MiB cold, {warm[1]:.1f} MiB warm (target <= 64 MiB) "
        f"{'ok' if max(cold[1], warm[1]) <= 64 else 'MISSED'}"
    )
    if args.old:
        print(f"\nthis code against {args.old}, the same rounds (medians)")
        print(
            f"{'commits':>8} {'old ms':>9} {'new ms':>9} {'new/old':>8}"
            f" | {'old CPU':>9} {'new CPU':>9} {'new/old':>8}"
        )
        for commits, (wall, cpu, *_) in rows.items():
            old_wall, old_cpu = (_median_ms(v) for v in olds[commits])
            print(
                f"{commits:>8} {old_wall:9.1f} {wall:9.1f} {wall / old_wall:7.2f}x | "
                f"{old_cpu:9.1f} {cpu:9.1f} {cpu / old_cpu:7.2f}x"
            )


if __name__ == "__main__":
    main()
