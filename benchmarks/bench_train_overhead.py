"""Harness overhead of one training episode, end to end, at 1,000 units and 10,000 commits.

Builds a workspace with 1,000 TEPA units and a 10,000-commit history (through `git
fast-import`, then a commit-graph, as `train` leaves it) and times, per episode, every step
the training loop in `evolve.train._train` pays besides the agent's own episode:

    read      UnitReader.load + in_scope (the stat walk of memory/, re-parsing changes only)
    render    render_for (the memory the agent is given)
    setup     parameters.yaml (max_turns), the verifier (built, then run on the attempt)
    update    the recipe's observe() with a scripted `mock` model
    apply     the applier writes the unit files (journaled)
    message   commit_message (subject, body with the complaint and the operations)
    commit    store.commit with the loop's trailers, then the journal's end
    runlog    one canonical JSON line appended to generations/runs/train-*.jsonl

and, in the same run on the same repository, the same change made the way a person makes it:
write the files, then `git add` + `git commit` as subprocesses. Prints the medians, their
ratio (target <= 1.25) and each step's median.

Run: `python benchmarks/bench_train_overhead.py [--units N --commits N --episodes N]`, or
`--quick` (100 units, 1,000 commits, 10 episodes) for a fast check.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from evolve._io import canonical_json
from evolve.applier import MemoryApplier
from evolve.evaluate import make_verifier
from evolve.history import refresh_commit_graph
from evolve.llm import MockLLM
from evolve.memory import MemoryUnit, UnitReader, dump_unit, in_scope
from evolve.store import EPISODE, KIND, OPS, PERSONA, RECIPE, TASK, format_ops
from evolve.train._train import STREAM, commit_message
from evolve.updaters import EpisodeView, RecipeContext, get_recipe, render_for
from evolve.workspace import Workspace, init_workspace, max_turns

SCOPE = "user:alex"
STEPS = ("read", "render", "setup", "update", "apply", "message", "commit", "runlog")


def unit_bytes(i: int, n: int) -> bytes:
    unit = MemoryUnit(
        id=f"tepa-seed{i:05d}", recipe="tepa", kind="precedent", scope=SCOPE,
        created_episode=0, updated_episode=n, key=f"other.detail_{i:05d}",
        text=f"Preference number {i} about detail {i}, as of episode {n}.",
    )  # fmt: skip
    return dump_unit(unit).encode("utf-8")


def build(root: Path, units: int, commits: int) -> Workspace:
    """A workspace whose history has `commits` commits: the first adds every unit, each later
    one changes one unit (round-robin), each with the training loop's trailers."""
    ws = init_workspace(root)
    head = ws.store.head()
    stream: list[bytes] = []

    def data(payload: bytes) -> None:
        stream.extend([b"data %d\n" % len(payload), payload, b"\n"])

    for n in range(commits):
        stream.append(b"commit refs/heads/main\n")
        stream.append(b"committer bench <bench@localhost> %d +0000\n" % (1_700_000_000 + n))
        data(
            f"tepa · alex · episode {n} (task-{n % 20}): modify 1\n\nEvolve-Episode: {n}\n"
            f"Evolve-Recipe: tepa\nEvolve-Kind: train\nEvolve-Persona: alex\n".encode()
        )
        if n == 0:
            stream.append(f"from {head}\n".encode())
            for i in range(units):
                stream.append(b"M 100644 inline memory/alex/tepa-seed%05d.md\n" % i)
                data(unit_bytes(i, 0))
        else:
            stream.append(b"M 100644 inline memory/alex/tepa-seed%05d.md\n" % (n % units))
            data(unit_bytes(n % units, n))
    subprocess.run(["git", "fast-import", "--quiet"], input=b"".join(stream), cwd=root, check=True)
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=root, check=True)
    for key, value in (("user.name", "bench"), ("user.email", "bench@localhost")):
        subprocess.run(["git", "config", key, value], cwd=root, check=True)
    ws = Workspace(root)
    refresh_commit_graph(ws.store)
    return ws


