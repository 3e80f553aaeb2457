"""Harness overhead of one training episode, end to end, at 1,000 units and 10,000 commits.

Builds a workspace (`_workspace.build_workspace`: `evolve init`'s files, 1,000 TEPA units, a
10,000-commit history with a commit-graph) and measures, in one run:

- harness: a separate process runs the real training loop (`evolve.train.train`, as
  `evolve train --recipe tepa` does: lock, recovery, the stat walk of memory/, rendering,
  parameters.yaml, the verifier, the episode with its judge and record, the complaint, the
  recipe's update, the journaled applier, the commit message and trailers, the store's commit,
  the run-log line) with scripted models that answer at once: the agent completes the task
  (so every episode is rejected and complained about) and the updater writes a new TEPA
  precedent for the same key (so every episode commits). Each episode is timed from the end
  of the one before (the first, which pays the first full read, is left out); the models'
  own time is measured and taken off.
- floor: on a copy of the same workspace, the same changes made the way a person makes them:
  the files written, then `git add` + `git commit` with the same message, as subprocesses.
  The two sides alternate in rounds (`--rounds`), so a busy moment of the machine hits both.
- `python -c pass`: the cost of starting any process.
- `evolve train` (sim): the whole command as a user runs it with the sim models, divided by
  its episodes (start-up and the models included), for scale.

Prints the medians and the ratios (target: harness <= 1.25x the floor).

With `--old REV`, the same episodes also run on the code at REV (exported with `git archive`),
on a copy of the workspace, in the same rounds.

Run: `python benchmarks/bench_train_overhead.py [--units N --commits N --episodes N]`, or
`--quick` (100 units, 1,000 commits, 10 episodes); `--profile` prints the harness process's
cProfile (cumulative) instead of running the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _workspace import PERSONA, RECIPE, build_workspace  # noqa: E402

SIGN_KEY = "sms.signoff"


def _child(root: Path, episodes: int, profile: bool) -> None:
    """Run the real training loop on `root` and print one JSON line of per-episode timings."""
    from evolve.llm import JsonSchema, Message, MockLLM
    from evolve.train import train
    from evolve.workspace import Workspace

    model_s = [0.0]

    def timed(reply: Any) -> Any:
        def respond(messages: Sequence[Message], schema: JsonSchema | None) -> str:
            start = time.perf_counter()
            text = str(reply())
            model_s[0] += time.perf_counter() - start
            return text

        return respond

    count = [0]

    def update_reply() -> str:
        count[0] += 1
        sentence = f"Sign texts with '- Alex {count[0]}'."
        return json.dumps({"precedents": [{"key": SIGN_KEY, "sentence": sentence}]})

    agent = MockLLM(timed(lambda: '{"tool": "supervisor__complete_task", "arguments": {}}'))
    updater = MockLLM(timed(update_reply))
    stamps: list[tuple[float, float, float]] = []

    def progress(done: int, total: int) -> None:
        stamps.append((time.perf_counter(), time.process_time(), model_s[0]))

    ws = Workspace(root)
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    start = (time.perf_counter(), time.process_time(), 0.0)
    report = train(
        ws, recipe=RECIPE, episodes=episodes, agent_llm=agent, updater_llm=updater,
        persona=PERSONA, progress=progress,
    )  # fmt: skip
    if profiler is not None:
        import pstats

        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(60)
    marks = [start, *stamps]
    wall = [b[0] - a[0] - (b[2] - a[2]) for a, b in zip(marks, marks[1:], strict=False)]
    cpu = [b[1] - a[1] - (b[2] - a[2]) for a, b in zip(marks, marks[1:], strict=False)]
    out = {
        "wall": wall,
        "cpu": cpu,
        "model_s": model_s[0],
        "commits": [o.commit for o in report.outcomes],
    }
    print(json.dumps(out))


def _python(
    *args: str, cwd: Path | None = None, src: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run this Python on `args`, with `src` (another version's code) first on the path."""
    path = ([str(src)] if src is not None else []) + sys.path
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )


def _git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, check=True).stdout


