"""Switching a harness module by hand: one commit of `prompts/harness.yaml`, through the
applier, that `evolve revert` takes back like any prompt commit.

A generation switches a module the same way (`plan_prompt_changes(harness=...)`); this is
the writer for a person (`evolve harness set`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evolve.applier._harness import plan_harness
from evolve.errors import EvolveError
from evolve.harness import HARNESS_FILE
from evolve.store import KIND
from evolve.txn import writer
from evolve.workspace import Workspace


@dataclass(frozen=True)
class HarnessSwitch:
    """What a switch did: the commit (None: the file already said so) and the changes."""

    commit: str | None
    changes: Mapping[str, Any] = field(default_factory=dict)


def switch_harness(
    ws: Workspace, changes: Mapping[str, Any], *, reason: str | None = None
) -> HarnessSwitch:
    """Set modules of `prompts/harness.yaml` (module -> variant name or `{variant: NAME,
    PARAM: N}`) in one commit.

    Raises:
        EvolveError: a module, variant or parameter is refused (its sentence); nothing is
            written then.
    """
    text, refused = plan_harness(ws, changes)
    if refused:
        raise EvolveError(refused[0].reason)
    if text is None:
        return HarnessSwitch(None, changes)
    said = ", ".join(f"{m} -> {_name(v)}" for m, v in changes.items())
    with writer(ws, "harness set") as tx:
        paths = tx.write({HARNESS_FILE: text}, allowed=("prompts/",))
        sha = tx.commit(
            paths, f"harness: {said}", body=(reason or "").strip(), trailers=[(KIND, "harness")]
        )
    return HarnessSwitch(sha, changes)


def _name(value: Any) -> str:
    return str(value.get("variant")) if isinstance(value, Mapping) else str(value)