def run(
    ws: Workspace, units: int, episodes: int
) -> tuple[list[float], list[float], dict[str, list[float]]]:
    recipe = get_recipe("tepa")
    reader = UnitReader(ws.root)
    applier = MemoryApplier(ws, SCOPE)
    store = ws.store
    log_path = ws.runs_dir / "train-bench.jsonl"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    reader.load()  # as in the loop: the first read parses every file, later ones what changed
    steps: dict[str, list[float]] = {k: [] for k in STEPS}
    totals, plain = [], []
    for n in range(episodes):
        complaint = f"You signed my text the wrong way again (episode {n})."
        reply = json.dumps(
            {"precedents": [{"key": "sms.signoff", "sentence": f"Sign texts with variant {n}."}]}
        )
        t = [time.perf_counter()]
        loaded = reader.load()
        visible = in_scope(loaded, SCOPE)
        t.append(time.perf_counter())
        render_for(visible, SCOPE, ("tepa",))
        t.append(time.perf_counter())
        max_turns(ws.root, ws.config)
        verifier = make_verifier(visible, ("tepa",))
        if verifier is not None:
            verifier([])
        t.append(time.perf_counter())
        ctx = RecipeContext(
            units=visible, scope=SCOPE,
            episode=EpisodeView(n, f"task-{n}", "Text Sam that I am late.", "", complaint, False),
            llm=MockLLM([reply]), seed=n, now="2026-01-01T00:00:00+00:00",
            max_memory_chars=ws.config.memory.max_memory_chars,
        )  # fmt: skip
        update = recipe.observe(ctx)
        t.append(time.perf_counter())
        applied = applier.apply(update.ops, loaded)
        t.append(time.perf_counter())
        subject, body = commit_message(
            "tepa", n, f"task-{n}", complaint, update, applied, persona="alex"
        )
        trailers = [
            (EPISODE, str(n)), (RECIPE, "tepa"), (TASK, f"task-{n}"),
            (OPS, format_ops((op.op, op.id) for op in applied.applied)), (PERSONA, "alex"),
            (STREAM, "alex/tepa/0/complaint"), (KIND, "train"),
        ]  # fmt: skip
        t.append(time.perf_counter())
        sha = store.commit(applied.paths, subject, body=body, trailers=trailers)
        applier.done()
        if sha is None:
            raise SystemExit("the scripted update changed nothing; the benchmark needs a change")
        t.append(time.perf_counter())
        record = {
            "episode": n, "task": f"task-{n}", "commit": sha, "refused": [], "accepted": False,
            "violations": ["sms_signoff"], "turns": 3, "tokens": {"in": 1200, "out": 80},
        }  # fmt: skip
        with log_path.open("a", encoding="utf-8") as handle:
            handle.write(canonical_json(record) + "\n")
        t.append(time.perf_counter())
        for key, a, b in zip(STEPS, t[:-1], t[1:], strict=True):
            steps[key].append(b - a)
        totals.append(t[-1] - t[0])
        # The same change as a person makes it: the files the episode wrote, then git.
        files = [ws.root / p for p in applied.paths]
        contents = [f.read_bytes() if f.exists() else None for f in files]
        for f, c in zip(files, contents, strict=True):
            if c is not None:
                f.write_bytes(c + b"\n")
        start = time.perf_counter()
        subprocess.run(["git", "add", "--", *applied.paths], cwd=ws.root, check=True)
        subprocess.run(["git", "commit", "-q", "-m", subject], cwd=ws.root, check=True)
        plain.append(time.perf_counter() - start)
    return totals, plain, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--units", type=int, default=1_000)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument(
        "--quick", action="store_true", help="100 units, 1,000 commits, 10 episodes"
    )
    args = parser.parse_args()
    if args.quick:
        args.units, args.commits, args.episodes = 100, 1_000, 10
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        ws = build(Path(tmp) / "ws", args.units, args.commits)
        print(
            f"built {args.units} units / {args.commits} commits in {time.perf_counter() - t0:.1f}s"
        )
        totals, plain, steps = run(ws, args.units, args.episodes)
    total, base = statistics.median(totals) * 1000, statistics.median(plain) * 1000
    print(f"\n{'per episode':<34} {'ms':>8}")
    print(f"{'harness (every step above)':<34} {total:8.2f}")
    print(f"{'git add + git commit (subprocess)':<34} {base:8.2f}")
    print(f"{'ratio':<34} {total / base:7.2f}x   target <= 1.25x")
    print(
        "steps (median ms): "
        + " ".join(f"{k}={statistics.median(v) * 1000:.2f}" for k, v in steps.items())
    )


if __name__ == "__main__":
    main()
