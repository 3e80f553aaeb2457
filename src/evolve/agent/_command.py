"""Command-mode agents: any program, in any language, plays the episode (docs/command-agents.md).

``agent: {command: ["node", "agent.mjs"]}`` in `evolve.yaml` makes evolve run that program once
per episode, in the sandbox (:mod:`evolve.sandbox`), with one JSON request on its standard
input (the task, the prompt sections and the whole system prompt, the tools with their docs,
the limits) and one JSON result read from its standard output (an answer, tool calls, a
transcript, token usage). The program's tool calls are replayed in the episode's world, in
order, through ``world.call`` after the program has ended, so the world records and the
environment judges them exactly as it judges evolve's own agent.

Everything the program returns is hostile input. A program that hangs, crashes, exits with a
status other than 0, prints something other than one JSON object, prints too much, reports
usage that is not a finite non-negative integer, names a tool the environment does not have,
or writes outside its temporary folder (the sandbox refuses it) plays a failed episode
(``Trace.model_error`` says why, in one line, also written to the log); nothing of it is
replayed and nothing is written into the workspace.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evolve._text import ReplyError, loads_reply, printable
from evolve.agent._agent import Trace, Turn
from evolve.agent._seam import AgentRequest
from evolve.envs import World
from evolve.llm import Usage
from evolve.sandbox import Limits, Outcome
from evolve.sandbox import run as sandbox_run
from evolve.workspace import AgentConfig

REQUEST_VERSION = 1
# Fields a result may hold; anything else is refused (a typo must not pass silently).
RESULT_KEYS = frozenset({"version", "answer", "tool_calls", "transcript", "usage"})
USAGE_KEYS = frozenset({"input_tokens", "output_tokens", "cost"})
MAX_TOKENS = 10**12  # more than any real episode: a larger count is a lie
MAX_TRANSCRIPT = 1000
STDERR_EXCERPT = 200
REPLY_TEXT = 2000  # what is kept of each call as the turn's reply text


class CommandFailed(ValueError):
    """The command's result could not be used; the message says why, in one phrase."""


def tool_docs(api_docs: str, tools: Sequence[str]) -> list[dict[str, str]]:
    """Each tool with the line of `api_docs` that documents it ('' when none does)."""
    lines = [line.strip().removeprefix("- ") for line in api_docs.splitlines()]
    out = []
    for tool in tools:
        doc = next((line for line in lines if line.startswith(f"{tool}(")), "")
        out.append({"name": tool, "doc": doc})
    return out


def request_json(request: AgentRequest, limits: Limits) -> dict[str, Any]:
    """The request written to the program's standard input (docs/command-agents.schema.json)."""
    return {
        "version": REQUEST_VERSION,
        "task": {
            "id": request.task_id,
            "instruction": request.instruction,
            "message": request.task_message,
        },
        "system_prompt": request.system_prompt,
        "sections": dict(request.sections),
        "tools": tool_docs(request.sections.get("api_docs", ""), request.tools),
        "limits": {
            "max_turns": request.max_turns,
            "timeout_s": limits.wall_s,
            "max_output_bytes": limits.stdout_bytes,
        },
        "seed": request.seed,
    }


def _count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        raise CommandFailed(f"usage.{what} must be a non-negative integer (got {_shown(value)})")
    return value


def _shown(value: Any) -> str:
    return (
        printable(json.dumps(value), 40)
        if not isinstance(value, dict | list)
        else type(value).__name__
    )


def _usage(value: Any) -> Usage:
    if value is None:
        return Usage()
    if not isinstance(value, dict):
        raise CommandFailed("usage must be a JSON object")
    extra = sorted(set(value) - USAGE_KEYS)
    if extra:
        raise CommandFailed(f"usage has an unknown field {printable(extra[0], 40)!r}")
    cost = value.get("cost", 0)
    if isinstance(cost, bool) or not isinstance(cost, int | float) or not 0 <= cost <= 1e6:
        raise CommandFailed(f"usage.cost must be a finite non-negative number (got {_shown(cost)})")
    return Usage(
        _count(value.get("input_tokens", 0), "input_tokens"),
        _count(value.get("output_tokens", 0), "output_tokens"),
        float(cost),
    )


