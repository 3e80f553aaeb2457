"""The gate of the evolve loop (it imports no proposer).

Names are imported on first use: recovery sweeps the gate's temporary copies
(`_tempdirs`) without loading its checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolve._lazy import lazy_exports

if TYPE_CHECKING:
    from evolve.gate._gate import (
        Gate,
        GateEvidence,
        Verdict,
        WorkspaceTestsRun,
        cost_cap_problem,
        export_tree,
        prompt_sizes,
        run_workspace_tests,
        workspace_tests,
    )
    from evolve.gate._protect import (
        ProtectedState,
        index_flags,
        loaded_problem,
        problems_reason,
        protected_state,
        protection_reason,
    )
    from evolve.gate._setup import TRUST_FLAG, git_setup, setup_sentence
    from evolve.gate._tempdirs import sweep, temp_copy
    from evolve.stats import PairedGain, paired_gain

_MODULES = {
    "evolve.stats": ("PairedGain", "paired_gain"),
    "evolve.gate._gate": (
        "Gate",
        "GateEvidence",
        "WorkspaceTestsRun",
        "Verdict",
        "cost_cap_problem",
        "export_tree",
        "prompt_sizes",
        "run_workspace_tests",
        "workspace_tests",
    ),
    "evolve.gate._protect": (
        "ProtectedState",
        "index_flags",
        "loaded_problem",
        "problems_reason",
        "protected_state",
        "protection_reason",
    ),
    "evolve.gate._setup": ("TRUST_FLAG", "git_setup", "setup_sentence"),
    "evolve.gate._tempdirs": ("sweep", "temp_copy"),
}

__getattr__, __dir__ = lazy_exports(__name__, globals(), _MODULES)

__all__ = [
    "TRUST_FLAG",
    "Gate",
    "GateEvidence",
    "PairedGain",
    "ProtectedState",
    "WorkspaceTestsRun",
    "Verdict",
    "cost_cap_problem",
    "export_tree",
    "git_setup",
    "index_flags",
    "loaded_problem",
    "paired_gain",
    "problems_reason",
    "protected_state",
    "prompt_sizes",
    "protection_reason",
    "run_workspace_tests",
    "setup_sentence",
    "sweep",
    "temp_copy",
    "workspace_tests",
]
