"""The memory module: what of memory is retrieved for a task, and how it is rendered."""

from __future__ import annotations

import msgspec

from evolve.harness._contracts import TaskView
from evolve.harness._variant import Param, Variant, similarity, stems


def _lines(memory: str) -> list[str]:
    return [line for line in memory.splitlines() if line.strip()]


class AllMemory(msgspec.Struct, frozen=True):
    """Default: every rendered line, oldest learned first, as memory rendered it."""

    def retrieve(self, memory: str, task: TaskView) -> str:
        return memory


class TopKSimilar(msgspec.Struct, frozen=True):
    """Retrieval top-k by task similarity (retrieval-augmented generation): the k lines that
    share the most stems with the task (newer first on a tie), rendered most similar first,
    as a retriever ranks them."""

    k: int = 3

    def retrieve(self, memory: str, task: TaskView) -> str:
        lines = _lines(memory)
        want = stems(task.instruction)
        order = sorted(range(len(lines)), key=lambda i: (-similarity(lines[i], want), -i))
        return "\n".join(lines[i] for i in order[: self.k])


class NewestFirst(msgspec.Struct, frozen=True):
    """Recency-ranked rendering (Generative Agents' recency score): every line, the most
    recently learned first."""

    def retrieve(self, memory: str, task: TaskView) -> str:
        return "\n".join(_lines(memory)[::-1])


VARIANTS = (
    Variant("memory", "all", "every active unit, in the order it was learned", AllMemory),
    Variant(
        "memory",
        "topk_similar",
        "retrieval top-k by task similarity (RAG, Lewis et al. 2020, arXiv:2005.11401)",
        TopKSimilar,
        {"k": Param(3, 1, 1000)},
    ),
    Variant(
        "memory",
        "newest_first",
        "recency-ranked memory, most recent first (Generative Agents, Park et al. 2023, "
        "arXiv:2304.03442)",
        NewestFirst,
    ),
)
