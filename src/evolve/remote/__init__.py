"""A workspace that travels: clone, pull and push with every `refs/evolve/*` ref, records
merged as unions, and training that syncs as it goes (docs/sharing.md).

Names are imported on first use: `evolve pull` does not load the training loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolve._lazy import lazy_exports

if TYPE_CHECKING:
    from evolve.remote._records import Hostile, Merged, kind_of, merge_ref
    from evolve.remote._status import RemoteStatus, Status, status
    from evolve.remote._sync import SyncReport, train_synced
    from evolve.remote._travel import (
        Travelled,
        clone,
        configure_remote,
        fetch,
        merge_records,
        pull,
        push,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "evolve.remote._records": ("Hostile", "Merged", "kind_of", "merge_ref"),
        "evolve.remote._status": ("RemoteStatus", "Status", "status"),
        "evolve.remote._sync": ("SyncReport", "train_synced"),
        "evolve.remote._travel": (
            "Travelled",
            "clone",
            "configure_remote",
            "fetch",
            "merge_records",
            "pull",
            "push",
        ),
    },
)

__all__ = [
    "Hostile",
    "Merged",
    "RemoteStatus",
    "Status",
    "SyncReport",
    "Travelled",
    "clone",
    "configure_remote",
    "fetch",
    "kind_of",
    "merge_records",
    "merge_ref",
    "pull",
    "push",
    "status",
    "train_synced",
]
