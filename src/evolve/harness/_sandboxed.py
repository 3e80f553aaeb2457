"""Workspace variant files (`harness/<module>/<name>.py`): model-written code, run only sandboxed.

The parent (evolve) keeps the model client, the world and everything of the workspace; a
variant file runs in a separate contained process (:class:`evolve.sandbox.Session`: bubblewrap
when it works here; `unshare` or the resource-limits fallback only where the user accepted a
weaker sandbox with `EVOLVE_ALLOW_WEAK_SANDBOX=1`, as neither hides the host's files) beside a stdlib-only shim (`_shim.py`) and nothing else of evolve. The parent
sends each protocol call over a JSON-lines pipe and checks what comes back: a string of
bounded size, or (a workflow's review) a string or null. Anything else, a broken limit or a
silent worker fails the call with :class:`VariantFailed` and one sentence.

One worker serves a variant for the whole run (keyed by the file's content): it starts on the
variant's first call, and ends when the process does (or :func:`close_workers`).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from evolve._text import printable
from evolve.agent import ACTION_SCHEMA, Action, AgentRequest, LoopHooks, Review, Trace, Turn
from evolve.envs import World
from evolve.errors import EvolveError
from evolve.harness._contracts import PromptParts, TaskView
from evolve.harness._tools import PlainTools
from evolve.harness._workflow import _play
from evolve.llm import LLM, Message, ReplyMalformed, RequestFailed
from evolve.sandbox import Backend, Limits, Session, SessionError, choose

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


class Refused(Exception):
    """A request of the variant's (a model or world call) that the parent refuses."""


RELAYED = ("llm", "world")  # what a workflow loop in the worker may ask of the parent


# Model-written code runs only where the host's files are out of its sight (bubblewrap), unless
# the user accepts the weaker sandboxes for this machine by setting this to 1.
WEAK_OPT_IN = "EVOLVE_ALLOW_WEAK_SANDBOX"


def weak_refusal(label: str, backend: str) -> str:
    """The sentence that refuses to run a variant file in a sandbox that does not hide files."""
    return (
        f"{label}: model-written code runs only under bubblewrap, and this machine offers "
        f"only the `{backend}` sandbox, in which the host's files stay visible; install "
        f"bubblewrap (apt install bubblewrap), or set {WEAK_OPT_IN}=1 to accept it "
        "(docs/sandbox.md)."
    )


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
    methods: tuple[str, ...] = ()
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
            backend = choose(self.backend)
            if backend != "bwrap" and os.environ.get(WEAK_OPT_IN) != "1":
                raise VariantFailed(weak_refusal(self.label, backend))
            self._session = Session(
                [base_python(), "-I", "-S", "-B", SHIM_FILE],
                files={SHIM_FILE: SHIM.read_bytes(), VARIANT_FILE: self.source},
                limits=self.limits,
                backend=backend,
                python_env=False,
            )
        except (OSError, RuntimeError, ValueError) as exc:
            raise VariantFailed(f"{self.label}: the sandbox could not start ({exc}).") from None
        loaded = self._ask({"op": "load", "module": self.module, "path": VARIANT_FILE})
        self.methods = tuple(str(m) for m in loaded) if isinstance(loaded, list) else ()
        self.startup_s = round(time.monotonic() - started, 6)
        return self._session

    def _ask(
        self, message: Mapping[str, Any], answer: Callable[[dict[str, Any]], Any] | None = None
    ) -> Any:
        session = self._session
        assert session is not None
        try:
            session.send(message)
            reply = session.receive(self.call_s)
            while answer is not None and reply.get("op") in RELAYED:
                try:
                    session.send({"ok": True, "value": answer(reply)})
                except Refused as exc:
                    session.send({"ok": False, "error": str(exc)})
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

    def call(
        self, method: str, *args: Any, answer: Callable[[dict[str, Any]], Any] | None = None
    ) -> Any:
        """Call `method` of the variant in the worker; returns the value it answered.
        `answer` answers the requests the variant sends back meanwhile (a workflow's model
        and world calls; :class:`Refused` refuses one with its reason).

        Raises:
            VariantFailed: the worker failed, broke a limit, or the variant raised.
        """
        with self._lock:
            self.start()
            started = time.monotonic()
            try:
                return self._ask({"op": "call", "method": method, "args": list(args)}, answer)
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
        self.worker.start()
        if LOOP in self.worker.methods:
            return _Loop(self.worker, llm, world, request).play()
        return _play(llm, world, request, replace(hooks, review=self.review))


LOOP = "run"
_ROLES = ("system", "user", "assistant")


@dataclass
class _Loop:
    """A workflow file's own loop, `run(llm, world, request)`, in the worker: each model and
    world call it makes comes here and is checked against the loop's rules (at most
    `max_turns` world calls, none after the world is completed, only the request's tools, at
    most two model calls a turn, none after a failed request) before evolve makes it."""

    worker: Worker
    llm: LLM
    world: World
    request: AgentRequest
    trace: Trace = field(default_factory=Trace)
    last: str = ""
    model_calls: int = 0

    def play(self) -> Trace:
        req = self.request
        view = {
            "task_message": req.task_message,
            "system_prompt": req.system_prompt,
            "tools": list(req.tools),
            "max_turns": req.max_turns,
        }
        self.worker.call(LOOP, view, answer=self.answer)
        turns = len(self.trace.calls)
        self.trace.hit_turn_limit = not self.world.completed and turns >= req.max_turns
        return self.trace

    def answer(self, message: dict[str, Any]) -> Any:
        if message.get("op") == "llm":
            return self._complete(message.get("messages"))
        return self._call(message.get("tool"), message.get("arguments"))

    def _complete(self, raw: Any) -> str:
        if self.trace.model_error is not None:
            raise Refused("the model request failed; the episode is over")
        if self.model_calls >= 2 * self.request.max_turns:
            raise Refused("no more model calls in this episode")
        if not isinstance(raw, list) or not raw or len(raw) > 400:
            raise Refused("messages must be a list of {role, content}")
        messages: list[Message] = []
        for item in raw:
            if not (isinstance(item, dict) and item.get("role") in _ROLES):
                raise Refused("each message needs a role: system, user or assistant")
            content = item.get("content")
            if not isinstance(content, str) or len(content) > TEXT_CAP:
                raise Refused("each message needs a content of text")
            messages.append(Message(item["role"], content))
        self.model_calls += 1
        try:
            completion = self.llm.complete(
                messages, json_schema=ACTION_SCHEMA, temperature=0.0, seed=self.request.seed
            )
        except ReplyMalformed as exc:
            self.trace.turns.append(Turn(bad_reply=printable(str(exc), 300)))
            raise Refused("the model's reply was malformed") from None
        except RequestFailed as exc:
            self.trace.model_error = printable(str(exc), 300)
            raise Refused("the model request failed; the episode is over") from None
        self.trace.usage = self.trace.usage + completion.usage
        self.last = completion.text
        return completion.text

    def _call(self, tool: Any, arguments: Any) -> dict[str, Any]:
        if self.world.completed or len(self.trace.calls) >= self.request.max_turns:
            raise Refused("the episode is over")
        if not isinstance(tool, str) or tool not in self.request.tools:
            raise Refused(f"there is no API named {printable(str(tool), 80)!r}")
        if not isinstance(arguments, dict):
            raise Refused("arguments must be a JSON object")
        call = self.world.call(tool, arguments)
        self.trace.turns.append(Turn(call=call, reply=self.last))
        result = json.loads(json.dumps(call.result, default=str))
        return {"ok": call.ok, "result": result, "error": call.error,
                "completed": self.world.completed}  # fmt: skip


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
