"""The `files` environment: tasks, checkers and tools from a workspace's evalset files.

Checkers (``evalset/checks.py``) are plain functions, asked for by name:

- ``check`` and every ``check_<what>``: is the task done? Return True or None (done), False
  (not done) or a string: the user's complaint. Every one must pass for task success.
- every ``rule_<name>``: a house rule, named ``<name>``. Return None (does not apply here),
  True (kept), False, a string (the complaint, both feedback tiers) or a pair of strings
  (the instance-tier complaint, the corrective-tier complaint): broken.

Each takes any of ``task`` (:class:`FilesTask`), ``answer`` (what the agent submitted, None if
it never did) and ``calls`` (the recorded tool calls, submit excluded) by parameter name.

Tools (``evalset/tools.py``, optional) are its public functions; the agent calls
``tools__<function>`` with keyword arguments, and a parameter named ``task`` gets the task. The
agent ends an episode with ``tools__submit`` ``{"answer": ...}``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evolve.envs._protocol import (
    ApiCall,
    Feedback,
    Judgement,
    Split,
    Task,
    Tier,
    Violation,
    World,
)
from evolve.envs._registry import environments
from evolve.envs.files._load import (
    CHECK_ARGS,
    CHECKS,
    TOOL_CONTEXT,
    TOOLS,
    FilesTask,
    check_parameters,
    functions,
    line_in,
    line_of,
    load_module,
    read_tasks,
    rule_name,
    valid_rule,
)
from evolve.errors import ConfigError, UnknownName

APP = "tools"
SUBMIT = f"{APP}__submit"
RESULT_CHARS = 20_000  # the most of a tool's result the agent and the records get


def _plain(value: Any) -> Any:
    """`value` as JSON holds it (anything else as its text), bounded."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = json.dumps(str(value), ensure_ascii=False)
    if len(text) > RESULT_CHARS:
        return text[:RESULT_CHARS] + " [cut]"
    return json.loads(text)


class FilesWorld:
    """One episode's world: every tool call recorded; submit ends the task."""

    def __init__(self, env: FilesEnv, task: FilesTask) -> None:
        self._env, self.task = env, task
        self._calls: list[ApiCall] = []
        self.answer: Any = None
        self._completed = False

    @property
    def calls(self) -> Sequence[ApiCall]:
        return tuple(self._calls)

    @property
    def completed(self) -> bool:
        return self._completed

    def call(self, tool: str, args: Mapping[str, Any]) -> ApiCall:
        app, _, api = tool.partition("__")
        args = dict(args)
        if tool == SUBMIT:
            unknown = sorted(set(args) - {"answer"})
            if unknown or "answer" not in args:
                done = ApiCall(app, api, args, False, error='submit takes {"answer": ...}')
            else:
                self.answer, self._completed = _plain(args["answer"]), True
                done = ApiCall(app, api, args, True, result="submitted")
        elif app != APP or api not in self._env.tool_functions:
            done = ApiCall(app or APP, api or tool, args, False, error=f"no tool {tool!r}")
        else:
            done = self._run(app, api, args)
        self._calls.append(done)
        return done

    def _run(self, app: str, api: str, args: dict[str, Any]) -> ApiCall:
        function = self._env.tool_functions[api]
        params = inspect.signature(function).parameters
        if TOOL_CONTEXT in args:
            return ApiCall(app, api, args, False, error=f"{TOOL_CONTEXT!r} is not an argument")
        given = dict(args)
        if TOOL_CONTEXT in params:
            given[TOOL_CONTEXT] = self.task
        try:
            inspect.signature(function).bind(**given)
        except TypeError as exc:
            return ApiCall(app, api, args, False, error=f"bad arguments: {exc}")
        try:
            result = function(**given)
        except Exception as exc:  # the tool's own refusal: the agent sees it, as an API error
            return ApiCall(app, api, args, False, error=f"{type(exc).__name__}: {exc}"[:500])
        return ApiCall(app, api, args, True, result=_plain(result))


