"""The applier for harness changes: `prompts/harness.yaml`, one module at a time.

A proposal maps modules to built-in variants (a name, or `{variant: NAME, PARAM: N}`); each
is checked as the file's own entries are (evolve.harness), applied over the file as it stands,
and the whole file written in its canonical form. A refused module is logged with its reason
and changes nothing; a workspace variant file is refused until a person approved its text
(evolve.review; it runs only in the sandbox).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evolve._format import _limits as limits
from evolve.errors import ConfigError, PathRefused
from evolve.harness import (
    BUILTINS,
    DEFAULTS,
    HARNESS_FILE,
    MODULES,
    choose,
    dump_choice,
    parse_choice,
)
from evolve.harness._config import Choice, awaits_review, is_approved, read_variant
from evolve.ops import Refusal
from evolve.workspace import Workspace


def current_choice(ws: Workspace) -> Choice:
    """The variants `prompts/harness.yaml` names now (the defaults without the file).

    Raises:
        ConfigError: the file as it stands is not valid.
    """
    if not (ws.root / HARNESS_FILE).exists():
        return {m: (DEFAULTS[m], {}) for m in MODULES}
    return parse_choice(limits.read_text(ws.root, HARNESS_FILE), ws.root)


def plan_harness(ws: Workspace, changes: Mapping[Any, Any]) -> tuple[bytes | None, list[Refusal]]:
    """The new bytes of `prompts/harness.yaml` with `changes` applied (None: nothing changes),
    and the refused parts with their reasons."""
    refused: list[Refusal] = []
    what = ", ".join(str(m)[:40] for m in changes)[:80]
    try:
        ws.check_writable(HARNESS_FILE, allowed=("prompts/",))
        choice = current_choice(ws)
    except (PathRefused, ConfigError) as exc:
        return None, [Refusal(op="harness", what=what, reason=str(exc))]
    before = choice
    for module, value in changes.items():
        try:
            choice = choose(choice, module, value, ws.root)
            name = choice[str(module)][0]
            if name not in BUILTINS[str(module)]:
                source = read_variant(ws.root, str(module), name)
                if not is_approved(ws.root, str(module), name, source):
                    raise ConfigError(awaits_review(str(module), name))
        except ConfigError as exc:
            refused.append(Refusal(op="harness", what=str(module)[:80], reason=str(exc)))
    if choice == before:
        return None, refused
    return dump_choice(choice).encode("utf-8"), refused
