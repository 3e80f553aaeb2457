"""Reading commands end to end, as a user runs them, against their floors.

Builds a workspace with 1,000 units and 10,000 memory commits carrying evolve's trailers
(through `git fast-import`, then a commit-graph with changed-path Bloom filters as `train`
leaves it), and times every command as a subprocess beside its floor, in the same run:

    evolve --version          vs  python -c pass
    evolve log -n 50          vs  git log -n 50 + python -c pass
    evolve log -n 0 --json    vs  git log --format=%H%x00%B (full walk)
    evolve show UNIT          vs  git log -p -- <unit file>
    evolve memory             vs  reading the 1,000 unit files (python)

Each row prints the median wall time of both sides, their ratio, the CPU time of the
command (its and its children's, less sensitive to a busy machine than wall time) and the
target from the issue, with "ok" or "MISSED". The commands are timed round-robin (every
command once per round), so a busy machine weighs on both sides alike. The targets are for
the 10,000-commit, 1,000-unit workspace (`--quick` only checks that everything runs). Every command runs once before it is timed:
Python writes its bytecode then (the subprocesses run without PYTHONDONTWRITEBYTECODE, as
an installed package has its bytecode), `evolve memory` validates `evolve.yaml` once and
remembers it (`.git/evolve-config.cache`), and a full `evolve log --json` remembers each
commit's entry (`.git/evolve-log.cache`); the "cold" rows time the first run, each cache
removed before every run. Run: `python benchmarks/bench_history.py [--commits N --units N --repeats R]`,
or `--quick` for a small workspace.
"""

from __future__ import annotations

import argparse
import os
import resource
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


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


class Slot:
    """One command to time; every slot is run once per round, round-robin, so that a busy
    machine weighs on every command alike."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.argv, self.cwd = argv, cwd
        self.walls: list[float] = []
        self.cpus: list[float] = []

    def run(self, record: bool) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(self.argv, cwd=self.cwd, check=True, stdout=subprocess.DEVNULL, env=ENV)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if record:
            self.walls.append(wall * 1000)
            self.cpus.append(
                (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
            )

    @property
    def ms(self) -> tuple[float, float]:
        """(median wall ms, median CPU ms of the process and its children)."""
        return statistics.median(self.walls), statistics.median(self.cpus)


class Sum:
    """Two floors run one after the other (git's command, then Python's start-up)."""

    def __init__(self, *slots: Slot) -> None:
        self.slots = slots

    @property
    def ms(self) -> tuple[float, float]:
        walls = [sum(w) for w in zip(*(s.walls for s in self.slots), strict=True)]
        cpus = [sum(c) for c in zip(*(s.cpus for s in self.slots), strict=True)]
        return statistics.median(walls), statistics.median(cpus)


SLOTS: list[Slot] = []


def timed(argv: list[str], cwd: Path, repeats: int) -> Slot:
    """A command to time (see :func:`measure`)."""
    slot = Slot(argv, cwd)
    SLOTS.append(slot)
    return slot


def measure(repeats: int) -> None:
    """Run every command once untimed, then `repeats` timed rounds of all of them."""
    for slot in SLOTS:
        slot.run(record=False)
    for _ in range(repeats):
        for slot in SLOTS:
            slot.run(record=True)


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
        floor_pass = timed([PY, "-c", "pass"], root, r)
        floor_log50 = timed(["git", "log", "-n", "50"], root, r)
        floor_walk = timed(["git", "log", "--format=%H%x00%B"], root, r)
        floor_patch = timed(["git", "log", "-p", "--", f"memory/alex/{unit}.md"], root, r)
        floor_read = timed([PY, "-c", READ_UNITS, str(root / "memory")], root, r)

        def cold(cache: str, *argv: str) -> list[str]:
            """The command with its cache in .git/ removed first (a first run: `sh` and `rm`
            add a few milliseconds)."""
            quoted = " ".join(f"'{a}'" for a in [*evolve, *argv])
            return ["sh", "-c", f"rm -f .git/{cache} && exec {quoted}"]

        both = Sum(floor_log50, floor_pass)
        rows: list[tuple[str, Slot, str, Slot | Sum, float | None, float | None]] = [
            ("evolve --version", timed([*evolve, "--version"], root, r),
             "python -c pass", floor_pass, 3.0, None),
            ("evolve log -n 50", timed([*evolve, "log", "-n", "50"], root, r),
             "git log -n 50 + python -c pass", both, 2.0, 100.0),
            ("evolve log -n 0 --json", timed([*evolve, "log", "-n", "0", "--json"], root, r),
             "git log --format=%H%x00%B", floor_walk, 2.0, None),
            ("  cold: no log cache", timed(cold("evolve-log.cache", "log", "-n", "0", "--json"),
             root, r), "git log --format=%H%x00%B", floor_walk, None, None),
            ("evolve log --jsonl", timed([*evolve, "log", "--jsonl"], root, r),
             "git log --format=%H%x00%B", floor_walk, 2.0, None),
            ("evolve show UNIT", timed([*evolve, "show", unit], root, r),
             "git log -p -- <file>", floor_patch, 2.0, 150.0),
            ("evolve show UNIT --json", timed([*evolve, "show", unit, "--json"], root, r),
             "git log -p -- <file>", floor_patch, 2.0, 150.0),
            ("evolve memory", timed([*evolve, "memory"], root, r),
             f"read {args.units:,} unit files", floor_read, None, 150.0),
            ("evolve memory --json", timed([*evolve, "memory", "--json"], root, r),
             f"read {args.units:,} unit files", floor_read, None, 150.0),
            ("  cold: evolve.yaml new", timed(cold("evolve-config.cache", "memory"), root, r),
             f"read {args.units:,} unit files", floor_read, None, None),
        ]  # fmt: skip
        measure(r)
        print(
            f"\n{'command':<24} {'wall ms':>8} {'cpu ms':>7}   {'floor':<31} {'wall ms':>8}"
            f" {'cpu ms':>7} {'ratio':>6}   target"
        )
        for name, slot, floor, floor_slot, ratio, limit in rows:
            (ms, cpu), (floor_ms, floor_cpu) = slot.ms, floor_slot.ms
            targets = []
            ok = True
            if ratio is None and limit is None:
                print(
                    f"{name:<24} {ms:8.1f} {cpu:7.1f}   {floor:<31} {floor_ms:8.1f} {floor_cpu:7.1f}"
                    f" {ms / floor_ms:5.2f}x   (no target: a first run)"
                )
                continue
            if ratio is not None:
                targets.append(f"<= {ratio:g}x")
                ok = ok and ms <= ratio * floor_ms
            if limit is not None:
                targets.append(f"<= {limit:g} ms")
                ok = ok and ms <= limit
            print(
                f"{name:<24} {ms:8.1f} {cpu:7.1f}   {floor:<31} {floor_ms:8.1f} {floor_cpu:7.1f}"
                f" {ms / floor_ms:5.2f}x   {' and '.join(targets):<20} {'ok' if ok else 'MISSED'}"
            )


if __name__ == "__main__":
    main()
