"""The executor seam and its implementations, registered by name.

- ``serial``: one item after the other, in this thread;
- ``threads``: threads that take the items one after the other, at most C jobs computing
  and at most C model requests in flight (`evolve.executors._slots`): what `auto` picks for
  HTTP models;
- ``asyncio``: an event loop with a semaphore of C; each job (synchronous model code) runs in
  a worker thread (`asyncio.to_thread`), so at most C are in flight. The model code being
  synchronous, it is threads with more steps: importing asyncio (~20 ms) and two hand-overs
  per job between the loop and a worker, which the concurrency benchmark measured (C = 32:
  0.88 s against 0.85 s on threads, with the same transport);
- ``process``: a pool of C processes for CPU-bound local models (``sim``); the job and the
  items must be picklable (a job rebuilds what it needs by name, see `evolve.evaluate`);
- ``ray``: a Ray cluster (`RAY_ADDRESS`, or a local one started and stopped around the map;
  `pip install 'evolve[ray]'`), with the same picklable jobs as ``process``; registered by
  `evolve.executors._ray`. `auto` never picks it.

A job that raises stops the run: the jobs not started are cancelled, the ones in flight are
waited for, and the failure is raised as it is (an :class:`EvolveError` keeps its one-sentence
message) or, for anything else, as :class:`EpisodeFailed` naming the item.
"""

from __future__ import annotations

import gc
import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

from evolve._registry import Registry
from evolve.executors._failure import failure
from evolve.executors._slots import Slots, holding_work_slot

if TYPE_CHECKING:
    # Imported where a pool is made: concurrent.futures brings in logging, and the serial
    # path (the sim's `evolve run`) never makes one.
    import concurrent.futures as cf

T = TypeVar("T")
R = TypeVar("R")
Progress = Callable[[int, int], None]
Label = Callable[[int], str]

ExecutorName = Literal["serial", "threads", "asyncio", "process", "ray"]
# `auto` and evolve's own executors; `executors` below also holds installed ones.
EXECUTORS: tuple[str, ...] = ("auto", "serial", "threads", "asyncio", "process", "ray")
# Executors whose jobs run in other processes: a job must be picklable and rebuild its model
# by name (a live model object cannot travel).
SPAWNING: frozenset[str] = frozenset({"process", "ray"})


