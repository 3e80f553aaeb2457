"""Concurrency that pays: 120 episodes against a local OpenAI-compatible stub.

The stub (`evolve.executors._stub`, one asyncio event loop: unlimited parallelism) answers
every request a fixed latency (default 200 ms) after it arrived, with
`supervisor__complete_task`, so each episode is one turn. For each executor and concurrency C
the benchmark runs the real `evolve run --split dev --runs 6` (20 dev tasks x 6 = 120
episodes) with `--model openai/stub`, `OPENAI_BASE_URL` pointed at the stub and `--executor`
(default: auto, which is threads for HTTP models, then ray when Ray is installed), and prints
the scoring time (the run's `duration_s`, which covers scoring only, not the process's
start-up: the `process s` column has the whole process; with `--repeat N` the medians of N
runs) against the bound episodes x turns x latency / C, and the efficiency bound / time.
Episodes go in waves of C, so with 120 episodes the best possible efficiency at C = 16 and 32
is 120 / (C x ceil(120 / C)) = 93.75%; the `waves` column shows that bound too. `max in
flight` is the most requests the stub saw at once (C: for HTTP models C bounds the requests in
flight; while they wait, the threads executor prepares the next episodes). The
structured-output rung the stub was asked for is printed (it accepts json_schema, the first
rung).

Where the time above the bound goes at C = 32 (profiles of `evolve run`): a wave's replies
arrive within a few milliseconds and are handled one after the other under the interpreter
lock, so every millisecond of CPU per episode between a reply and the next request is paid
~24 times per wave. Changes that count: a lean transport for plain-HTTP servers
(`evolve.llm._transport`: ~0.3 ms of client CPU per request instead of ~0.6 under load, two
lock-releasing system calls instead of a poll of every pooled connection), the threads
executor (no futures and no hand-over to the calling thread per episode; asyncio, which ran
the same synchronous jobs in threads, also imported asyncio inside the scoring time: ~20 ms),
and request slots (the next episode's request is built while C requests are in flight).

The stub's latency used to start after the request's body was read and parsed, and the event
loop's timers woke up to 1 ms late (epoll's whole milliseconds, rounded up): ~0.8 ms per
request over the asked latency, so every wave cost ~1 ms more than the bound says. It now
counts from the request's arrival and wakes by a timer thread (~0.2 ms late, never early).
The definition of efficiency is unchanged.

The ray rows start a local Ray cluster inside each run (unless RAY_ADDRESS names one), and
that start is part of the scoring time: it is what `evolve run --executor ray` costs on one
machine.

    python benchmarks/bench_concurrency.py [--latency 0.2] [--runs 6] [--repeat 1]
        [--executor auto ray] [--concurrency 1 4 16 32]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from evolve.executors._stub import StubServer
from evolve.workspace import init_workspace

GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@localhost",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per request")
    parser.add_argument("--runs", type=int, default=6, help="runs of the 20 dev tasks")
    parser.add_argument(
        "--executor", nargs="+", default=None, help="default: auto, then ray if installed"
    )
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16, 32])
    parser.add_argument("--repeat", type=int, default=1, help="runs per row; the median is shown")
    args = parser.parse_args()
    executors = args.executor
    if executors is None:
        executors = ["auto"] + (["ray"] if importlib.util.find_spec("ray") else [])
        if "ray" not in executors:
            print("(ray is not installed: pip install 'evolve[ray]' for the ray rows)")
    os.environ.update(GIT_ENV)
    with tempfile.TemporaryDirectory() as tmp, StubServer(args.latency) as stub:
        ws = init_workspace(Path(tmp) / "ws")
        env = {**os.environ, "OPENAI_BASE_URL": stub.base_url, "OPENAI_API_KEY": "stub"}
        for executor in executors:
            _table(ws.root, env, stub, executor, args)


def _table(root: Path, env: dict[str, str], stub: StubServer, executor: str, args: Any) -> None:
    print(
        f"\nlatency {args.latency * 1000:.0f} ms, executor {executor}, "
        f"{20 * args.runs} episodes of 1 turn, median of {args.repeat}"
    )
    print(
        f"{'C':>3} {'episodes':>8} {'time s':>7} {'bound s':>7} {'effic.':>7} "
        f"{'waves':>6} {'max in flight':>13} {'process s':>9} rung"
    )
    for c in args.concurrency:
        times, wholes = [], []
        for _ in range(args.repeat):
            stub.reset()
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "evolve", "run", "--split", "dev", "--runs", str(args.runs),
                 "--model", "openai/stub", "--concurrency", str(c), "--executor", executor,
                 "--json"],
                cwd=root, env=env, capture_output=True, text=True,
            )  # fmt: skip
            wholes.append(time.perf_counter() - started)
            if done.returncode != 0:
                sys.exit(f"evolve run failed at C={c}: {done.stderr.strip()}")
            report = json.loads(done.stdout)
            times.append(float(report["duration_s"]))
        episodes = int(report["episodes"])
        turns = stub.requests / episodes
        took = statistics.median(times)
        bound = episodes * turns * args.latency / c
        waves = math.ceil(episodes / c) * turns * args.latency
        print(
            f"{c:>3} {episodes:>8} {took:>7.2f} {bound:>7.2f} {bound / took:>7.1%} "
            f"{bound / waves:>6.1%} {stub.max_in_flight:>13} {statistics.median(wholes):>9.2f} "
            f"{','.join(sorted(stub.formats))}"
        )


if __name__ == "__main__":
    main()
