"""A workspace that travels: clone, pull and push with every `refs/evolve/*` ref, records
merged as unions, and training that syncs as it goes (docs/sharing.md)."""

from evolve.remote._records import Hostile, Merged, kind_of, merge_ref
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

__all__ = [
    "Hostile",
    "Merged",
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
    "train_synced",
]
