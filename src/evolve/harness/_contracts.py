"""The five modules an agent is assembled from, each a small protocol with its contract.

Module-level harness search (ScholarEvolve) cuts the harness around a fixed model into five modules: memories
flow in as evidence and skills as procedures, through the context, into the workflow's
proposals; the tools module says how those proposals reach the world. Each module here is
one protocol; its default variant is evolve's behaviour as it was before modules existed
(`evolve.harness.DEFAULT_HARNESS`), and built-in alternatives implement named published
mechanisms (docs/harness.md).

Every module is a pure function of what it is given, plus the model calls a workflow makes:
none reads files, keeps state across episodes, or sees the checkers. A variant changes what
the model reads or how the loop calls it, nothing else, so the sim (which learns only through
the rendered prompt) responds to it only through that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from evolve.agent import AgentRequest, LoopHooks, Trace
from evolve.envs import World
from evolve.llm import LLM

MODULES: tuple[str, ...] = ("tools", "context", "skills", "memory", "workflow")


@dataclass(frozen=True)
class TaskView:
    """What a module may know of the task: its id and its instruction (never the checkers)."""

    task_id: str
    instruction: str


@dataclass(frozen=True)
class PromptParts:
    """The parts of the system prompt, each as its module made it, for the context module.

    `prompt_files` are the texts of the workspace's prompt files in order; `api_docs` is the
    tools module's description of the tools; `memory` the memory module's rendering (with a
    retry's note appended); `skills` the skills module's section body ("" for none); `stats`
    the harness-computed counts, one per line.
    """

    prompt_files: tuple[str, ...]
    api_docs: str
    memory: str
    skills: str
    stats: tuple[str, ...]


class Tools(Protocol):
    """How tools are described, called, and how errors are recovered.

    Contract: `describe` returns the body of `<api_docs>` from the environment's docs and
    tool names (the default returns the docs unchanged); `hooks` returns the loop's hooks for
    one episode: what the model is told after a call or an unusable reply, and any tool the
    harness answers itself (never the world: such a call changes no world state and is
    recorded as a call of that pseudo tool). It must not hide a world tool the environment
    offers, nor call the world itself.
    """

    def describe(self, api_docs: str, tools: Sequence[str]) -> str: ...

    def hooks(self, request: AgentRequest) -> LoopHooks: ...


class Context(Protocol):
    """What enters the prompt, in what order, under what budget.

    Contract: `assemble` returns the whole system prompt from the parts; the default is
    :func:`evolve.agent.build_system_prompt` (prompt files, `<api_docs>`, `<memory>`,
    `<skills>` when any, `<stats>` when any). A variant may order, cut or drop memory lines
    and sections to fit a budget; it keeps the section tags (the model and the sim find
    sections by them) and never adds a statement about the user that the parts do not hold.
    """

    def assemble(self, parts: PromptParts, task: TaskView) -> str: ...


class Skills(Protocol):
    """Which skills are injected, and how.

    Contract: `inject` returns the body of `<skills>` ("" for none) from the section the
    skills library selected for the task (`picked`, "" when skills are off). A variant may
    re-select among the picked lines or add general procedures of its own; each line is one
    procedure (`[id] trigger: lesson`), never a fact about the user.
    """

    def inject(self, picked: str, task: TaskView) -> str: ...


class Memory(Protocol):
    """What of memory is retrieved for a task, and how it is rendered.

    Contract: `retrieve` returns the text of `<memory>` from the rendered memory (one unit
    per line, its id first, oldest learned first); the default returns it unchanged. A
    variant may keep a subset of the lines and reorder them; it never rewrites a line (a unit
    says what its file says).
    """

    def retrieve(self, memory: str, task: TaskView) -> str: ...


class Workflow(Protocol):
    """The loop: how the model is called to act on the task.

    Contract: `run` plays one episode through `world.call` (via
    :func:`evolve.agent.run_agent` with the tools module's `hooks`, or a loop of its own with
    the same rules: one action per turn, at most `request.max_turns` turns, stop once the
    world is completed, a failed model request ends the episode) and returns the trace.
    """

    def run(self, llm: LLM, world: World, request: AgentRequest, hooks: LoopHooks) -> Trace: ...
