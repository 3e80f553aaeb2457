"""The reflector of the evolve loop: proposes prompt changes from failed dev runs."""

from evolve.reflector._reflector import PromptProposal, Reflector, summarize_failures

__all__ = ["PromptProposal", "Reflector", "summarize_failures"]
