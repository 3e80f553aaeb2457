"""Reading commands end to end, as a user runs them, against their floors (issue #10).

Builds a workspace with 1,000 units and 10,000 memory commits carrying evolve's trailers
(through `git fast-import`, then a commit-graph with changed-path Bloom filters as `train`
leaves it), and times every command as a subprocess beside its floor, in the same run:

    evolve --version          vs  python -c pass
    evolve log -n 50          vs  git log -n 50 + python -c pass
    evolve log -n 0 --json    vs  git log --format=%H%x00%B (full walk)
    evolve show UNIT --json   vs  git log -p -- <unit file>
    evolve memory --json      vs  reading the 1,000 unit files (python)

Each row prints the median wall time of both sides and their ratio, plus the target from the
issue. Run: `python benchmarks/bench_history.py [--commits N --units N --repeats R]`, or
`--quick` for a small workspace.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evolve.history import refresh_commit_graph
from evolve.memory import MemoryUnit, dump_unit
from evolve.workspace import Workspace, init_workspace

PY = sys.executable


def unit_text(i: int, n: int) -> bytes:
    unit = MemoryUnit(
        id=f"ace-{i:010d}", recipe="ace", kind="bullet", scope="user:alex", created_episode=0,
        updated_episode=n, text=f"Statement {i} as of episode {n}.",
    )  # fmt: skip
    return dump_unit(unit).encode("utf-8")


def build(root: Path, commits: int, units: int) -> Workspace:
    ws = init_workspace(root)
    head = ws.store.head()
    stream: list[bytes] = []
    stamp = 1_700_000_000

    def data(payload: bytes) -> None:
        stream.append(b"data %d\n" % len(payload))
        stream.append(payload)
        stream.append(b"\n")

    for n in range(commits):
        i = n % units
        stream.append(b"commit refs/heads/main\n")
        stream.append(b"committer bench <bench@localhost> %d +0000\n" % (stamp + n))
        msg = (
            f"ace · alex · episode {n} (task-{n % 20}): add 1\n\n"
            f"Complaint:\n  complaint number {n}\n\nEvolve-Episode: {n}\nEvolve-Recipe: ace\n"
            f"Evolve-Task: task-{n % 20}\nEvolve-Ops: add=ace-{i:010d}\nEvolve-Persona: alex\n"
        ).encode()
        data(msg)
        if n == 0:
            stream.append(f"from {head}\n".encode())
        stream.append(b"M 100644 inline memory/alex/ace-%010d.md\n" % i)
        data(unit_text(i, n))
    subprocess.run(["git", "fast-import", "--quiet"], input=b"".join(stream), cwd=root, check=True)
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=root, check=True)
    return Workspace(root)


def wall(argv: list[str], cwd: Path, repeats: int) -> float:
    """Median wall time of a subprocess, in ms (one warm-up run first)."""
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(argv, cwd=cwd, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


READ_UNITS = (
    "import pathlib, sys\n"
    "for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.md')): p.read_text(encoding='utf-8')\n"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--units", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--quick", action="store_true", help="1,000 commits, 100 units, 3 repeats (a fast check)"
    )
    args = parser.parse_args()
    if args.quick:
        args.commits, args.units, args.repeats = 1_000, 100, 3
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        t0 = time.perf_counter()
        ws = build(root, args.commits, args.units)
        refresh_commit_graph(ws.store)
        print(
            f"built {args.units} units / {args.commits} commits in {time.perf_counter() - t0:.1f}s"
        )
        unit = f"ace-{7 % args.units:010d}"
        evolve = [PY, "-m", "evolve"]
        r = args.repeats
        pass_ms = wall([PY, "-c", "pass"], root, r)
        git_walk = wall(["git", "log", "--format=%H%x00%B"], root, r)
        rows = [
            ("evolve --version", wall([*evolve, "--version"], root, r),
             "python -c pass", pass_ms, "<= 3x"),
            ("evolve log -n 50", wall([*evolve, "log", "-n", "50"], root, r),
             "git log -n 50 + python -c pass",
             wall(["git", "log", "-n", "50"], root, r) + pass_ms, "<= 100 ms and <= 2x"),
            ("evolve log -n 0 --json", wall([*evolve, "log", "-n", "0", "--json"], root, r),
             "git log --format=%H%x00%B", git_walk, "<= 2x"),
            ("evolve log --jsonl", wall([*evolve, "log", "--jsonl"], root, r),
             "git log --format=%H%x00%B", git_walk, "<= 2x"),
            ("evolve show UNIT --json", wall([*evolve, "show", unit, "--json"], root, r),
             "git log -p -- <file>",
             wall(["git", "log", "-p", "--", f"memory/alex/{unit}.md"], root, r),
             "<= 150 ms and <= 2x"),
            ("evolve memory --json", wall([*evolve, "memory", "--json"], root, r),
             "read 1,000 unit files", wall([PY, "-c", READ_UNITS, str(root / "memory")], root, r),
             "<= 150 ms"),
        ]  # fmt: skip
        print(f"\n{'command':<26} {'ms':>8}   {'floor':<32} {'ms':>8} {'ratio':>7}   target")
        for name, ms, floor, floor_ms, target in rows:
            print(
                f"{name:<26} {ms:8.1f}   {floor:<32} {floor_ms:8.1f} {ms / floor_ms:6.2f}x   {target}"
            )


if __name__ == "__main__":
    main()
