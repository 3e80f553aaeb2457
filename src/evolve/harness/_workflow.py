"""The workflow module: the loop that calls the model to act on a task."""

from __future__ import annotations

from dataclasses import replace

import msgspec

from evolve.agent import Action, AgentRequest, LoopHooks, Review, Trace, run_agent
from evolve.envs import World
from evolve.harness._variant import Variant
from evolve.llm import LLM

# The notes the review workflows send (the sim recognizes them by these first words).
REVIEW_NOTE = (
    "Review before it runs: check this call against the user's preferences in <memory> and "
    "against <api_docs>. Reply with the call to make: the same one if it is right, or the "
    "corrected one."
)
FINISH_NOTE = (
    "Check before finishing: go over every call you made against the user's preferences in "
    "<memory>. If a call broke one, make the corrected call now; otherwise call the finishing "
    "API again."
)


def is_finish(tool: str) -> bool:
    """Whether `tool` ends the task (persona_world's and AppWorld's `supervisor__complete_task`)."""
    return tool.endswith("__complete_task")


def _play(llm: LLM, world: World, request: AgentRequest, hooks: LoopHooks) -> Trace:
    return run_agent(
        llm,
        world,
        system_prompt=request.system_prompt,
        task_message=request.task_message,
        tools=request.tools,
        max_turns=request.max_turns,
        seed=request.seed,
        hooks=hooks,
    )


class Act(msgspec.Struct, frozen=True):
    """Default: one action per turn, each run as the model proposes it (a ReAct-style loop
    without a separate thought step)."""

    def run(self, llm: LLM, world: World, request: AgentRequest, hooks: LoopHooks) -> Trace:
        return _play(llm, world, request, hooks)


def _review_writes(action: Action, reviewed: int) -> Review | None:
    if is_finish(action.tool) or not action.arguments:
        return None  # nothing to check in a call without arguments, nor in the finish
    return Review(REVIEW_NOTE)


def _review_finish(action: Action, reviewed: int) -> Review | None:
    return Review(FINISH_NOTE) if is_finish(action.tool) and reviewed == 0 else None


class VerifyFirst(msgspec.Struct, frozen=True):
    """Self-Refine before acting: each call with arguments is drafted, checked by the model
    against the prompt, and the refined call runs (one more model call per such action)."""

    def run(self, llm: LLM, world: World, request: AgentRequest, hooks: LoopHooks) -> Trace:
        return _play(llm, world, request, replace(hooks, review=_review_writes))


class VerifyFinish(msgspec.Struct, frozen=True):
    """A Reflexion-style self-check before finishing: when the model first proposes to finish,
    it is asked to go over its calls and redo one that broke a preference. What already ran
    stays run: a redone write is a second write."""

    def run(self, llm: LLM, world: World, request: AgentRequest, hooks: LoopHooks) -> Trace:
        return _play(llm, world, request, replace(hooks, review=_review_finish))


VARIANTS = (
    Variant("workflow", "act", "one action per turn, run as proposed", Act),
    Variant(
        "workflow",
        "verify_first",
        "draft, self-feedback, refine before each call runs (Self-Refine, Madaan et al. 2023, "
        "arXiv:2303.17651)",
        VerifyFirst,
    ),
    Variant(
        "workflow",
        "verify_finish",
        "a self-check before finishing, redoing what failed it (Reflexion, Shinn et al. 2023, "
        "arXiv:2303.11366)",
        VerifyFinish,
    ),
)