def _floor(source: Path, floor: Path, commits: Sequence[str]) -> list[float]:
    """Replay each of `commits` (made in `source`) on `floor` as `git add` + `git commit`."""
    times: list[float] = []
    message_file = floor.parent / "message.txt"
    for sha in commits:
        changed = _git(source, "diff-tree", "--no-commit-id", "-r", "--name-only", "-z", sha)
        paths = [p.decode() for p in changed.split(b"\0") if p]
        contents = {}
        for path in paths:
            exists = subprocess.run(
                ["git", "cat-file", "-e", f"{sha}:{path}"], cwd=source, capture_output=True
            )
            contents[path] = (
                _git(source, "show", f"{sha}:{path}") if not exists.returncode else None
            )
        message_file.write_bytes(_git(source, "log", "-1", "--format=%B", sha))
        for path, data in contents.items():
            target = floor / path
            if data is None:
                target.unlink(missing_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        start = time.perf_counter()
        subprocess.run(["git", "add", "-A", "--", *paths], cwd=floor, check=True)
        subprocess.run(
            ["git", "commit", "-q", "--cleanup=verbatim", "-F", str(message_file)],
            cwd=floor,
            check=True,
        )
        times.append(time.perf_counter() - start)
    return times


def _python_pass(repeats: int = 10) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--units", type=int, default=1_000)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument(
        "--quick", action="store_true", help="100 units, 1,000 commits, 10 episodes"
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the two sides")
    parser.add_argument("--old", help="also run the harness of this revision (e.g. 46b70e9)")
    parser.add_argument("--profile", action="store_true", help="profile the harness process")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        _child(args.child, args.episodes, args.profile)
        return
    if args.quick:
        args.units, args.commits, args.episodes = 100, 1_000, 10
    script = str(Path(__file__).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        ws = Path(tmp) / "ws"
        build_workspace(ws, units=args.units, commits=args.commits)
        floor, cli, old_ws = Path(tmp) / "floor", Path(tmp) / "cli", Path(tmp) / "old"
        shutil.copytree(ws, floor, symlinks=True)
        shutil.copytree(ws, cli, symlinks=True)
        old_src = None
        if args.old:
            from bench_eval import export

            shutil.copytree(ws, old_ws, symlinks=True)
            old_src = export(args.old, Path(tmp) / "old-code")
        print(
            f"built {args.units} units / {args.commits} commits in {time.perf_counter() - t0:.1f}s"
        )
        if args.profile:
            child = [script, "--child", str(ws), "--episodes", str(args.episodes), "--profile"]
            print(_python(*child).stderr)
            return
        # Rounds alternate the two sides, so that a busy moment of the machine hits both.
        walls: list[float] = []
        cpus: list[float] = []
        old_walls: list[float] = []
        plain: list[float] = []
        model_s = 0.0
        per_round = max(2, args.episodes // args.rounds)
        for r in range(args.rounds):
            target = str(per_round * (r + 1))
            result = json.loads(_python(script, "--child", str(ws), "--episodes", target).stdout)
            commits = [c for c in result["commits"] if c]
            if len(commits) != per_round:
                raise SystemExit(f"{len(commits)} of {per_round} episodes committed; need all")
            walls += result["wall"][1:]  # the first episode of a process pays the first read
            cpus += result["cpu"][1:]
            model_s += result["model_s"]
            plain += _floor(ws, floor, commits)
            if old_src is not None:  # the same episodes by the old code, on its own copy
                child = [script, "--child", str(old_ws), "--episodes", target]
                old_walls += json.loads(_python(*child, src=old_src).stdout)["wall"][1:]
        start = time.perf_counter()
        before = os.times()
        _python("-m", "evolve", "train", "--episodes", str(args.episodes), "--json", cwd=cli)
        after = os.times()
        sim_wall = (time.perf_counter() - start) / args.episodes
        sim_cpu = (after.children_user + after.children_system) - (
            before.children_user + before.children_system
        )
        py_pass = _python_pass()
    wall = statistics.median(walls) * 1000
    cpu = statistics.median(cpus) * 1000
    base = statistics.median(plain) * 1000
    py = py_pass * 1000
    sim_ms = sim_wall * 1000
    rows = [
        ("python -c pass", py, ""),
        ("git add + git commit (floor)", base, ""),
        ("harness per episode (wall)", wall, "target <= 1.25x the floor"),
        ("harness per episode (CPU)", cpu, ""),
        *(
            [(f"harness per episode, {args.old} (wall)", statistics.median(old_walls) * 1000, "")]
            if old_walls
            else []
        ),
        ("evolve train (sim) / episode", sim_ms, f"CPU {sim_cpu / args.episodes * 1000:.1f} ms"),
    ]
    print(
        f"\n{args.units} units, {args.commits} commits, {per_round * args.rounds} episodes in "
        f"{args.rounds} rounds (medians)"
    )
    print(f"{'':<36} {'ms':>8} {'x floor':>8} {'x python':>9}")
    for name, ms, note in rows:
        print(f"{name:<36} {ms:8.2f} {ms / base:7.2f}x {ms / py:8.2f}x  {note}")
    print(f"model time taken off the harness: {model_s * 1000:.2f} ms in all")


if __name__ == "__main__":
    main()
