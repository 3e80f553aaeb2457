"""Do evolve's hand-written parts still earn their place against the libraries beside them?

A hand-written part must stay only where a benchmark shows the library misses a
target by more than 20%. Two parts are hand-written, and each is measured here against the
library that would replace it, in one run, interleaved so that caches favour neither:

1. The commit path (`GitStore.commit`'s fast path: the object writer that stores blobs, trees
   and the commit from Python, plus `store._index`, which updates git's index without a
   process). Target: a per-episode commit no slower than the git CLI (`git add` + `git
   commit` of the same change, ratio 1.00, as in `bench_commit.py`). The library: GitPython's
   own writer (`repo.index.add` + `repo.index.commit`, gitdb objects and GitPython's index).
2. The plain-HTTP transport (`llm._transport.PlainHTTPTransport`) under `httpx`. Target: the
   client CPU a request costs while C requests are in flight (what sits between a reply and
   the next request, `bench_concurrency.py`), no more than the lean transport's. The library:
   httpx's own transport (httpcore) with the same limits.

Each row prints the median and the ratio to the target, and the verdict: the hand-written part
stays when the library's ratio is above 1.20.

    python benchmarks/bench_handwritten.py [--files 1000 --commits 10000 --repeats 30]
        [--requests 960 --concurrency 32]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _repo import build_repo  # noqa: E402

from evolve.store import GitStore  # noqa: E402

THRESHOLD = 1.20


def _timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def commit_rows(files: int, commits: int, repeats: int) -> list[tuple[str, float, float]]:
    """(label, median ms, ratio to the git CLI) for the three ways to commit one changed file."""
    import git  # GitPython

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        build_repo(root, files=files, commits=commits)
        store = GitStore(root)
        store.commit_path = "fast"
        assert not store.commit_hooks(), "the benchmark repository must have no hooks"
        repo = git.Repo(root)
        times: dict[str, list[float]] = {"cli": [], "hand": [], "gitpython": []}

        def edit(n: int, who: str) -> str:
            path = f"memory/unit-{n % files:04d}.md"
            (root / path).write_text(f"---\nid: x\n---\n{who} edit {n}\n", encoding="utf-8")
            return path

        for n in range(repeats):
            order = ["cli", "hand", "gitpython"]
            shift = n % len(order)
            for method in order[shift:] + order[:shift]:
                path = edit(n, method)
                if method == "cli":

                    def cli(path: str = path, n: int = n) -> None:
                        subprocess.run(["git", "add", "--", path], cwd=root, check=True)
                        subprocess.run(
                            ["git", "commit", "-q", "-m", f"cli {n}"], cwd=root, check=True
                        )

                    times["cli"].append(_timed(cli))
                elif method == "hand":

                    def hand(path: str = path, n: int = n) -> None:
                        store.commit([path], f"hand {n}")

                    times["hand"].append(_timed(hand))
                else:

                    def library(path: str = path, n: int = n) -> None:
                        index = repo.index  # re-read: the other writers changed it
                        index.add([path])
                        index.commit(f"gitpython {n}")

                    times["gitpython"].append(_timed(library))
        dirty = store.dirty_paths()
        assert not dirty, f"a writer left the tree dirty: {dirty[:5]}"
        store.close()
        repo.close()
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    return [
        ("git add + git commit (target)", med["cli"], 1.0),
        ("hand-written object + index writer", med["hand"], med["hand"] / med["cli"]),
        ("GitPython index.add + index.commit", med["gitpython"], med["gitpython"] / med["cli"]),
    ]


def transport_rows(requests: int, concurrency: int) -> list[tuple[str, float, float]]:
    """(label, client CPU ms per request, ratio to the lean transport) for both transports."""
    import httpx

    from evolve.executors._stub import StubServer
    from evolve.llm._transport import MAX_IDLE, PlainHTTPTransport

    body = {"model": "stub", "messages": [{"role": "user", "content": "hello"}]}
    cpu: dict[str, list[float]] = {"lean": [], "httpx": []}
    with StubServer(latency_s=0.02) as stub:
        url = f"{stub.base_url}/chat/completions"

        def run(client: httpx.Client) -> float:
            per_thread = requests // concurrency
            barrier = threading.Barrier(concurrency + 1)

            def worker() -> None:
                barrier.wait()
                for _ in range(per_thread):
                    client.post(url, json=body).raise_for_status()

            threads = [threading.Thread(target=worker) for _ in range(concurrency)]
            for t in threads:
                t.start()
            start = time.process_time()
            barrier.wait()
            for t in threads:
                t.join()
            # The process's CPU (the stub's included, the same on both sides) per request.
            return (time.process_time() - start) * 1000 / (per_thread * concurrency)

        limits = httpx.Limits(max_connections=None, max_keepalive_connections=MAX_IDLE)
        for n in range(6):
            order = ["lean", "httpx"] if n % 2 == 0 else ["httpx", "lean"]
            for name in order:
                transport = PlainHTTPTransport() if name == "lean" else None
                with httpx.Client(limits=limits, transport=transport, timeout=30) as client:
                    run(client)  # warm the connections
                    cpu[name].append(run(client))
    med = {k: statistics.median(v) for k, v in cpu.items()}
    return [
        ("lean http.client transport (target)", med["lean"], 1.0),
        ("httpx's own transport (httpcore)", med["httpx"], med["httpx"] / med["lean"]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--requests", type=int, default=960)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()

    report(
        f"1. commit one changed file ({args.files} files, {args.commits} commits; "
        f"median of {args.repeats})",
        commit_rows(args.files, args.commits, args.repeats),
        "GitPython misses the target",
        "hand-written",
        digits=2,
    )
    report(
        f"2. client CPU per request, {args.concurrency} in flight ({args.requests} requests; "
        "median of 6)",
        transport_rows(args.requests, args.concurrency),
        "httpx's transport misses the target",
        "lean transport",
        digits=3,
    )


def report(
    title: str, rows: list[tuple[str, float, float]], library: str, part: str, *, digits: int
) -> None:
    """Print the rows (the target first, the library last) and the verdict on the part."""
    print(title)
    for label, ms, ratio in rows:
        print(f"   {label:40} {ms:8.{digits}f} ms   ratio {ratio:5.2f}")
    miss = rows[-1][2]
    verdict = "stays" if miss > THRESHOLD else "should go"
    print(f"   {library} by {miss:.2f}x (threshold {THRESHOLD}): {part} {verdict}")


if __name__ == "__main__":
    main()