def _calls(value: Any, tools: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise CommandFailed("tool_calls must be a JSON array")
    calls = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or set(item) - {"tool", "arguments", "thought"}:
            raise CommandFailed(
                f"tool_calls[{i}] must be an object with 'tool', 'arguments' (and 'thought')"
            )
        tool, args = item.get("tool"), item.get("arguments", {})
        if not isinstance(tool, str) or tool not in tools:
            raise CommandFailed(
                f"tool_calls[{i}] names no tool of this environment ({_shown(tool)})"
            )
        if not isinstance(args, dict):
            raise CommandFailed(f"tool_calls[{i}].arguments must be a JSON object")
        calls.append((tool, args))
    return calls


def _transcript(value: Any) -> None:
    if value is None:
        return
    ok = isinstance(value, list) and len(value) <= MAX_TRANSCRIPT
    if ok:
        for item in value:
            if not (
                isinstance(item, dict)
                and set(item) <= {"role", "content"}
                and all(isinstance(v, str) for v in item.values())
            ):
                ok = False
                break
    if not ok:
        raise CommandFailed(
            f"transcript must be an array of at most {MAX_TRANSCRIPT} {{role, content}} strings"
        )


@dataclass(frozen=True)
class Result:
    """A checked result: what is replayed and recorded."""

    calls: list[tuple[str, dict[str, Any]]]
    answer: str | None
    usage: Usage
    turns_text: list[str] = field(default_factory=list)


def parse_result(stdout: bytes, tools: Sequence[str]) -> Result:
    """The program's standard output as a checked result.

    Raises:
        CommandFailed: it is not one JSON object of the documented shape.
    """
    try:
        text = stdout.decode("utf-8")
    except UnicodeDecodeError:
        raise CommandFailed("its output is not UTF-8 text") from None
    if not text.strip():
        raise CommandFailed("it printed nothing (one JSON object was expected)")
    try:
        data = loads_reply(text.strip())
    except ReplyError as exc:
        raise CommandFailed(f"its output is not one usable JSON object: {exc}") from None
    if not isinstance(data, dict):
        raise CommandFailed("its output must be one JSON object")
    extra = sorted(set(data) - RESULT_KEYS)
    if extra:
        raise CommandFailed(f"its result has an unknown field {printable(extra[0], 40)!r}")
    if data.get("version", REQUEST_VERSION) != REQUEST_VERSION:
        raise CommandFailed(f"its result's version must be {REQUEST_VERSION}")
    answer = data.get("answer")
    if answer is not None and not isinstance(answer, str):
        raise CommandFailed("answer must be a string or null")
    _transcript(data.get("transcript"))
    raw = data.get("tool_calls") or []
    calls = _calls(data.get("tool_calls"), tools)
    texts = [printable(json.dumps(item, sort_keys=True), REPLY_TEXT) for item in raw]
    return Result(calls, answer, _usage(data.get("usage")), texts)


def _log_stderr(line: str) -> None:
    sys.stderr.write(line + "\n")


@dataclass(frozen=True)
class CommandAgent:
    """An agent that is a program run per episode in the sandbox (see the module docstring).

    `argv` is the command as configured; a program or argument that names a file relative to
    `root` (the workspace) is given by its absolute path and made readable in the sandbox.
    """

    argv: tuple[str, ...]
    root: Path
    env_allow: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)
    read_only: tuple[str, ...] = ()
    log: Callable[[str], None] = _log_stderr

    @property
    def name(self) -> str:
        return f"command:{os.path.basename(self.argv[0]) if self.argv else ''}"

    def _resolved(self) -> tuple[list[str], list[str]]:
        argv, readable = [], [*self.read_only]
        for i, arg in enumerate(self.argv):
            is_path = (i == 0 and os.sep in arg) or (i > 0 and not arg.startswith("-"))
            full = arg if os.path.isabs(arg) else os.path.join(self.root, arg)
            if is_path and os.path.isfile(full):
                argv.append(os.path.abspath(full))
                readable.append(os.path.abspath(full))
            else:
                argv.append(arg)
        return argv, readable

    def run(self, request: AgentRequest, world: World) -> Trace:
        trace = Trace()
        try:
            result = self._play(request)
        except CommandFailed as exc:
            reason = printable(str(exc), 400)
            self.log(f"evolve: the agent command failed on task {request.task_id}: {reason}")
            end = "" if reason.endswith((".", "!", "?")) else "."
            trace.model_error = f"the agent command failed: {reason}{end}"
            return trace
        trace.usage = result.usage
        for (tool, args), text in zip(result.calls, result.turns_text, strict=True):
            if len(trace.turns) >= request.max_turns:
                trace.hit_turn_limit = not world.completed
                break
            call = world.call(tool, args)
            trace.turns.append(Turn(call=call, reply=text))
            if world.completed:
                break
        if result.answer is not None:
            trace.turns.append(Turn(reply=f"answer: {result.answer}"))
        return trace

    def _play(self, request: AgentRequest) -> Result:
        argv, readable = self._resolved()
        # ASCII with escapes: any text (a lone surrogate included) is valid JSON in UTF-8.
        data = json.dumps(request_json(request, self.limits)).encode("ascii")
        try:
            outcome = sandbox_run(
                argv, stdin=data, env_allow=self.env_allow, limits=self.limits,
                read_only=readable,
            )  # fmt: skip
        except (OSError, ValueError, RuntimeError) as exc:
            raise CommandFailed(f"it could not be started ({printable(str(exc), 200)})") from None
        if not outcome.ok:
            raise CommandFailed(_failure(outcome))
        return parse_result(outcome.stdout, request.tools)


def _failure(outcome: Outcome) -> str:
    lines = [x.strip() for x in outcome.stderr.decode("utf-8", "replace").splitlines()]
    lines = [x for x in lines if x]
    # The last line that names an error (runtimes print a stack or a version after it).
    named = [x for x in lines if "error" in x.lower()]
    line = named[-1] if named else lines[-1] if lines else ""
    said = f"; its error output: {printable(line, STDERR_EXCERPT)}" if line else ""
    return f"{outcome.reason()} ({outcome.backend} sandbox){said}"


def command_agent(
    config: AgentConfig, root: Path, *, log: Callable[[str], None] | None = None
) -> CommandAgent | None:
    """The command agent `agent:` in `evolve.yaml` names (`config` is its `AgentConfig`), or
    None when it names no command (evolve's own agent plays)."""
    command = config.command
    if not command:
        return None
    limits = Limits(
        wall_s=float(config.timeout_s),
        cpu_s=int(config.cpu_s),
        memory_bytes=int(config.memory_mb) * 1024**2,
        processes=int(config.processes),
        stdout_bytes=int(config.max_output_bytes),
    )
    read = tuple(
        os.path.abspath(p if os.path.isabs(p) else os.path.join(root, p)) for p in config.read
    )
    return CommandAgent(
        argv=tuple(command), root=root, env_allow=tuple(config.env), limits=limits,
        read_only=read, log=log or _log_stderr,
    )  # fmt: skip
