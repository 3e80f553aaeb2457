"""A configured secret never enters a file the applier writes.

The workspace's one redactor (`redact:` of evolve.yaml, the variables it names and the model
API keys: `evolve.redact.Redactor.from_config`) hides secrets in what models send back; this
is the last line before the disk: a unit, a hand note or a prompt file whose text holds one of
those values is refused before anything is written, in one sentence that names the file and
never the secret.
"""

from __future__ import annotations

from collections.abc import Mapping

from evolve.redact import Redactor
from evolve.workspace import Workspace

WHY = (
    "holds a secret listed in redact: of evolve.yaml (a listed value, the value of a variable "
    "it names, or a model API key)"
)


def redactor(ws: Workspace) -> Redactor:
    """The workspace's redactor."""
    return Redactor.from_config(ws.config.redact)


def text_reason(path: str, text: str, hide: Redactor) -> str | None:
    """Why `text`, to be written at `path`, is refused (None: it holds no configured secret)."""
    return f"{path} {WHY}; remove it from the text" if hide.holds_value(text) else None


def files_reason(changes: Mapping[str, bytes | None], hide: Redactor) -> str | None:
    """Why whole-file `changes` are refused: the first file that holds a configured secret."""
    for path, data in sorted(changes.items()):
        if data is not None and hide.values and hide.holds_value(data.decode("utf-8", "replace")):
            return f"refusing to write {path}: it {WHY}; remove it from the file."
    return None
