"""Workspace variant files (`harness/<module>/<name>.py`): model-written code, run only sandboxed.

The parent (evolve) keeps the model client, the world and everything of the workspace; a
variant file runs in a separate contained process (:class:`evolve.sandbox.Session`: bubblewrap
when it works here, else `unshare`, else the weaker resource-limits fallback, which says so on
standard error) beside a stdlib-only shim (`_shim.py`) and nothing else of evolve. The parent
sends each protocol call over a JSON-lines pipe and checks what comes back: a string of
bounded size, or (a workflow's review) a string or null. Anything else, a broken limit or a
silent worker fails the call with :class:`VariantFailed` and one sentence.

One worker serves a variant for the whole run (keyed by the file's content): it starts on the
variant's first call, and ends when the process does (or :func:`close_workers`).
"""

from __future__ import annotations

import atexit
import hashlib
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from evolve.agent import Action, AgentRequest, LoopHooks, Review, Trace
from evolve.envs import World
from evolve.errors import EvolveError
from evolve.harness._contracts import PromptParts, TaskView
from evolve.harness._tools import PlainTools
from evolve.harness._workflow import _play
from evolve.llm import LLM
from evolve.sandbox import Backend, Limits, Session, SessionError

SHIM = Path(__file__).with_name("_shim.py")
VARIANT_FILE = "variant.py"
SHIM_FILE = "_shim.py"
CALL_S = 20.0  # one call's answer at most (seconds)
TEXT_CAP = 256 * 1024  # one returned text at most (characters)
_MiB = 1024**2

# What one worker may use: one run's life, a small share of the machine.
LIMITS = Limits(
    wall_s=4 * 3600.0,
    cpu_s=600,
    memory_bytes=1024 * _MiB,
    open_files=64,
    processes=16,
    file_bytes=16 * _MiB,
    stdout_bytes=8 * _MiB,
    stderr_bytes=256 * 1024,
)


def base_python() -> str:
    """The base interpreter (outside any virtual environment): the worker needs only the
    standard library, and under bubblewrap nothing of evolve's environment is bound."""
    return str(getattr(sys, "_base_executable", "") or sys.executable)


class VariantFailed(EvolveError):
    """A sandboxed variant could not be loaded or did not answer within its contract."""


@dataclass
class Worker:
    """One sandboxed worker for one variant file, started on its first call."""

    module: str
    name: str
    source: bytes
    limits: Limits = LIMITS
    backend: Backend | Literal["auto"] = "auto"
    call_s: float = CALL_S
    startup_s: float = 0.0
    calls: int = 0
    call_time_s: float = 0.0
    _session: Session | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def label(self) -> str:
        return f"harness/{self.module}/{self.name}.py"

    @property
    def used_backend(self) -> Backend | None:
        return None if self._session is None else self._session.backend

    def start(self) -> Session:
        """Start the worker and load the variant (once).

        Raises:
            VariantFailed: it could not start, or the variant does not load.
        """
        if self._session is not None and self._session.alive:
            return self._session
        if self._session is not None:
            raise VariantFailed(f"{self.label}: its sandboxed worker has ended.")
        started = time.monotonic()
        try:
            self._session = Session(
                [base_python(), "-I", "-S", "-B", SHIM_FILE],
                files={SHIM_FILE: SHIM.read_bytes(), VARIANT_FILE: self.source},
                limits=self.limits,
                backend=self.backend,
                python_env=False,
            )
        except (OSError, RuntimeError, ValueError) as exc:
            raise VariantFailed(f"{self.label}: the sandbox could not start ({exc}).") from None
        self._ask({"op": "load", "module": self.module, "path": VARIANT_FILE})
        self.startup_s = round(time.monotonic() - started, 6)
        return self._session

    def _ask(self, message: Mapping[str, Any]) -> Any:
        session = self._session
        assert session is not None
        try:
            session.send(message)
            reply = session.receive(self.call_s)
        except SessionError as exc:
            tail = session.stderr_tail(300).strip().splitlines()
            hint = f" (last: {tail[-1][:200]})" if tail and exc.limit is None else ""
            raise VariantFailed(f"{self.label}: {exc}{hint}.") from None
        if reply.get("ok") is not True:
            error = str(reply.get("error", "no reason given"))[:300]
            what = "it does not load" if message.get("op") == "load" else "it failed"
            raise VariantFailed(f"{self.label}: {what}: {error}")
        return reply.get("value")

    def call(self, method: str, *args: Any) -> Any:
        """Call `method` of the variant in the worker; returns the value it answered.

        Raises:
            VariantFailed: the worker failed, broke a limit, or the variant raised.
        """
        with self._lock:
            self.start()
            started = time.monotonic()
            try:
                return self._ask({"op": "call", "method": method, "args": list(args)})
            finally:
                self.calls += 1
                self.call_time_s += time.monotonic() - started

    def close(self) -> None:
        with self._lock:
            if self._session is not None:
                self._session.close()

    def __reduce__(self) -> tuple[Any, tuple[str, str, bytes]]:
        """Sent to another process (a Ray worker), it becomes that process's own worker for
        the same file: a process never shares a sandboxed worker."""
        return worker_for, (self.module, self.name, self.source)