@contextmanager
def frozen_heap() -> Iterator[None]:
    """While threads share the interpreter: move every object alive now (the imports, the
    environment, the configuration: ~45,000 objects) out of the collector's reach, so a full
    collection during the map does not walk them. Measured: one such collection paused all
    32 episodes of an `evolve run` for 37 ms, a wave's worth of efficiency at C = 32."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class Executor(Protocol):
    """Maps `job` over `items`; results in the order of `items`."""

    name: str
    concurrency: int

    def map(
        self,
        job: Callable[[T], R],
        items: Sequence[T],
        *,
        progress: Progress | None = None,
        label: Label | None = None,
    ) -> list[R]: ...


ExecutorFactory = Callable[[int], "Executor"]
"""Makes an executor of a concurrency (an executor class is one)."""

executors: Registry[ExecutorFactory] = Registry("executor", "evolve.executors")


@executors.register("serial")
class SerialExecutor:
    name = "serial"

    def __init__(self, concurrency: int = 1) -> None:
        self.concurrency = 1

    def map(
        self,
        job: Callable[[T], R],
        items: Sequence[T],
        *,
        progress: Progress | None = None,
        label: Label | None = None,
    ) -> list[R]:
        results: list[R] = []
        for index, item in enumerate(items):
            try:
                results.append(job(item))
            except Exception as exc:
                raise failure(exc, index, len(items), label) from exc
            if progress:
                progress(index + 1, len(items))
        return results


class _PoolExecutor:
    """Shared by `threads` and `process`: submit everything, collect in completion order,
    return in input order; the first failure cancels what has not started."""

    name = "pool"

    def __init__(self, concurrency: int) -> None:
        self.concurrency = max(1, concurrency)

    def _pool(self) -> cf.Executor:
        raise NotImplementedError

    def map(
        self,
        job: Callable[[T], R],
        items: Sequence[T],
        *,
        progress: Progress | None = None,
        label: Label | None = None,
    ) -> list[R]:
        if not items:
            return []
        import concurrent.futures as cf

        results: dict[int, R] = {}
        pool = self._pool()
        try:
            futures = {pool.submit(job, item): index for index, item in enumerate(items)}
            for future in cf.as_completed(futures):
                index = futures[future]
                exc = future.exception()
                if exc is not None:
                    for other in futures:
                        other.cancel()
                    raise failure(exc, index, len(items), label) from exc
                results[index] = future.result()
                if progress:
                    progress(len(results), len(items))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return [results[i] for i in range(len(items))]


@executors.register("threads")
class ThreadsExecutor:
    """Threads that each take the next item as soon as their last job is done; at most C
    jobs compute at once (each holds a work slot, see `evolve.executors._slots`).

    Leaner than a `concurrent.futures` pool, which matters for HTTP models with many
    episodes in flight: no future per item, and no hand-over to the calling thread after each
    job (that thread only waits); the thread that finished a job takes the next item at once
    and reports progress itself (under a lock, so the counts arrive in order). Measured with
    the concurrency benchmark: the pool's hand-overs cost ~10 ms at C = 32.

    There are 2C threads: a job waiting on a model server in `request_slot()` gives its work
    slot to another, which prepares the next episode meanwhile; at most C requests are in
    flight. Jobs that never wait on a server never run more than C at once.
    """

    name = "threads"

    def __init__(self, concurrency: int) -> None:
        self.concurrency = max(1, concurrency)

    def map(
        self,
        job: Callable[[T], R],
        items: Sequence[T],
        *,
        progress: Progress | None = None,
        label: Label | None = None,
    ) -> list[R]:
        if not items:
            return []
        total = len(items)
        results: list[R | None] = [None] * total
        lock = threading.Lock()
        taken = itertools.count()  # next() on it is atomic: each index goes to one thread
        done = 0
        failures: list[tuple[int, BaseException]] = []
        stop = threading.Event()
        slots = Slots(self.concurrency)

        def work() -> None:
            nonlocal done
            while not stop.is_set():
                index = -1
                try:
                    with holding_work_slot(slots):
                        # The item is taken with the slot held: an item is never held back
                        # by a thread that waits for a slot.
                        index = next(taken)
                        if index >= total or stop.is_set():
                            return
                        result = job(items[index])
                except BaseException as exc:
                    with lock:
                        failures.append((index, exc))
                    stop.set()
                    return
                results[index] = result
                with lock:
                    done += 1
                    try:
                        if progress:
                            progress(done, total)
                    except BaseException as exc:
                        failures.append((index, exc))
                        stop.set()
                        return

        started: list[threading.Thread] = []
        with frozen_heap():
            try:
                for i in range(min(2 * self.concurrency, total)):
                    worker = threading.Thread(target=work, name=f"evolve-{i}", daemon=True)
                    worker.start()
                    started.append(worker)
                for worker in started:
                    worker.join()
            except BaseException:
                # An interrupt in this thread: no new item is taken, the jobs in flight end.
                stop.set()
                for worker in started:
                    worker.join()
                raise
        if failures:
            index, exc = failures[0]
            raise failure(exc, index, total, label) from exc
        return results  # type: ignore[return-value]


@executors.register("process")
class ProcessExecutor(_PoolExecutor):
    name = "process"

    def _pool(self) -> cf.Executor:
        # `spawn` (not fork): the parent may hold threads and open git handles.
        import concurrent.futures as cf
        import multiprocessing  # here: the serial path (the sim) never needs it

        context = multiprocessing.get_context("spawn")
        return cf.ProcessPoolExecutor(max_workers=self.concurrency, mp_context=context)


@executors.register("asyncio")
class AsyncioExecutor:
    name = "asyncio"

    def __init__(self, concurrency: int) -> None:
        self.concurrency = max(1, concurrency)

    def map(
        self,
        job: Callable[[T], R],
        items: Sequence[T],
        *,
        progress: Progress | None = None,
        label: Label | None = None,
    ) -> list[R]:
        if not items:
            return []
        import asyncio  # here: importing asyncio is a tenth of a sim run's start-up

        with frozen_heap():
            return asyncio.run(self._map(job, items, progress, label))

    async def _map(
        self,
        job: Callable[[T], R],
        items: Sequence[T],
        progress: Progress | None,
        label: Label | None,
    ) -> list[R]:
        import asyncio

        gate = asyncio.Semaphore(self.concurrency)
        done = 0
        loop = asyncio.get_running_loop()
        # The default pool of the loop may be smaller than C; give it exactly C threads.
        import concurrent.futures as cf

        threads = cf.ThreadPoolExecutor(max_workers=self.concurrency)
        loop.set_default_executor(threads)

        async def one(index: int) -> R:
            nonlocal done
            async with gate:
                try:
                    result = await asyncio.to_thread(job, items[index])
                except Exception as exc:
                    raise failure(exc, index, len(items), label) from exc
            done += 1
            if progress:
                progress(done, len(items))
            return result

        tasks = [asyncio.ensure_future(one(i)) for i in range(len(items))]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            # Wait for the jobs in flight (a thread cannot be killed) before raising.
            await asyncio.gather(*tasks, return_exceptions=True)
            raise


@contextmanager
def executor_session(name: str) -> Iterator[None]:
    """Hold what executor `name` needs across many maps: its `session()`, if it has one (for
    `ray`, one cluster session: a local cluster starts once per command, not once per
    scoring); nothing for the others, `auto` and an unknown name (refused when it maps)."""
    factory = None if name == "auto" else executors.find(name)
    session: Callable[[], AbstractContextManager[object]] | None = getattr(factory, "session", None)
    if session is None:
        yield
        return
    with session():
        yield


def get_executor(name: str, concurrency: int) -> Executor:
    """The executor registered as `name` (or an installed one, or an import path) with
    `concurrency` workers.

    Raises:
        UnknownName: for a name no executor answers to (one sentence listing the choices).
    """
    return executors.lookup(name)(concurrency)


# Models answered inside this process in about a millisecond per turn.
_IN_PROCESS = frozenset({"sim", "mock"})


def choose_executor(name: str, model: str, concurrency: int, *, can_spawn: bool) -> str:
    """The executor `auto` stands for: serial at concurrency 1 and for the in-process `sim`
    and `mock` models, threads for HTTP models (C requests in flight, the next episodes
    prepared meanwhile), a process pool for other local models when jobs can be rebuilt in a
    worker (`can_spawn`), threads otherwise."""
    if name != "auto":
        return name
    if concurrency <= 1:
        return "serial"
    if model.strip().startswith(("openai/", "anthropic/")):
        return "threads"
    if model.strip() in _IN_PROCESS:
        # An in-process simulation's episode takes about a millisecond: threads share one
        # interpreter lock and a process pool's start-up (~1.5 s) costs more than it saves
        # (120 sim episodes: 0.47 s serial, 1.49 s on processes), so serial is fastest.
        return "serial"
    return "process" if can_spawn else "threads"
