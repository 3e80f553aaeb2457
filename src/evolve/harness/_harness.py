"""A harness: one variant of each module, and evolve's own agent assembled from it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evolve.agent import AgentRequest, Trace
from evolve.envs import World
from evolve.harness._context import VARIANTS as CONTEXT
from evolve.harness._context import FullContext
from evolve.harness._contracts import (
    MODULES,
    Context,
    Memory,
    PromptParts,
    Skills,
    TaskView,
    Tools,
    Workflow,
)
from evolve.harness._memory import VARIANTS as MEMORY
from evolve.harness._memory import AllMemory
from evolve.harness._skills import VARIANTS as SKILLS
from evolve.harness._skills import PickedSkills
from evolve.harness._tools import VARIANTS as TOOLS
from evolve.harness._tools import PlainTools
from evolve.harness._variant import Variant
from evolve.harness._workflow import VARIANTS as WORKFLOW
from evolve.harness._workflow import Act
from evolve.llm import LLM

# Every built-in variant by module and name; the first of each module is its default.
BUILTINS: Mapping[str, Mapping[str, Variant]] = {
    module: {v.name: v for v in variants}
    for module, variants in (
        ("tools", TOOLS),
        ("context", CONTEXT),
        ("skills", SKILLS),
        ("memory", MEMORY),
        ("workflow", WORKFLOW),
    )
}
DEFAULTS: Mapping[str, str] = {module: next(iter(BUILTINS[module])) for module in MODULES}


@dataclass(frozen=True)
class Harness:
    """One variant of each module. `choice` names them (module -> (variant, parameters)) as
    `prompts/harness.yaml` does; the default harness is evolve's behaviour before modules."""

    tools: Tools = field(default_factory=PlainTools)
    context: Context = field(default_factory=FullContext)
    skills: Skills = field(default_factory=PickedSkills)
    memory: Memory = field(default_factory=AllMemory)
    workflow: Workflow = field(default_factory=Act)
    choice: Mapping[str, tuple[str, Mapping[str, Any]]] = field(
        default_factory=lambda: {m: (DEFAULTS[m], {}) for m in MODULES}
    )

    def system_prompt(
        self,
        prompt_files: Sequence[str],
        *,
        api_docs: str,
        tools: Sequence[str],
        memory: str,
        skills: str,
        stats: Sequence[str],
        task: TaskView,
        note: str = "",
    ) -> str:
        """The whole system prompt: memory retrieved (then a retry's `note` appended),
        skills injected, tools described, all assembled by the context module."""
        retrieved = self.memory.retrieve(memory, task)
        if note:
            retrieved = f"{retrieved}\n{note}".strip()
        parts = PromptParts(
            prompt_files=tuple(prompt_files),
            api_docs=self.tools.describe(api_docs, tools),
            memory=retrieved,
            skills=self.skills.inject(skills, task),
            stats=tuple(stats),
        )
        return self.context.assemble(parts, task)

    def agent(self, llm: LLM) -> HarnessAgent:
        """evolve's own agent over `llm`, run by this harness's workflow and tools."""
        return HarnessAgent(llm, self)

    def names(self) -> dict[str, str]:
        """module -> the name of its active variant."""
        return {module: self.choice[module][0] for module in MODULES}


DEFAULT_HARNESS = Harness()


@dataclass(frozen=True)
class HarnessAgent:
    """evolve's own agent (implements :class:`evolve.agent.Agent`): the harness's workflow
    over a model, with the tools module's hooks."""

    llm: LLM
    harness: Harness

    @property
    def name(self) -> str:
        return self.llm.name

    def run(self, request: AgentRequest, world: World) -> Trace:
        hooks = self.harness.tools.hooks(request)
        return self.harness.workflow.run(self.llm, world, request, hooks)
