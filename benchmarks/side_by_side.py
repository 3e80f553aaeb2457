"""Run benchmarks on this checkout and on an older commit, side by side, in one run.

A redesign must leave the figures of the existing benchmarks where they were. Each benchmark prints ratios it measured against its own
floor in its own run; this script runs it twice, alternating, once with the code and the
benchmark script of `--old` (checked out as a detached git worktree in a temporary folder and put
first on PYTHONPATH, so every `python -m evolve` the benchmark starts runs the old code) and
once with this checkout, and prints each run's output under a heading, then the lines that
carry a ratio from both, one beside the other.

    python benchmarks/side_by_side.py --old 64cb20b bench_history.py bench_eval.py \
        [--args "bench_history.py=--repeats 3"]
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RATIO = re.compile(r"ratio|x floor|MISSED|\bok\b", re.IGNORECASE)


def export(rev: str, into: Path) -> Path:
    """A checkout of `rev` at `into` (a detached git worktree: the whole tree, the default
    harness included, and git commands inside it work as in this checkout)."""
    subprocess.run(
        ["git", "worktree", "add", "--quiet", "--detach", str(into), rev],
        cwd=ROOT,
        check=True,
    )
    return into


def run(script: Path, src: Path, extra: list[str]) -> str:
    env = dict(os.environ, PYTHONPATH=str(src))
    done = subprocess.run(
        [sys.executable, str(script), *extra],
        env=env,
        capture_output=True,
        text=True,
        cwd=script.parent,
    )
    out = done.stdout + (f"\n[stderr]\n{done.stderr[-2000:]}" if done.returncode else "")
    return out if done.returncode == 0 else out + f"\n[exit {done.returncode}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", default="64cb20b", help="the commit to compare against")
    parser.add_argument("--args", action="append", default=[], help="BENCH=ARGS for one benchmark")
    parser.add_argument("benchmarks", nargs="+")
    args = parser.parse_args()
    extra = {k: shlex.split(v) for k, _, v in (a.partition("=") for a in args.args)}
    with tempfile.TemporaryDirectory() as tmp:
        old = export(args.old, Path(tmp) / "old")
        try:
            compare(old, args.old, args.benchmarks, extra)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=ROOT)


def compare(old: Path, rev: str, benchmarks: list[str], extra: dict[str, list[str]]) -> None:
    """Each benchmark on `old` (the checkout of `rev`) and on this checkout, in turn."""
    for name in benchmarks:
        flags = extra.get(name, [])
        outputs = {
            f"old {rev}": run(old / "benchmarks" / name, old / "src", flags),
            "new (this checkout)": run(HERE / name, ROOT / "src", flags),
        }
        print(f"===== {name} {' '.join(flags)}")
        for label, out in outputs.items():
            print(f"--- {label}\n{out.rstrip()}")
        print("--- ratio lines, old | new")
        pairs = [
            [line for line in out.splitlines() if RATIO.search(line)] for out in outputs.values()
        ]
        for a, b in zip(*pairs, strict=False):
            print(f"  {a.strip()}\n  {b.strip()}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
