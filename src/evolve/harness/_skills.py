"""The skills module: which skills are injected into a task's prompt, and how."""

from __future__ import annotations

import msgspec

from evolve.harness._contracts import TaskView
from evolve.harness._variant import Variant

# The general procedures the built-in variants inject (docs/harness.md; the sim reads them
# as docs/sim.md says).
CHECKLIST = (
    "[harness-checklist] before any write: go through every preference in <memory> and "
    "apply each one to the call."
)
READ_BACK = "[harness-read-back] after each write: read the record back to confirm the final state."


def _with(picked: str, line: str) -> str:
    return f"{picked.strip()}\n{line}" if picked.strip() else line


class PickedSkills(msgspec.Struct, frozen=True):
    """Default: the skills the skills library picked for the task, as it rendered them."""

    def inject(self, picked: str, task: TaskView) -> str:
        return picked


class Checklist(msgspec.Struct, frozen=True):
    """A general insight injected in every task (ExpeL): check every remembered preference
    before a write."""

    def inject(self, picked: str, task: TaskView) -> str:
        return _with(picked, CHECKLIST)


class ReadBack(msgspec.Struct, frozen=True):
    """A general workflow injected in every task (Agent Workflow Memory): after a write,
    read the record back."""

    def inject(self, picked: str, task: TaskView) -> str:
        return _with(picked, READ_BACK)


VARIANTS = (
    Variant(
        "skills",
        "picked",
        "the skills the skills library selected, as it renders them",
        PickedSkills,
    ),  # fmt: skip
    Variant(
        "skills",
        "checklist",
        "an always-on general insight (ExpeL, Zhao et al. 2024, arXiv:2308.10144)",
        Checklist,
    ),
    Variant(
        "skills",
        "read_back",
        "an always-on induced workflow (Agent Workflow Memory, Wang et al. 2024, arXiv:2409.07429)",
        ReadBack,
    ),
)
