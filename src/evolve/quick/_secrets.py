"""`evolve memory` and the workspace's secrets: what it shows, and which files it names.

Memory is shown as the agent receives it: every configured secret (`redact:` of evolve.yaml,
the variables it names, the model API keys; `evolve.redact.secret_values`) as ``<redacted>``.
A unit or hand note that holds one is named on stderr (and in `--json`), so the person who
wrote it there can take it out; the applier refuses to write such a file.
"""

from __future__ import annotations

import os

from evolve.redact import holds_value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import TextIO

    from evolve.quick._git import Repo

    Output = list[tuple[TextIO, str | Iterable[str]]]  # as `evolve.quick._commands` prints


def secret_files(root: str, values: Sequence[str]) -> list[str]:
    """The files under `root/memory/` (units, hand notes, sidecars) that hold one of `values`,
    workspace-relative and sorted; a file that cannot be read is left to the readers."""
    if not values:
        return []
    from evolve._format._units import scan
    from evolve.quick._read import _read_text

    found = []
    for rel, entry, _sidecar in scan(os.path.join(root, "memory")):
        try:
            text = _read_text(entry.path, rel)
        except (OSError, ValueError):
            continue
        if holds_value(text, values):
            found.append(rel)
    return sorted(found)


def workspace_secrets(repo: Repo) -> tuple[str, ...]:
    """The configured secrets of the workspace at `repo` (its evolve.yaml as the fast path
    reads it, remembered in `.git/`), longest first.

    Raises:
        Unhandled: evolve.yaml is missing or invalid (the full command says why).
    """
    from evolve._format._limits import read_path
    from evolve.quick._git import CONFIG_NAME, Unhandled
    from evolve.quick._read import config_summary
    from evolve.redact import secret_values

    try:
        raw = read_path(os.path.join(repo.root, CONFIG_NAME), CONFIG_NAME)  # size checked
    except OSError as exc:
        raise Unhandled("no readable evolve.yaml") from exc
    _, _, _, listed, named = config_summary(repo, raw)
    return secret_values(listed, named)


def hidden(outs: Output, values: Sequence[str]) -> Output:
    """What a command prints, with every one of `values` shown as ``<redacted>``."""
    from evolve.redact import hide_values

    return [
        (stream, hide_values(text, values) if isinstance(text, str) else text)  # show: strings
        for stream, text in outs
    ]
