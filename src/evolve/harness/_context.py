"""The context module: what enters the prompt, in what order, under what budget."""

from __future__ import annotations

from dataclasses import replace

import msgspec

from evolve.agent import build_system_prompt
from evolve.agent._prompt import PromptFile
from evolve.harness._contracts import PromptParts, TaskView
from evolve.harness._variant import Param, Variant, similarity, stems, tokens


def _prompt(parts: PromptParts) -> str:
    return build_system_prompt(
        [PromptFile("", text) for text in parts.prompt_files],
        api_docs=parts.api_docs,
        memory=parts.memory,
        stats=parts.stats,
        skills=parts.skills,
    )


class FullContext(msgspec.Struct, frozen=True):
    """Default: every part, in the order of :func:`evolve.agent.build_system_prompt`."""

    def assemble(self, parts: PromptParts, task: TaskView) -> str:
        return _prompt(parts)


def _fit(lines: list[str], order: list[int], budget: int) -> list[str]:
    """The lines taken in `order` while they fit `budget` tokens, then put back in their
    original order (a later line keeps its place after an earlier one)."""
    kept: set[int] = set()
    used = 0
    for i in order:
        cost = tokens(lines[i])
        if used + cost > budget:
            continue
        kept.add(i)
        used += cost
    return [line for i, line in enumerate(lines) if i in kept]


class BudgetFifo(msgspec.Struct, frozen=True):
    """A FIFO context window (MemGPT): memory lines kept newest first while they fit the
    budget; the oldest fall out."""

    budget_tokens: int = 80

    def assemble(self, parts: PromptParts, task: TaskView) -> str:
        lines = [line for line in parts.memory.splitlines() if line.strip()]
        order = list(range(len(lines)))[::-1]
        memory = "\n".join(_fit(lines, order, self.budget_tokens))
        return _prompt(replace(parts, memory=memory))


class BudgetRelevance(msgspec.Struct, frozen=True):
    """Relevance-ranked context under a budget (Generative Agents' relevance score): memory
    lines ranked by the stems they share with the task (newer first on a tie) and kept while
    they fit the budget, in their original order."""

    budget_tokens: int = 80

    def assemble(self, parts: PromptParts, task: TaskView) -> str:
        lines = [line for line in parts.memory.splitlines() if line.strip()]
        want = stems(task.instruction)
        order = sorted(range(len(lines)), key=lambda i: (-similarity(lines[i], want), -i))
        memory = "\n".join(_fit(lines, order, self.budget_tokens))
        return _prompt(replace(parts, memory=memory))


_BUDGET = {"budget_tokens": Param(80, 1, 100_000)}

VARIANTS = (
    Variant("context", "full", "every part of the prompt, unbudgeted", FullContext),
    Variant(
        "context",
        "budget_fifo",
        "a FIFO context window under a token budget (MemGPT, Packer et al. 2023, arXiv:2310.08560)",
        BudgetFifo,
        _BUDGET,
    ),
    Variant(
        "context",
        "budget_relevance",
        "relevance-ranked context under a token budget (Generative Agents, Park et al. 2023, "
        "arXiv:2304.03442)",
        BudgetRelevance,
        _BUDGET,
    ),
)
