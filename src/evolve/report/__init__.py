"""The HTML report."""

from evolve.report._report import build_report, write_report

__all__ = ["build_report", "write_report"]
