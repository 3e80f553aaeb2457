"""The harness as five modules (tools, context, skills, memory, workflow): ScholarEvolve's cut.

evolve's own agent is assembled from one variant of each (:class:`Harness`); the defaults
are its behaviour before modules existed, and `prompts/harness.yaml` names others among the
built-ins (docs/harness.md)."""

from evolve.harness._config import (
    HARNESS_FILE,
    VARIANTS_DIR,
    build_harness,
    choose,
    dump_choice,
    load_harness,
    parse_choice,
)
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
from evolve.harness._harness import (
    BUILTINS,
    DEFAULT_HARNESS,
    DEFAULTS,
    Harness,
    HarnessAgent,
)
from evolve.harness._skills import CHECKLIST, READ_BACK
from evolve.harness._tools import DOC_TOOL
from evolve.harness._variant import Param, Variant
from evolve.harness._workflow import FINISH_NOTE, REVIEW_NOTE, is_finish

__all__ = [
    "BUILTINS",
    "CHECKLIST",
    "Context",
    "DEFAULTS",
    "DEFAULT_HARNESS",
    "DOC_TOOL",
    "FINISH_NOTE",
    "HARNESS_FILE",
    "Harness",
    "HarnessAgent",
    "MODULES",
    "Memory",
    "Param",
    "PromptParts",
    "READ_BACK",
    "REVIEW_NOTE",
    "Skills",
    "TaskView",
    "Tools",
    "VARIANTS_DIR",
    "Variant",
    "Workflow",
    "build_harness",
    "choose",
    "dump_choice",
    "is_finish",
    "load_harness",
    "parse_choice",
]
