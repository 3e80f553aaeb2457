"""The `ray` executor: jobs on a Ray cluster, for users who outgrow one machine.

Install it with `pip install 'evolve[ray]'`. Ray is imported only when this executor runs (never
by `evolve --version`, `log` or a sim run on another executor).

Where the jobs run:

- `RAY_ADDRESS` set: the cluster at that address (`ray.init(address=...)`); evolve only
  disconnects from it afterwards. Every node needs evolve installed, and the workspace at the
  same path (a shared file system): a job rebuilds its episode by name from that path. The
  driver's OPENAI_*, ANTHROPIC_* and EVOLVE_* variables are sent with the job.
- otherwise: a local cluster started for this one `map` (as many CPUs as the machine has, no
  dashboard, its session files in a temporary folder) and shut down when the map ends, on
  success, failure or Ctrl-C, so no Ray process outlives the command. Its workers see the
  driver's `sys.path`.
- a Ray session already open in this process (`ray.init()` by the caller) is used as it is
  and left open.

How: one actor per CPU of the cluster (at most C), each running up to ceil(C / actors) jobs at
once on threads (an HTTP model's jobs wait on the network; a CPU-bound model's get one core
per actor), with never more than C jobs in flight in all. The job is put in the object store
once per map (`ray.put`); each call names it and carries one item. In a session evolve opened,
the actors serve every map of the command (the evolve loop scores four times a generation)
and are killed when it closes. The first failing job stops the map: its actors are killed
(jobs in flight with them) and the failure is raised as the other executors raise it.
"""

from __future__ import annotations

import importlib
import logging
import math
import os
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from evolve._signals import signals_held
from evolve.errors import ConfigError
from evolve.executors._base import executors
from evolve.executors._failure import EpisodeFailed, failure
from evolve.executors._keeper import PREFIX, keep, proc_stat, remove, stop

T = TypeVar("T")
R = TypeVar("R")
Progress = Callable[[int, int], None]
Label = Callable[[int], str]

INSTALL = "pip install 'evolve[ray]'"
# Environment variables sent to the workers of a remote cluster: the model endpoints and keys
# (OPENAI_BASE_URL, OPENAI_API_KEY, ANTHROPIC_API_KEY, ...) and evolve's own settings.
_FORWARDED = ("OPENAI_", "ANTHROPIC_", "EVOLVE_")


def import_ray() -> Any:
    """The `ray` module.

    Raises:
        ConfigError: when Ray is not installed.
    """
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise ConfigError(
            f"the ray executor needs Ray, which is not installed; run `{INSTALL}` or choose "
            "another --executor."
        ) from exc


class _Failed:
    """What a job that raised sends back: the exception itself when it pickles, else its
    type name and message (the driver reports it in one sentence either way)."""

    def __init__(self, exc: BaseException) -> None:
        self.exc: BaseException = exc


def _remote_worker(ray: Any) -> Any:
    class Worker:
        def run(self, job: Callable[[Any], Any], index: int, item: Any) -> tuple[int, Any]:
            try:
                return index, job(item)
            except Exception as exc:
                import pickle

                try:
                    pickle.dumps(exc)
                    return index, _Failed(exc)
                except Exception:
                    return index, _Failed(RuntimeError(f"{type(exc).__name__}: {exc}"))

    return ray.remote(Worker)


