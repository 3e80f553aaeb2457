"""Where one committing `evolve train --episodes 1` process's CPU goes, against the floor of
`bench_scale.py` (`git add -A && git commit` of a change on the same workspace).

Each part is measured as a process that stops after it, so the parts add up to the whole run:

- the interpreter's start: `python -c pass`;
- `hashlib`, `json`, `re` and `subprocess`: the standard modules any Python writer that runs
  git, prints JSON, names objects by hashes and matches text imports;
- every module a train run loads that is not evolve's (the standard library's, msgspec);
- evolve's modules as well: every module the train run loads;
- the train run itself, split into its git processes (read in the process at exit) and the
  rest, its own work.

The module lists come from one warm train run before the rounds. Each round runs every part once,
the train run with a new seed (a new stream) until its episode commits; the figures are
medians. Run: `python benchmarks/bench_train_parts.py [--units 1000 --commits 1000 --runs 7]`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _workspace import build_workspace  # noqa: E402

PY = sys.executable
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

# Runs one `evolve train --episodes 1 --seed S --json` in this process and prints, on stderr,
# the modules it loaded, its git processes' CPU (ms) and the commits it made.
_TRAIN = (
    "import contextlib, io, json, resource, runpy, sys\n"
    "sys.argv = ['evolve', 'train', '--episodes', '1', '--seed', sys.argv[1], '--json']\n"
    "out = io.StringIO()\n"
    "with contextlib.redirect_stdout(out):\n"
    "    try:\n"
    "        runpy.run_module('evolve', run_name='__main__', alter_sys=True)\n"
    "    except SystemExit:\n"
    "        pass\n"
    "c = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "report = {'modules': list(sys.modules), 'git': (c.ru_utime + c.ru_stime) * 1e3,\n"
    "          'commits': json.loads(out.getvalue())['commits']}\n"
    "print(json.dumps(report), file=sys.stderr)\n"
)


def _imports(modules: list[str]) -> str:
    return (
        "import importlib\n"
        f"for name in {modules!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception:\n"
        "        pass\n"
    )


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1e3


def _run(root: Path, argv: list[str]) -> tuple[float, str]:
    """(CPU ms, stderr) of one process and the processes it waited for."""
    before = _cpu()
    done = subprocess.run(argv, cwd=root, capture_output=True, text=True, env=ENV, check=True)
    return _cpu() - before, done.stderr


def _train(root: Path, seed: int) -> tuple[float, dict[str, object]]:
    cpu, err = _run(root, [PY, "-c", _TRAIN, str(seed)])
    report: dict[str, object] = json.loads(err.strip().splitlines()[-1])
    return cpu, report


def _floor(root: Path, runs: int) -> float:
    """Median CPU ms of `git add -A && git commit` of one new small file."""
    times = []
    for i in range(runs):
        (root / "memory" / f"floor-{i}.md").write_text(f"floor {i}\n", encoding="utf-8")
        before = _cpu()
        subprocess.run(
            f"git add -A && git commit -q -m 'floor {i}'", shell=True, cwd=root, check=True, env=ENV
        )
        times.append(_cpu() - before)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--units", type=int, default=1_000)
    parser.add_argument("--commits", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        build_workspace(root, units=args.units, commits=args.commits)
        _train(root, 100_000)  # bytecode and caches (a cold run loads what a warm one does not)
        _, first = _train(root, 100_001)  # the module lists, of a warm run
        loaded = [m for m in first["modules"] if m != "__main__"]  # type: ignore[attr-defined]
        others = [m for m in loaded if m != "evolve" and not m.startswith("evolve.")]
        parts: dict[str, list[float]] = {
            k: [] for k in ("start", "four", "others", "all", "train", "git")
        }
        seed = 0
        for _ in range(args.runs):
            parts["start"].append(_run(root, [PY, "-c", "pass"])[0])
            parts["four"].append(_run(root, [PY, "-c", "import hashlib, json, re, subprocess"])[0])
            parts["others"].append(_run(root, [PY, "-c", _imports(others)])[0])
            parts["all"].append(_run(root, [PY, "-c", _imports(loaded)])[0])
            commits: object = []
            while not commits and seed < 20 * args.runs:
                seed += 1
                cpu, report = _train(root, seed)
                commits = report["commits"]
            if not commits:
                raise SystemExit("no episode committed")
            parts["train"].append(cpu)
            parts["git"].append(float(report["git"]))  # type: ignore[arg-type]
        floor_copy = Path(tmp) / "floor"
        subprocess.run(["cp", "-a", str(root), str(floor_copy)], check=True)
        floor = _floor(floor_copy, args.runs)
    m = {k: statistics.median(v) for k, v in parts.items()}
    ours = sum(1 for name in loaded if name == "evolve" or name.startswith("evolve."))
    rows = [
        ("the interpreter's start (python -c pass)", m["start"]),
        (f"the other {len(others)} modules it loads", m["others"] - m["start"]),
        ("  of which hashlib, json, re, subprocess", m["four"] - m["start"]),
        (f"evolve's {ours} modules", m["all"] - m["others"]),
        ("the run's own work", m["train"] - m["all"] - m["git"]),
        ("its git processes", m["git"]),
        ("the whole run", m["train"]),
    ]
    print(
        f"{args.units} units, {args.commits} commits, {args.runs} runs (medians); "
        f"floor (git add -A && git commit) {floor:.1f} ms CPU"
    )
    for label, ms in rows:
        print(f"{label:<44} {ms:7.1f} ms {ms / floor:6.2f}x the floor")
    left = 5 * floor - m["four"]
    print(
        f"5x the floor is {5 * floor:.1f} ms; after the start and the four modules, "
        f"{left:.1f} ms are left for the rest, git included (it takes "
        f"{m['train'] - m['four']:.1f})"
    )


if __name__ == "__main__":
    main()
