"""`evolve log`, `evolve show` and `evolve memory --as-of` on a 10,000-commit workspace.

Builds a workspace (1,000 units, 10,000 memory commits with evolve's trailers, through
`git fast-import`), then times each command in-process (the command's own work) and as a
subprocess (what a user waits for, Python start-up included), first without and then with
a commit-graph carrying changed-path Bloom filters, and prints `git log -n 50` beside them.
Run: `python benchmarks/bench_history.py [--commits N --units N]`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from evolve.history import history, memory_as_of, refresh_commit_graph, show_unit
from evolve.memory import MemoryUnit, dump_unit
from evolve.workspace import Workspace, init_workspace


def unit_text(i: int, n: int) -> bytes:
    unit = MemoryUnit(
        id=f"ace-{i:010d}", recipe="ace", kind="bullet", scope="user:alex", created_episode=0,
        updated_episode=n, helpful=n % 7, harmful=0, text=f"Statement {i} as of episode {n}.",
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


def timed(func: Callable[[], object], repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def cli(root: Path, *args: str) -> Callable[[], object]:
    return lambda: subprocess.run(
        [sys.executable, "-m", "evolve", *args], cwd=root, check=True, capture_output=True
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--units", type=int, default=1_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        t0 = time.perf_counter()
        ws = build(root, args.commits, args.units)
        print(
            f"built {args.units} units / {args.commits} commits in {time.perf_counter() - t0:.1f}s"
        )
        unit = "ace-0000000007"
        old = f"HEAD~{args.commits // 2}"
        rows: list[tuple[str, Callable[[], object]]] = [
            (
                "git log -n 50 (reference)",
                lambda: subprocess.run(
                    ["git", "log", "-n", "50"], cwd=root, check=True, capture_output=True
                ),
            ),
            ("evolve log (50 entries), in-process", lambda: history(ws.store, max_count=50)),
            ("evolve show UNIT, in-process", lambda: show_unit(ws, unit)),
            (
                f"evolve memory --as-of {old}, in-process",
                lambda: memory_as_of(ws.store, old, "user:alex"),
            ),
            ("evolve log, CLI", cli(root, "log", "--json")),
            ("evolve show UNIT, CLI", cli(root, "show", unit, "--json")),
            (f"evolve memory --as-of {old}, CLI", cli(root, "memory", "--as-of", old, "--json")),
            ("evolve --version (start-up alone)", cli(root, "--version")),
        ]
        for label in ("without a commit-graph", "with a commit-graph (changed-path Bloom filters)"):
            if label.startswith("with "):
                t1 = time.perf_counter()
                refresh_commit_graph(ws.store)
                print(f"\ncommit-graph written in {time.perf_counter() - t1:.2f}s")
            print(f"\n{label}:")
            for name, func in rows:
                print(f"  {name:<48} {timed(func):8.1f} ms")


if __name__ == "__main__":
    main()
