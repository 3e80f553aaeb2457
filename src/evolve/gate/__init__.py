"""The gate of the evolve loop (it imports no proposer)."""

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