def _text(worker: Worker, value: Any, method: str) -> str:
    if not isinstance(value, str):
        raise VariantFailed(
            f"{worker.label}: {method}() returned {type(value).__name__}, not text."
        )
    if len(value) > TEXT_CAP:
        raise VariantFailed(f"{worker.label}: {method}() returned more than {TEXT_CAP} characters.")
    return value


@dataclass(frozen=True, eq=False)
class SandboxedTools:
    """A tools variant file: `describe(api_docs, tools) -> str` runs sandboxed; the loop's
    messages stay the default ones."""

    worker: Worker

    def describe(self, api_docs: str, tools: Sequence[str]) -> str:
        value = self.worker.call("describe", api_docs, list(tools))
        return _text(self.worker, value, "describe")

    def hooks(self, request: AgentRequest) -> LoopHooks:
        return PlainTools().hooks(request)


@dataclass(frozen=True, eq=False)
class SandboxedContext:
    """A context variant file: `assemble(parts, task) -> str` runs sandboxed."""

    worker: Worker

    def assemble(self, parts: PromptParts, task: TaskView) -> str:
        value = self.worker.call("assemble", asdict(parts), asdict(task))
        return _text(self.worker, value, "assemble")


@dataclass(frozen=True, eq=False)
class SandboxedSkills:
    """A skills variant file: `inject(picked, task) -> str` runs sandboxed."""

    worker: Worker

    def inject(self, picked: str, task: TaskView) -> str:
        return _text(self.worker, self.worker.call("inject", picked, asdict(task)), "inject")


@dataclass(frozen=True, eq=False)
class SandboxedMemory:
    """A memory variant file: `retrieve(memory, task) -> str` runs sandboxed."""

    worker: Worker

    def retrieve(self, memory: str, task: TaskView) -> str:
        return _text(self.worker, self.worker.call("retrieve", memory, asdict(task)), "retrieve")


@dataclass(frozen=True, eq=False)
class SandboxedWorkflow:
    """A workflow variant file: `review(tool, arguments, reviewed) -> str | None` runs
    sandboxed before each action; the loop itself, the model and the world stay in evolve
    (one action per turn, at most `max_turns`, as `run_agent` plays it)."""

    worker: Worker

    def review(self, action: Action, reviewed: int) -> Review | None:
        value = self.worker.call("review", action.tool, action.arguments, reviewed)
        if value is None:
            return None
        return Review(_text(self.worker, value, "review"))

    def run(self, llm: LLM, world: World, request: AgentRequest, hooks: LoopHooks) -> Trace:
        return _play(llm, world, request, replace(hooks, review=self.review))


_PROXIES: Mapping[str, Any] = {
    "tools": SandboxedTools,
    "context": SandboxedContext,
    "skills": SandboxedSkills,
    "memory": SandboxedMemory,
    "workflow": SandboxedWorkflow,
}
_WORKERS: dict[tuple[str, str, str], Worker] = {}
_WORKERS_LOCK = threading.Lock()


def worker_for(module: str, name: str, source: bytes) -> Worker:
    """The run's worker for this variant file's content (made once, started on first call)."""
    key = (module, name, hashlib.sha256(source).hexdigest())
    with _WORKERS_LOCK:
        worker = _WORKERS.get(key)
        if worker is None:
            worker = _WORKERS[key] = Worker(module, name, source)
        return worker


def sandboxed(module: str, name: str, source: bytes) -> object:
    """The module `module` as the variant file's code, run in the sandbox."""
    return _PROXIES[module](worker_for(module, name, source))


def close_workers() -> None:
    """End every worker this process started."""
    with _WORKERS_LOCK:
        workers = list(_WORKERS.values())
        _WORKERS.clear()
    for worker in workers:
        worker.close()


atexit.register(close_workers)
