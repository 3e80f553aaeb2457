"""Cost of one per-episode commit (a one-file change) in a large workspace.

Measures, on one repository of 1,000 unit files and 10,000 commits of history, in the same
run and interleaved so that caches and disk state favour none of them:

- the git CLI: `git add` + `git commit` (the reference, ratio 1.00);
- the store's fast path (`GitStore.commit` writing objects and the ref from Python), used
  when the repository has no commit hooks and does not ask for signing;
- the store's git-commit path (`GitStore.commit` through `git commit`), used when it does;
- the floor: one no-op git process (`git rev-parse --verify HEAD`), below which nothing that
  runs git can go.

and prints each as a median and as a ratio to the git CLI.
Run: `python benchmarks/bench_commit.py [--files N --commits N --repeats N]`.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _repo import build_repo  # noqa: E402

from evolve.store import GitStore  # noqa: E402


def _timed(action: Callable[..., object], *args: object) -> float:
    start = time.perf_counter()
    action(*args)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=40)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        t0 = time.perf_counter()
        build_repo(root, files=args.files, commits=args.commits)
        print(
            f"built {args.files} files / {args.commits} commits in {time.perf_counter() - t0:.1f}s"
        )
        fast = GitStore(root)
        fast.commit_path = "fast"
        slow = GitStore(root)
        slow.commit_path = "git"
        assert not fast.commit_hooks(), "the benchmark repository must have no hooks"
        times: dict[str, list[float]] = {"cli": [], "fast": [], "git": [], "floor": []}

        def edit(n: int, who: str) -> str:
            path = f"memory/unit-{n % args.files:04d}.md"
            (root / path).write_text(f"---\nid: x\n---\n{who} edit {n}\n", encoding="utf-8")
            return path

        def cli(path: str, n: int) -> None:
            subprocess.run(["git", "add", "--", path], cwd=root, check=True)
            subprocess.run(["git", "commit", "-q", "-m", f"cli {n}"], cwd=root, check=True)

        def store(s: GitStore, path: str, n: int) -> None:
            assert s.commit([path], f"store {n}", trailers={"Evolve-Episode": str(n)}) is not None

        def floor() -> None:
            subprocess.run(
                ["git", "rev-parse", "--verify", "HEAD"],
                cwd=root,
                check=True,
                stdout=subprocess.DEVNULL,
            )

        for n in range(args.repeats):
            # Rotate the order so that no method always runs first or last.
            order = ["cli", "fast", "git", "floor"]
            shift = n % len(order)
            for method in order[shift:] + order[:shift]:
                if method == "floor":
                    times["floor"].append(_timed(floor))
                    continue
                path = edit(n, method)
                if method == "cli":
                    times["cli"].append(_timed(cli, path, n))
                else:
                    s = fast if method == "fast" else slow
                    times[method].append(_timed(store, s, path, n))
        dirty = fast.dirty_paths()
        assert not dirty, f"the store left the tree dirty: {dirty[:5]}"
        fast.close()
        slow.close()
        med = {k: statistics.median(v) * 1000 for k, v in times.items()}
        cli_ms = med["cli"]
        rows = [
            ("git add + git commit (CLI)", "cli", "reference"),
            ("store, fast path", "fast", "goal: <= 1.00"),
            ("store, git-commit path", "git", "hooks/signing; goal: about 1"),
            ("floor: one git process", "floor", "nothing running git is cheaper"),
        ]
        print(f"median over {args.repeats} commits each; ratio = time / CLI time")
        for label, key, note in rows:
            print(f"{label:28} {med[key]:7.2f} ms   ratio {med[key] / cli_ms:5.2f}   ({note})")
        print(
            f"floor beside the paths: fast {med['fast'] / med['floor']:.2f}x floor, "
            f"git-commit {med['git'] / med['floor']:.2f}x floor, CLI {cli_ms / med['floor']:.2f}x"
            " floor"
        )


if __name__ == "__main__":
    main()