class _Actors:
    """The actors of the session evolve opened, kept between maps (an actor's start costs
    seconds; the evolve loop scores four times a generation) and killed when it closes.
    Outside such a session (the caller's own `ray.init`) each map kills its actors."""

    def __init__(self) -> None:
        self.owned = False
        self.pools: dict[tuple[int, int], list[Any]] = {}

    def take(self, ray: Any, width: int, threads: int) -> list[Any]:
        pool = self.pools.pop((width, threads), None) if self.owned else None
        if pool is None:
            # Pooled actors of another shape hold CPUs the new ones need: free them first.
            self.close_pools(ray)
            worker = _remote_worker(ray)
            # Each actor holds one CPU while it lives; its threads share it.
            pool = [
                worker.options(num_cpus=1, max_concurrency=threads).remote() for _ in range(width)
            ]
        return pool

    def give_back(self, ray: Any, width: int, threads: int, pool: list[Any]) -> None:
        if self.owned and (width, threads) not in self.pools:
            self.pools[(width, threads)] = pool
        else:
            self.kill(ray, pool)

    def kill(self, ray: Any, pool: list[Any]) -> None:
        for actor in pool:
            ray.kill(actor)

    def close_pools(self, ray: Any) -> None:
        for pool in self.pools.values():
            self.kill(ray, pool)
        self.pools.clear()

    def close(self, ray: Any) -> None:
        self.close_pools(ray)
        self.owned = False


_ACTORS = _Actors()


PROBE_TIMEOUT_S = 5.0
# Ray names unix sockets inside its session folder; their paths must fit in 107 bytes.
_MAX_TMP_CHARS = 32


def _short_tmp() -> str:
    """The temporary folder, or /tmp when its path is too long for Ray's socket names."""
    folder = tempfile.gettempdir()
    return folder if len(folder) <= _MAX_TMP_CHARS else "/tmp"


def _probe(address: str) -> None:
    """Fail fast when `host:port` does not accept a connection (Ray itself retries for
    minutes, printing a warning every few seconds).

    Raises:
        ConfigError: when nothing listens there.
    """
    rest = address.split("://", 1)[-1]
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return  # "auto" and other forms Ray resolves itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        raise ConfigError(
            f"could not reach the Ray cluster at RAY_ADDRESS={address} "
            f"({exc.strerror or type(exc).__name__}); check the address, or unset RAY_ADDRESS "
            "to start a local one."
        ) from exc


@contextmanager
def ray_session(ray: Any) -> Iterator[None]:
    """Connect to `RAY_ADDRESS`, or start a local cluster; disconnect or shut it down after.

    Raises:
        ConfigError: when the cluster at `RAY_ADDRESS` cannot be reached, or a local one
            cannot start.
    """
    if ray.is_initialized():
        yield
        return
    address = os.environ.get("RAY_ADDRESS", "").strip()
    quiet = {"log_to_driver": False, "configure_logging": False, "logging_level": logging.ERROR}
    temp: str | None = None
    try:
        if not address:
            temp = tempfile.mkdtemp(prefix=PREFIX, dir=_short_tmp())
            keep(temp)  # removed after this process ends, however it ends
        if address:
            _probe(address)
            # The model's settings travel with the job (a node's own environment lacks them).
            env = {k: v for k, v in os.environ.items() if k.startswith(_FORWARDED)}
            ray.init(address=address, runtime_env={"env_vars": env}, **quiet)
        else:
            path = os.pathsep.join(p for p in sys.path if p)
            ray.init(
                num_cpus=os.cpu_count() or 1,
                include_dashboard=False,
                _temp_dir=temp,
                runtime_env={"env_vars": {"PYTHONPATH": path}},
                **quiet,
            )
    except BaseException as exc:
        # Whatever stopped the start (an error, Ctrl-C, SIGTERM), what it started goes.
        _tear_down(ray, temp)
        if isinstance(exc, ConfigError) or not isinstance(exc, Exception):
            raise
        detail = " ".join(str(exc).split()).rstrip(".") or type(exc).__name__
        where = f"the Ray cluster at RAY_ADDRESS={address}" if address else "a local Ray cluster"
        hint = "; check the address, or unset RAY_ADDRESS to start a local one" if address else ""
        raise ConfigError(f"could not start {where} ({detail}){hint}.") from exc
    _ACTORS.owned = True
    try:
        yield
    finally:
        _tear_down(ray, temp)


