"""The health probe of a model-written variant: checked in the sandbox before anything scores it.

:func:`probe_variant` starts the variant's sandboxed worker and checks, in order, that it
imports and defines its module's contract function, that it answers a fixed probe task
within the contract (per module, below), and that a second, fresh worker loads it again and
answers the same (no state it built survives only in the first process). The first failure
rejects the candidate with its reason; nothing is scored.

Per module, a valid answer is: tools, a description naming every tool; context, a prompt
keeping the `<api_docs>` and `<memory>` sections with the docs in them; skills, text;
memory, lines each of which is a line of the memory it was given; workflow, for each probe
action either nothing (it runs) or a review note.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from evolve.agent import AgentRequest
from evolve.envs import ApiCall
from evolve.errors import ConfigError
from evolve.harness._config import read_variant
from evolve.harness._contracts import MODULES, PromptParts, TaskView
from evolve.harness._sandboxed import LOOP, TEXT_CAP, VariantFailed, Worker, _Loop
from evolve.llm import Completion, Message
from evolve.sandbox import Backend, Limits

PROBE_TASK = TaskView("probe", "Send Alice a message that the meeting moved to 3pm.")
PROBE_MEMORY = "[m1] The user signs every message as Sam.\n[m2] The user prefers short messages."
PROBE_TOOLS = ("messages__send", "supervisor__complete_task")
PROBE_DOCS = "messages__send(to, text): send a message.\nsupervisor__complete_task(): finish."
PROBE_PARTS = PromptParts(
    prompt_files=("You are a careful assistant.",),
    api_docs=PROBE_DOCS,
    memory=PROBE_MEMORY,
    skills="[s1] before sending: read the message back.",
    stats=(),
)
PROBE_ACTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("messages__send", {"to": "alice", "text": "The meeting moved to 3pm. Sam"}),
    ("supervisor__complete_task", {}),
)
PROBE_LIMITS = Limits(
    wall_s=60.0,
    cpu_s=30,
    memory_bytes=1024**3,
    open_files=64,
    processes=16,
    file_bytes=16 * 1024**2,
    stdout_bytes=8 * 1024**2,
    stderr_bytes=256 * 1024,
)


@dataclass(frozen=True)
class ProbeResult:
    """How a variant's probe ended: `ok`, or the `reason` it was rejected (one sentence)."""

    module: str
    name: str
    ok: bool
    reason: str
    backend: str | None
    startup_s: float
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class _ProbeLLM:
    """The probe's model: it proposes one message, then to finish."""

    name = "probe"

    def __init__(self) -> None:
        self.replies = [json.dumps({"tool": t, "arguments": a}) for t, a in PROBE_ACTIONS]

    def complete(self, messages: Sequence[Message], **_: Any) -> Completion:
        return Completion(self.replies.pop(0) if len(self.replies) > 1 else self.replies[0])


class _ProbeWorld:
    """The probe's world: every call succeeds; the finish completes it."""

    def __init__(self) -> None:
        self.completed = False

    def call(self, tool: str, arguments: Mapping[str, Any]) -> ApiCall:
        self.completed = self.completed or tool == PROBE_TOOLS[-1]
        app, _, api = tool.partition("__")
        return ApiCall(app, api, dict(arguments), True, {"ok": True})


def _loop_answer(worker: Worker) -> list[Any]:
    request = AgentRequest(
        PROBE_TASK.task_id, PROBE_TASK.instruction, f"Task: {PROBE_TASK.instruction}",
        "You are a careful assistant.", PROBE_TOOLS, 4, 0,
    )  # fmt: skip
    world = _ProbeWorld()
    trace = _Loop(worker, _ProbeLLM(), world, request).play()  # type: ignore[arg-type]
    return [[call.tool for call in trace.calls]]


