"""The worker that runs a model-written harness variant inside the sandbox.

Standard library only, and it imports nothing of evolve: this file is copied beside the
variant into the sandbox's folder and started there as `python -I -S -B _shim.py` (no site
packages, no user paths), so the only code in the process is this shim, the variant and the
standard library. It answers one JSON object per line on standard input:

- `{"op": "load", "module": M, "path": P}`: import the variant file P (again: a fresh module
  each time) and report the contract methods it defines for module M;
- `{"op": "call", "method": NAME, "args": [...]}`: call that method of the loaded variant
  with the arguments (the task and the prompt's parts as the small views below) and return
  its value. A workflow file that defines `run(llm, world, request)` plays its own loop: while
  it runs, each `llm.complete(messages)` and `world.call(tool, arguments)` is one line to the
  parent (`{"op": "llm", ...}`, `{"op": "world", ...}`), which checks it, makes the call and
  answers on standard input; the model, its key and the world never enter this process.

Each answer is `{"ok": true, "value": ...}` or `{"ok": false, "error": "..."}`. What the
variant prints goes to standard error; only the shim writes the protocol's lines.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
from collections import namedtuple
from typing import Any

# The contracts' views, field for field (evolve.harness.TaskView and PromptParts).
TaskView = namedtuple("TaskView", ["task_id", "instruction"])
PromptParts = namedtuple("PromptParts", ["prompt_files", "api_docs", "memory", "skills", "stats"])

# The method(s) a variant file defines for each module (docs/harness.md, variant files).
METHODS = {
    "tools": ("describe",),
    "context": ("assemble",),
    "skills": ("inject",),
    "memory": ("retrieve",),
    "workflow": ("review",),
}
# A workflow file may instead play the whole loop: run(llm, world, request).
LOOP = "run"

_LOADED: dict[str, Any] = {}


def _view(method: str, args: list[Any]) -> list[Any]:
    if method == "assemble":
        parts, task = args
        parts = dict(parts)
        parts["prompt_files"] = tuple(parts["prompt_files"])
        parts["stats"] = tuple(parts["stats"])
        return [PromptParts(**parts), TaskView(**task)]
    if method in ("inject", "retrieve"):
        return [args[0], TaskView(**args[1])]
    if method == "describe":
        return [args[0], tuple(args[1])]
    return list(args)


def _load(module: str, path: str) -> list[str]:
    if module not in METHODS:
        raise ValueError(f"no such module: {module!r}")
    spec = importlib.util.spec_from_file_location("evolve_variant", os.path.abspath(path))
    if spec is None or spec.loader is None:
        raise ImportError("the variant file cannot be loaded")
    made = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(made)
    if module == "workflow" and callable(getattr(made, LOOP, None)):
        _LOADED["module"] = made
        return [LOOP]
    missing = [m for m in METHODS[module] if not callable(getattr(made, m, None))]
    if missing:
        raise TypeError(f"it defines no function {missing[0]}() for the {module} module")
    _LOADED["module"] = made
    return list(METHODS[module])


class _Remote:
    """A request to the parent in the middle of a call: one line out, its answer back."""

    def __init__(self, channel: Any) -> None:
        self.channel = channel

    def ask(self, message: dict[str, Any]) -> Any:
        self.channel.write(json.dumps(message, ensure_ascii=True) + "\n")
        self.channel.flush()
        line = sys.stdin.readline()
        if not line:
            raise SystemExit(0)
        answer = json.loads(line)
        if not answer.get("ok"):
            raise RuntimeError(str(answer.get("error", "refused")))
        return answer.get("value")


class LLM:
    """The parent's model, behind the pipe: complete(messages) -> the reply's text."""

    def __init__(self, remote: _Remote) -> None:
        self._remote = remote

    def complete(self, messages: list[dict[str, str]]) -> str:
        return str(self._remote.ask({"op": "llm", "messages": list(messages)}))


class World:
    """The parent's world, behind the pipe: call(tool, arguments) -> {ok, result, error}."""

    def __init__(self, remote: _Remote) -> None:
        self._remote = remote
        self.completed = False

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        value = self._remote.ask({"op": "world", "tool": tool, "arguments": arguments})
        self.completed = bool(value.get("completed"))
        return dict(value)


Request = namedtuple("Request", ["task_message", "system_prompt", "tools", "max_turns"])
_CHANNEL: dict[str, Any] = {}


def _answer(message: dict[str, Any]) -> Any:
    op = message.get("op")
    if op == "load":
        return _load(message["module"], message["path"])
    if op == "call":
        made = _LOADED.get("module")
        if made is None:
            raise RuntimeError("no variant loaded")
        method = message["method"]
        if method == LOOP:
            remote = _Remote(_CHANNEL["out"])
            request = Request(**message["args"][0])
            return getattr(made, LOOP)(LLM(remote), World(remote), request)
        return getattr(made, method)(*_view(method, message.get("args", [])))
    raise ValueError(f"unknown request {op!r}")


def main() -> None:
    # The protocol's own channel: the original standard output, kept on a private descriptor;
    # descriptor 1 (and print) now go to standard error.
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    _CHANNEL["out"] = channel
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    while line := sys.stdin.readline():
        try:
            reply = {"ok": True, "value": _answer(json.loads(line))}
            text = json.dumps(reply, ensure_ascii=True)
        except BaseException as exc:  # noqa: BLE001 - every failure of the variant is an answer
            traceback.print_exc()
            detail = f"{type(exc).__name__}: {exc}"[:300]
            text = json.dumps({"ok": False, "error": detail}, ensure_ascii=True)
        channel.write(text + "\n")
        channel.flush()


if __name__ == "__main__":
    main()
