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
        cost_cap_problem,
        export_tree,
        run_workspace_tests,
    )
    from evolve.gate._protect import (
        ProtectedState,
        index_flags,
        problems_reason,
        protected_state,
        protection_reason,
    )
    from evolve.gate._tempdirs import sweep, temp_copy
    from evolve.stats import PairedGain, paired_gain

_MODULES = {
    "evolve.stats": ("PairedGain", "paired_gain"),
    "evolve.gate._gate": (
        "Gate",
        "GateEvidence",
        "Verdict",
        "cost_cap_problem",
        "export_tree",
        "run_workspace_tests",
    ),
    "evolve.gate._protect": (
        "ProtectedState",
        "index_flags",
        "problems_reason",
        "protected_state",
        "protection_reason",
    ),
    "evolve.gate._tempdirs": ("sweep", "temp_copy"),
}

__getattr__, __dir__ = lazy_exports(__name__, globals(), _MODULES)

__all__ = [
    "Gate",
    "GateEvidence",
    "PairedGain",
    "ProtectedState",
    "Verdict",
    "cost_cap_problem",
    "export_tree",
    "index_flags",
    "paired_gain",
    "problems_reason",
    "protected_state",
    "protection_reason",
    "run_workspace_tests",
    "sweep",
    "temp_copy",
]