@environments.register("files")
class FilesEnv:
    """The environment a workspace declares in ``evalset/`` (see the module's text)."""

    name = "files"

    def __init__(self, evalset: Path) -> None:
        """
        Raises:
            ConfigError: a missing or bad evalset file, in one sentence naming file and line.
        """
        self.evalset = evalset
        self._files = {t.id: t for t in read_tasks(evalset)}
        self._tasks = {t.id: _as_task(t) for t in self._files.values()}
        checks = functions(load_module(evalset, CHECKS, required=True))
        self.checks: dict[str, tuple[Callable[..., Any], list[str]]] = {}
        self.rules: dict[str, tuple[Callable[..., Any], list[str]]] = {}
        for name, function in checks.items():
            if name == "check" or name.startswith("check_"):
                args = check_parameters(evalset, CHECKS, function, CHECK_ARGS, "a checker")
                self.checks[name] = (function, args)
            elif name.startswith("rule_"):
                rule = rule_name(name)
                if not valid_rule(rule):
                    raise ConfigError(
                        f"evalset/{CHECKS} line {line_of(function)}: rule name {rule!r} must be "
                        "lower-case letters, digits and '_'."
                    )
                args = check_parameters(evalset, CHECKS, function, CHECK_ARGS, "a rule")
                self.rules[rule] = (function, args)
        if not self.checks and not self.rules:
            raise ConfigError(
                f"evalset/{CHECKS} defines no checker; define check(answer) or rule_<name>(...)."
            )
        self.tool_functions = functions(load_module(evalset, TOOLS, required=False))
        for name in self.tool_functions:
            if f"{APP}__{name}" == SUBMIT:
                raise ConfigError(
                    f"evalset/{TOOLS} line {line_of(self.tool_functions[name])}: 'submit' is "
                    "evolve's own tool (the agent's answer); rename the function."
                )

    # --- the core protocol ---------------------------------------------------------------

    def tasks(self, split: Split) -> list[Task]:
        return [t for t in self._tasks.values() if t.split == split]

    def task(self, task_id: str) -> Task:
        try:
            return self._tasks[task_id]
        except KeyError:
            raise UnknownName(f"unknown task {task_id!r} in evalset/tasks.jsonl.") from None

    def files_task(self, task_id: str) -> FilesTask:
        """The task as its checkers and tools see it (inputs and expected answer)."""
        self.task(task_id)
        return self._files[task_id]

    def api_docs(self) -> str:
        lines = ["Tools (call one per turn; end the task with tools__submit):"]
        for name, function in self.tool_functions.items():
            params = [
                p for p in inspect.signature(function).parameters.values() if p.name != "task"
            ]
            shown = ", ".join(p.name for p in params)
            doc = (inspect.getdoc(function) or "").strip().splitlines()
            lines.append(f"- {APP}__{name}({shown}): {doc[0] if doc else ''}".rstrip(": "))
        lines.append(f"- {SUBMIT}(answer): your final answer to the task (the reply, the result).")
        return "\n".join(lines)

    def tools(self) -> list[str]:
        return [*(f"{APP}__{name}" for name in self.tool_functions), SUBMIT]

    def new_world(self, task: Task, persona: str, history: Any) -> World:
        return FilesWorld(self, self.files_task(task.id))

    def judge(
        self, task: Task, persona: str, world: World, history: Any, episode: int | None
    ) -> Judgement:
        files = self.files_task(task.id)
        answer = world.answer if isinstance(world, FilesWorld) else None
        calls = tuple(c for c in world.calls if c.tool != SUBMIT)
        given = {"task": files, "answer": answer, "calls": calls}
        failure: str | None = None
        if not world.completed:
            failure = "You never gave me an answer."
        for name, (function, args) in self.checks.items():
            if failure is not None:
                break
            verdict = self._ask(name, function, args, given)
            if verdict is None or verdict is True:
                continue
            if isinstance(verdict, str) and verdict.strip():
                failure = verdict.strip()
            elif verdict is False or isinstance(verdict, str):
                failure = f"The task is not done ({name})."
            else:
                raise self._bad_return(name, function, verdict, "True, None, False or a string")
        applicable: list[str] = []
        violations: list[Violation] = []
        for rule, (function, args) in self.rules.items():
            verdict = self._ask(f"rule_{rule}", function, args, given)
            if verdict is None:
                continue
            applicable.append(rule)
            if verdict is True:
                continue
            broken = _broken(rule, verdict)
            if broken is None:
                raise self._bad_return(
                    f"rule_{rule}", function, verdict, "None, True, False, a string or two strings"
                )
            violations.append(broken)
        return Judgement(failure is None, failure, tuple(applicable), tuple(violations))

    def _ask(
        self, name: str, function: Callable[..., Any], args: list[str], given: dict[str, Any]
    ) -> Any:
        try:
            return function(**{a: given[a] for a in args})
        except Exception as exc:
            line = line_in(exc, str(self.evalset / CHECKS)) or line_of(function)
            raise ConfigError(
                f"evalset/{CHECKS} line {line}: {name} raised {type(exc).__name__}: {exc}"
            ) from None

    def _bad_return(
        self, name: str, function: Callable[..., Any], verdict: Any, wanted: str
    ) -> ConfigError:
        return ConfigError(
            f"evalset/{CHECKS} line {line_of(function)}: {name} returned "
            f"{type(verdict).__name__}; return {wanted}."
        )

    def feedback(self, task: Task, judgement: Judgement, tier: Tier) -> Feedback:
        lines: list[tuple[str, str]] = []
        if judgement.failure:
            lines.append((judgement.failure, "task"))
        for v in judgement.violations:
            lines.append((v.instance if tier == "instance" else v.corrective, v.rule))
        return Feedback("\n".join(line for line, _ in lines), tuple(lines))

    # --- capabilities --------------------------------------------------------------------

    def rule_names(self) -> list[str]:
        """The house rules of ``checks.py`` (``rule_<name>``), by name."""
        return list(self.rules)


def _broken(rule: str, verdict: Any) -> Violation | None:
    if verdict is False:
        text = f"You broke my rule {rule.replace('_', ' ')}."
        return Violation(rule, text, text)
    if isinstance(verdict, str) and verdict.strip():
        return Violation(rule, verdict.strip(), verdict.strip())
    if (
        isinstance(verdict, tuple)
        and len(verdict) == 2
        and all(isinstance(v, str) and v.strip() for v in verdict)
    ):
        return Violation(rule, verdict[0].strip(), verdict[1].strip())
    return None


def _as_task(files: FilesTask) -> Task:
    instruction = files.instruction.strip()
    if files.inputs:
        shown = json.dumps(dict(files.inputs), ensure_ascii=False, indent=2, sort_keys=True)
        instruction = f"{instruction}\n\nInputs:\n{shown}"
    return Task(
        id=files.id,
        family=files.family,
        kind="task",
        split=files.split,
        instruction=instruction,
        params={"inputs": dict(files.inputs)},
    )
