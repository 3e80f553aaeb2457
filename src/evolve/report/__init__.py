"""The HTML report."""

from evolve.report._report import build_report, write_report
from evolve.report._search import search_panel

__all__ = ["build_report", "search_panel", "write_report"]
