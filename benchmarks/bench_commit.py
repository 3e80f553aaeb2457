"""Cost of one per-episode commit (a one-file change) in a large workspace.

Compares evolve's store (`GitStore.commit`) with `git add` + `git commit` through the git CLI
on the same repository, 1,000 unit files and 10,000 commits of history, and prints both
median times and their ratio. Run: `python benchmarks/bench_commit.py [--files N --commits N]`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _repo import build_repo  # noqa: E402

from evolve.store import GitStore  # noqa: E402


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
        store = GitStore(root)
        cli: list[float] = []
        ours: list[float] = []
        for n in range(args.repeats):
            # Alternate the two so that caches and disk state favour neither.
            path = f"memory/unit-{n % args.files:04d}.md"
            (root / path).write_text(f"---\nid: x\n---\ncli edit {n}\n", encoding="utf-8")
            start = time.perf_counter()
            subprocess.run(["git", "add", "--", path], cwd=root, check=True)
            subprocess.run(["git", "commit", "-q", "-m", f"cli {n}"], cwd=root, check=True)
            cli.append(time.perf_counter() - start)

            (root / path).write_text(f"---\nid: x\n---\nstore edit {n}\n", encoding="utf-8")
            start = time.perf_counter()
            sha = store.commit([path], f"store {n}", trailers={"Evolve-Episode": str(n)})
            ours.append(time.perf_counter() - start)
            assert sha is not None
        dirty = store.dirty_paths()
        assert not dirty, f"the store left the tree dirty: {dirty[:5]}"
        cli_ms = statistics.median(cli) * 1000
        ours_ms = statistics.median(ours) * 1000
        print(f"git add + git commit (CLI): {cli_ms:7.2f} ms median over {args.repeats}")
        print(f"evolve GitStore.commit:     {ours_ms:7.2f} ms median over {args.repeats}")
        print(f"ratio store / CLI:          {ours_ms / cli_ms:7.2f}  (goal: <= 1.00)")


if __name__ == "__main__":
    main()