def _answers(worker: Worker, module: str) -> list[Any]:
    if module == "tools":
        return [worker.call("describe", PROBE_DOCS, list(PROBE_TOOLS))]
    if module == "context":
        return [worker.call("assemble", asdict(PROBE_PARTS), asdict(PROBE_TASK))]
    if module == "skills":
        return [worker.call("inject", PROBE_PARTS.skills, asdict(PROBE_TASK))]
    if module == "memory":
        return [worker.call("retrieve", PROBE_MEMORY, asdict(PROBE_TASK))]
    if LOOP in worker.methods:
        return _loop_answer(worker)
    return [worker.call("review", tool, args, 0) for tool, args in PROBE_ACTIONS]


def _invalid(module: str, answers: list[Any]) -> str:
    """Why the answers break the module's contract ('' when they do not)."""
    if module == "workflow" and answers and isinstance(answers[0], list):
        if not answers[0]:
            return "its loop made no call on the probe task"
        if answers[0][-1] != PROBE_TOOLS[-1]:
            return "its loop did not finish the probe task"
        return ""
    for value in answers:
        if module == "workflow" and value is None:
            continue
        if not isinstance(value, str):
            return f"it returned {type(value).__name__}, not text"
        if len(value) > TEXT_CAP:
            return f"it returned more than {TEXT_CAP} characters"
    text = answers[0]
    if module == "tools":
        hidden = [t for t in PROBE_TOOLS if t not in text]
        if hidden:
            return f"its tool description hides {hidden[0]}"
    if module == "context":
        for tag in ("<api_docs>", "<memory>"):
            if tag not in text:
                return f"its prompt drops the {tag} section"
        if PROBE_DOCS not in text:
            return "its prompt does not carry the tools' description"
    if module == "memory":
        given = set(PROBE_MEMORY.splitlines())
        rewritten = [line for line in text.splitlines() if line.strip() and line not in given]
        if rewritten:
            return "it rewrote a memory line (a variant may keep and reorder lines, not edit them)"
    return ""


def probe_variant(
    module: str,
    name: str,
    source: bytes,
    *,
    backend: Backend | Literal["auto"] = "auto",
    limits: Limits = PROBE_LIMITS,
    call_s: float = 10.0,
    log: Callable[[str], None] | None = None,
) -> ProbeResult:
    """Probe a variant file's code (`source`) for `module` in the sandbox."""
    started = time.monotonic()
    if module not in MODULES:
        raise ValueError(f"no harness module {module!r}")
    backends: list[str | None] = []
    startup = 0.0

    def done(reason: str) -> ProbeResult:
        took = round(time.monotonic() - started, 6)
        return ProbeResult(module, name, not reason, reason, backends[0] if backends else None,
                           startup, took)  # fmt: skip

    answers: list[list[Any]] = []
    for attempt in range(2):  # the second: a fresh worker loads it again
        worker = Worker(module, name, source, limits=limits, backend=backend, call_s=call_s)
        try:
            worker.start()
            backends.append(worker.used_backend)
            if attempt == 0:
                startup = worker.startup_s
            answers.append(_answers(worker, module))
        except VariantFailed as exc:
            if not backends:
                backends.append(worker.used_backend)
            return done(str(exc).removeprefix(f"{worker.label}: "))
        finally:
            worker.close()
        if attempt == 0 and (why := _invalid(module, answers[0])):
            return done(why)
    if answers[0] != answers[1]:
        return done("loaded again in a fresh worker it answered differently")
    if log is not None and backends and backends[0] == "rlimits":
        log("the probe ran under the weak sandbox (resource limits only)")
    return done("")


def probe_workspace_variant(
    root: Path,
    module: str,
    name: str,
    *,
    backend: Backend | Literal["auto"] = "auto",
    call_s: float = 10.0,
) -> ProbeResult:
    """Probe the workspace variant file `harness/<module>/<name>.py` (read without following
    a link out); a file that cannot be read is rejected like a failing probe."""
    try:
        source = read_variant(root, module, name)
    except ConfigError as exc:
        return ProbeResult(module, name, False, str(exc), None, 0.0, 0.0)
    return probe_variant(module, name, source, backend=backend, call_s=call_s)
