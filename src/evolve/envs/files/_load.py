"""Reading a files environment's evalset: the tasks, the checkers, the tools.

Every file is read through `evolve._confine` (no link followed out of the evalset), as the
persona world reads its evalset; the gate opens the environment over the evalset exactly as
committed. A bad file is refused in one sentence naming the file and the line.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import sys
import traceback
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evolve import _confine as confined
from evolve.envs._protocol import SPLITS, Split
from evolve.errors import ConfigError

TASKS = "tasks.jsonl"
CHECKS = "checks.py"
TOOLS = "tools.py"

TASK_KEYS = ("id", "split", "instruction", "inputs", "expected", "family")
CHECK_ARGS = ("task", "answer", "calls")  # what a checker may ask for, by parameter name
TOOL_CONTEXT = "task"  # a tool parameter of this name gets the task, never from the agent
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


@dataclass(frozen=True)
class FilesTask:
    """A task as its checkers and tools see it."""

    id: str
    split: Split
    instruction: str
    inputs: Mapping[str, Any] = field(default_factory=dict)
    expected: Any = None
    family: str = ""


def _where(evalset: Path, name: str, line: int | None = None) -> str:
    shown = f"evalset/{name}"
    return f"{shown} line {line}" if line is not None else shown


def read_tasks(evalset: Path) -> list[FilesTask]:
    """The tasks of ``evalset/tasks.jsonl``, in file order.

    Raises:
        ConfigError: the file is missing or unreadable, or a line is not a task (naming it).
    """
    try:
        text = confined.read_text(evalset, TASKS)
    except FileNotFoundError:
        raise ConfigError(
            f"{_where(evalset, TASKS)} is missing; the files environment reads its tasks there."
        ) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{_where(evalset, TASKS)} is not UTF-8 text.") from None
    tasks: list[FilesTask] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        task = _task(evalset, number, line)
        if task.id in seen:
            raise ConfigError(
                f"{_where(evalset, TASKS, number)}: task id {task.id!r} is taken by line "
                f"{seen[task.id]}; give each task its own id."
            )
        seen[task.id] = number
        tasks.append(task)
    if not tasks:
        raise ConfigError(f"{_where(evalset, TASKS)} holds no task; add one JSON object a line.")
    return tasks


def _task(evalset: Path, number: int, line: str) -> FilesTask:
    where = _where(evalset, TASKS, number)
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where} is not valid JSON ({exc.msg.lower()}).") from None
    if not isinstance(record, dict):
        raise ConfigError(f'{where} is not a JSON object; a task is {{"id": ..., ...}}.')
    unknown = sorted(k for k in record if k not in TASK_KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {unknown[0]!r}; a task has {', '.join(TASK_KEYS)}."
        )
    for key in ("id", "split", "instruction"):
        if key not in record:
            raise ConfigError(f"{where}: the task has no {key!r}.")
    task_id, split, instruction = record["id"], record["split"], record["instruction"]
    if not isinstance(task_id, str) or not _ID.fullmatch(task_id):
        raise ConfigError(
            f"{where}: id {task_id!r} must be 1-100 letters, digits, '.', '_' or '-'."
        )
    if split not in SPLITS:
        raise ConfigError(f"{where}: split {split!r} is not one of {', '.join(SPLITS)}.")
    if not isinstance(instruction, str) or not instruction.strip():
        raise ConfigError(f"{where}: the instruction must be a non-empty string.")
    inputs = record.get("inputs", {})
    if not isinstance(inputs, dict):
        raise ConfigError(f"{where}: inputs must be a JSON object.")
    family = record.get("family", task_id)  # each task its own family unless grouped
    if not isinstance(family, str) or not _ID.fullmatch(family):
        raise ConfigError(f"{where}: family {family!r} must be a short name.")
    return FilesTask(task_id, split, instruction, inputs, record.get("expected"), family)


def load_module(evalset: Path, name: str, *, required: bool) -> types.ModuleType | None:
    """Run ``evalset/<name>`` as a fresh module (nothing on the import path changes).

    Raises:
        ConfigError: the file is missing (when `required`), or it does not compile or run
            (naming its line).
    """
    try:
        source = confined.read_bytes(evalset, name)
    except FileNotFoundError:
        if not required:
            return None
        raise ConfigError(
            f"{_where(evalset, name)} is missing; the files environment reads its checkers there."
        ) from None
    digest = hashlib.sha256(str(evalset.resolve()).encode() + b"\0" + source).hexdigest()[:16]
    module = types.ModuleType(f"_evolve_evalset_{digest}_{name.removesuffix('.py')}")
    filename = str(evalset / name)
    module.__file__ = filename
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise ConfigError(
            f"{_where(evalset, name, exc.lineno)}: {exc.msg} (the file does not compile)."
        ) from None
    except ValueError as exc:  # null bytes
        raise ConfigError(f"{_where(evalset, name)} does not compile ({exc}).") from None
    sys.modules[module.__name__] = module  # dataclasses and pickling look their module up
    try:
        exec(code, module.__dict__)
    except Exception as exc:
        sys.modules.pop(module.__name__, None)
        raise ConfigError(
            f"{_where(evalset, name, line_in(exc, filename))}: running it raised "
            f"{type(exc).__name__}: {exc}"
        ) from None
    return module


def line_in(exc: BaseException, filename: str) -> int | None:
    """The last line of `filename` in `exc`'s traceback (where the evalset's code failed)."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == filename:
            line = frame.lineno
    return line


def functions(module: types.ModuleType | None) -> dict[str, Callable[..., Any]]:
    """The public functions defined in `module` itself (not imported into it), by name."""
    if module is None:
        return {}
    out: dict[str, Callable[..., Any]] = {}
    for name, value in vars(module).items():
        if (
            not name.startswith("_")
            and inspect.isfunction(value)
            and value.__module__ == module.__name__
        ):
            out[name] = value
    return out


def line_of(function: Callable[..., Any]) -> int | None:
    code = getattr(function, "__code__", None)
    return code.co_firstlineno if code is not None else None


def check_parameters(
    evalset: Path, name: str, function: Callable[..., Any], allowed: tuple[str, ...], what: str
) -> list[str]:
    """The parameter names of a checker (each one of `allowed`).

    Raises:
        ConfigError: a parameter evolve cannot fill (naming the file and the function's line).
    """
    params = inspect.signature(function).parameters
    for param in params.values():
        if param.name not in allowed or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigError(
                f"{_where(evalset, name, line_of(function))}: {function.__name__} takes "
                f"{param.name!r}; {what} takes any of {', '.join(allowed)} by name."
            )
    return list(params)


def rule_name(function_name: str) -> str:
    return function_name.removeprefix("rule_")


def valid_rule(name: str) -> bool:
    return _NAME.fullmatch(name) is not None
