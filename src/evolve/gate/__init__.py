"""The gate of the evolve loop (it imports no proposer)."""

from evolve.gate._bootstrap import PairedGain, paired_gain
from evolve.gate._gate import Gate, GateEvidence, Verdict, run_workspace_tests

__all__ = ["Gate", "GateEvidence", "PairedGain", "Verdict", "paired_gain", "run_workspace_tests"]
