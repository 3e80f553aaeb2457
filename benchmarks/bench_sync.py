"""What does `evolve push` / `evolve pull` cost beyond git's own push and fetch + merge?

The target: sending and receiving 1,000 new episode commits within 1.5x of the same
`git push` / `git fetch` plus merge, measured in one run. The set-up: a workspace pushed to a
bare remote; then 1,000 episode commits (each one unit file under memory/alex/ with the
training trailers) and their records on `refs/evolve/train` (the stream record, the run record,
a refusal record every tenth episode, the timeline). Each repetition starts from copies of the
same repositories, interleaved so that caches favour neither:

- push: `evolve push origin` against `git push origin HEAD 'refs/evolve/*:refs/evolve/*'`
  into a copy of the remote as it was before;
- pull: in a copy of a clone made before the 1,000 commits, `evolve pull origin` against
  `git fetch origin main 'refs/evolve/*:refs/evolve/*'` + `git merge --ff-only origin/main`.

Each is measured both as the command (a process: evolve's Python start-up included) and as
the Python API (`evolve.remote.push` / `pull` in this process), and printed beside the target.

    python benchmarks/bench_sync.py [--commits 1000 --repeats 5]
    python benchmarks/bench_sync.py --soak [--episodes 50 --seed 0]

`--soak` runs the sync soak instead (`benchmarks/soak_sync.py`: three learners training at
once against one bare remote, then every check) and prints its figures and any problem.
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from evolve.remote import clone, pull, push
from evolve.workspace import Workspace, init_workspace

TARGET = 1.5
STREAM = "alex/ace/0/instance"


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


def _episodes(ws: Workspace, commits: int) -> None:
    """`commits` episode commits on the branch and their records on refs/evolve/train."""
    store = ws.store
    folder = ws.root / "memory" / "alex"
    folder.mkdir(parents=True, exist_ok=True)
    made: dict[str, str] = {}
    for k in range(commits):
        rel = f"memory/alex/ace-{k:06d}.md"
        (ws.root / rel).write_text(
            f"---\nid: ace-{k:06d}\nscope: user:alex\nrecipe: ace\n---\nLesson {k}.\n",
            encoding="utf-8",
        )
        sha = store.commit(
            [rel],
            f"ace · alex · episode {k}: add 1",
            trailers=[
                ("Evolve-Episode", str(k)), ("Evolve-Recipe", "ace"), ("Evolve-Task", f"t-{k}"),
                ("Evolve-Ops", f"add=ace-{k:06d}"), ("Evolve-Stream", STREAM),
                ("Evolve-Clock", str(k)),
            ],
        )  # fmt: skip
        assert sha is not None
        made[str(k)] = sha
        if k % 10 == 9:
            store.write_side_ref(
                "refs/evolve/train",
                {f"refusals/{STREAM}/{k:06d}-{sha[:12]}.txt": b"refused add: tombstoned\n"},
                f"ace · alex · episode {k}: refused 1",
                trailers=[("Evolve-Kind", "refusal")],
            )
    import json

    segment = {"stream": STREAM, "start": 0, "end": commits, "clock": 0}
    store.write_side_ref(
        "refs/evolve/train",
        {
            "timeline/alex.json": json.dumps({"persona": "alex", "segments": [segment]}).encode(),
            f"streams/{STREAM}.json": json.dumps({"stream": STREAM, "commits": made}).encode(),
            f"runs/{STREAM}.json": json.dumps(
                {"episode": commits - 1, "head": store.head(), "stream": STREAM}
            ).encode(),
        },
        f"stream {STREAM}: episodes 0..{commits - 1}",
    )


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _timed(action: Callable[[], object]) -> tuple[float, float]:
    """(wall ms, CPU ms of this process and the processes it waited for)."""
    start, cpu = time.perf_counter(), _cpu()
    action()
    return (time.perf_counter() - start) * 1000, (_cpu() - cpu) * 1000


def _copy(src: Path, dest: Path) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest, symlinks=True)
    return dest


def _set_url(repo: Path, url: Path) -> None:
    _git(repo, "remote", "set-url", "origin", str(url))


def _soak(learners: int, episodes: int, seed: int) -> None:
    import json

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from soak_sync import soak

    for role in ("AUTHOR", "COMMITTER"):  # the learners commit hand notes with git
        os.environ.setdefault(f"GIT_{role}_NAME", "evolve soak")
        os.environ.setdefault(f"GIT_{role}_EMAIL", "soak@evolve.invalid")
    with tempfile.TemporaryDirectory() as tmp:
        done = soak(Path(tmp), learners=learners, episodes=episodes, seed=seed)
    print(json.dumps(done.figures, indent=2, sort_keys=True))
    for problem in done.problems:
        print(f"PROBLEM: {problem}")
    print(f"{len(done.problems)} problem(s), load {os.getloadavg()[0]:.1f}")
    if done.problems:
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--soak", action="store_true", help="run the sync soak instead")
    parser.add_argument("--episodes", type=int, default=50, help="--soak: episodes a learner")
    parser.add_argument("--learners", type=int, default=3, help="--soak: learners")
    parser.add_argument("--seed", type=int, default=0, help="--soak: the seed of their choices")
    args = parser.parse_args()
    if args.soak:
        _soak(args.learners, args.episodes, args.seed)
        return
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        ws = init_workspace(base / "ws")
        bare0 = base / "remote0.git"
        _git(base, "init", "--quiet", "--bare", "--initial-branch=main", str(bare0))
        _git(ws.root, "remote", "add", "origin", str(bare0))
        push(ws)
        behind, _ = clone(str(bare0), base / "behind0")  # a learner before the commits
        print(f"making {args.commits:,} episode commits ...", flush=True)
        _episodes(ws, args.commits)
        ahead = base / "remote1.git"  # the remote after the commits, for the pulls
        _copy(bare0, ahead)
        _set_url(ws.root, ahead)
        push(ws)
        ws_copy = base / "ws-copy"
        rows: dict[str, list[tuple[float, float]]] = {k: [] for k in (
            "evolve push", "git push", "push()", "git push (api row)",
            "evolve pull", "git fetch + merge", "pull()", "git fetch + merge (api row)",
        )}  # fmt: skip
        evolve_cmd = [sys.executable, "-m", "evolve"]

        def cli_push(repo: Path) -> None:
            subprocess.run([*evolve_cmd, "push", "origin"], cwd=repo, check=True,
                           capture_output=True)  # fmt: skip

        def api_push(repo: Path) -> None:
            push(Workspace(repo), "origin")

        def git_push(repo: Path) -> None:
            _git(repo, "push", "--quiet", "origin", "HEAD", "refs/evolve/*:refs/evolve/*")

        def cli_pull(repo: Path) -> None:
            subprocess.run([*evolve_cmd, "pull", "origin"], cwd=repo, check=True,
                           capture_output=True)  # fmt: skip

        def api_pull(repo: Path) -> None:
            pull(Workspace(repo), "origin")

        def git_pull(repo: Path) -> None:
            _git(repo, "fetch", "--quiet", "origin", "+main:refs/remotes/origin/main",
                 "refs/evolve/*:refs/evolve/*")  # fmt: skip
            _git(repo, "merge", "--quiet", "--ff-only", "refs/remotes/origin/main")

        pushes = (("evolve push", cli_push), ("git push", git_push),
                  ("push()", api_push), ("git push (api row)", git_push))  # fmt: skip
        pulls = (("evolve pull", cli_pull), ("git fetch + merge", git_pull),
                 ("pull()", api_pull), ("git fetch + merge (api row)", git_pull))  # fmt: skip
        head = _git(ws.root, "rev-parse", "HEAD")
        for r in range(args.repeats):
            print(f"repeat {r + 1}/{args.repeats}", flush=True)
            for label, action in pushes:
                _copy(ws.root, ws_copy)
                target = _copy(bare0, base / "target.git")
                _set_url(ws_copy, target)
                rows[label].append(_timed(functools.partial(action, ws_copy)))
                assert _git(target, "rev-parse", "main") == head
            for label, action in pulls:
                copy = _copy(behind.root, base / "behind")
                _set_url(copy, ahead)
                rows[label].append(_timed(functools.partial(action, copy)))
                assert _git(copy, "rev-parse", "HEAD") == head
    print(f"\n{args.commits:,} new episode commits, {args.repeats} repeats, medians "
          f"(load {os.getloadavg()[0]:.1f}):")  # fmt: skip
    for col, name in ((0, "wall"), (1, "CPU")):
        med = {k: statistics.median(x[col] for x in v) for k, v in rows.items()}
        print(f"{'what (' + name + ')':<38}{'evolve ms':>11}{'git ms':>10}{'ratio':>8}  target")
        for ours, theirs in (
            ("evolve push", "git push"),
            ("push()", "git push (api row)"),
            ("evolve pull", "git fetch + merge"),
            ("pull()", "git fetch + merge (api row)"),
        ):
            ratio = med[ours] / med[theirs]
            verdict = "met" if ratio <= TARGET else "missed"
            print(f"{ours + ' vs ' + theirs.removesuffix(' (api row)'):<38}{med[ours]:>11.1f}"
                  f"{med[theirs]:>10.1f}{ratio:>7.2f}x  <= {TARGET}x: {verdict}")  # fmt: skip


if __name__ == "__main__":
    main()
