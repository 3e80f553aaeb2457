"""Merging two learners' workspaces: git merge drivers for the counter sidecars,
the rules that settle units after a merge, and `merge_branch` (one merge commit under the
writer lock). The rules are written down in docs/sharing.md.

Layer: a writer, beside `history` and `review`: it writes through `txn` and the applier.
Names are imported on first use, so that git's call of the merge driver loads only it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolve._lazy import lazy_exports

if TYPE_CHECKING:
    from evolve.merge._branch import MergeResult, merge_branch, reconcile
    from evolve.merge._drivers import merge_files
    from evolve.merge._reconcile import Conflict, merge_units, rules
    from evolve.workspace._drivers import install_merge_drivers

_MODULES = {
    "evolve.merge._branch": ("MergeResult", "merge_branch", "reconcile"),
    "evolve.merge._drivers": ("merge_files",),
    "evolve.merge._reconcile": ("Conflict", "merge_units", "rules"),
    "evolve.workspace._drivers": ("install_merge_drivers",),
}

__getattr__, __dir__ = lazy_exports(__name__, globals(), _MODULES)

__all__ = [
    "Conflict",
    "MergeResult",
    "install_merge_drivers",
    "merge_branch",
    "merge_files",
    "merge_units",
    "reconcile",
    "rules",
]