def _tear_down(ray: Any, temp: str | None) -> None:
    """Stop the session evolve opened, whatever state its start reached, and leave nothing:
    its actors, Ray's processes (GCS, raylet, and the agents the raylet started, which
    otherwise outlive it by a minute or more), its temporary folder. A second Ctrl-C does not
    cut this short."""
    with signals_held():
        started = _ray_processes(temp) if temp else []
        try:
            _ACTORS.close(ray)
        except Exception:  # an actor of a session that never came up: nothing to kill
            _ACTORS.pools.clear()
        _ACTORS.owned = False
        try:
            if ray.is_initialized():
                ray.shutdown()
        finally:
            if temp:
                stop(started + _ray_processes(temp))
                remove(temp)


# --- the processes of a local cluster --------------------------------------------------------


def _ray_processes(temp: str) -> list[tuple[int, int]]:
    """The processes of the local cluster this process started in `temp`: its descendants
    that are Ray's (`ray::` titles, or `temp` on their command line: GCS, raylet), as
    (pid, start time) so that a reused pid is never taken for one of them."""
    if not os.path.isdir("/proc"):
        return []
    children: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = proc_stat(int(entry))
        if stat is not None:
            children.setdefault(stat[0], []).append(int(entry))
            starts[int(entry)] = stat[1]
    found: list[tuple[int, int]] = []
    stack = list(children.get(os.getpid(), []))
    while stack:
        pid = stack.pop()
        stack += children.get(pid, [])
        try:
            line = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ")  # noqa: SIM115
        except OSError:
            continue
        text = line.decode("utf-8", "replace")
        if temp in text or text.startswith("ray::"):
            found.append((pid, starts[pid]))
    return found


@executors.register("ray")
class RayExecutor:
    name = "ray"

    def __init__(self, concurrency: int) -> None:
        self.concurrency = max(1, concurrency)

    @staticmethod
    @contextmanager
    def session() -> Iterator[None]:
        """One Ray session across the maps of a command (`executor_session`)."""
        with ray_session(import_ray()):
            yield

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
        ray = import_ray()
        with ray_session(ray):
            return self._map(ray, job, items, progress, label)

    def _map(
        self,
        ray: Any,
        job: Callable[[T], R],
        items: Sequence[T],
        progress: Progress | None,
        label: Label | None,
    ) -> list[R]:

        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        width = min(self.concurrency, cpus, len(items))
        threads = math.ceil(min(self.concurrency, len(items)) / width)
        shared = ray.put(job)  # sent once; each call names it
        actors = _ACTORS.take(ray, width, threads)
        load = [0] * width
        owner: dict[Any, int] = {}
        results: dict[int, R] = {}
        pending = list(range(len(items)))
        pending.reverse()  # pop() from the end hands out items in input order
        try:
            while pending or owner:
                while pending and len(owner) < self.concurrency:
                    slot = min(range(width), key=load.__getitem__)
                    if load[slot] >= threads:
                        break
                    index = pending.pop()
                    ref = actors[slot].run.remote(shared, index, items[index])
                    owner[ref] = slot
                    load[slot] += 1
                [ready], _ = ray.wait(list(owner), num_returns=1)
                load[owner.pop(ready)] -= 1
                try:
                    index, value = ray.get(ready)
                except ray.exceptions.RayError as exc:
                    # The worker process died (killed, out of memory, a node lost).
                    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                    raise EpisodeFailed(
                        f"a job on the Ray cluster was lost ({type(exc).__name__}: "
                        f"{' '.join(first.split()).rstrip('.')})."
                    ) from exc
                if isinstance(value, _Failed):
                    raise failure(value.exc, index, len(items), label) from value.exc
                results[index] = value
                if progress:
                    progress(len(results), len(items))
        except BaseException:
            _ACTORS.kill(ray, actors)  # the jobs in flight go with them
            raise
        _ACTORS.give_back(ray, width, threads, actors)
        return [results[i] for i in range(len(items))]
