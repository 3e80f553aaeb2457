"""The applier for variant files: a model-written module at `harness/<module>/<name>.py`.

A proposal writes exactly one file, `harness/<module>/<name>.py`, and nothing else. It is
refused (one sentence, nothing written) when the module is unknown, the name is not a plain
lower-case name or is a built-in variant's, the path or a folder on it is a link, the path
is protected, the text is not UTF-8, is past the size a variant file may have, does not
compile, or holds a configured secret. Compiling runs nothing; the code itself runs only in
the sandbox (`evolve.harness._sandboxed`), and only once reviewed (`evolve.review`).
"""

from __future__ import annotations

import os
import re

from evolve.applier._files import check_files
from evolve.errors import PathRefused
from evolve.harness import BUILTINS, MODULES, VARIANTS_DIR
from evolve.harness._config import VARIANT_MAX_BYTES, variant_path
from evolve.ops import Refusal
from evolve.workspace import Workspace

_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
ALLOWED = (f"{VARIANTS_DIR}/",)


def _reason(ws: Workspace, module: str, name: str, source: bytes) -> str | None:
    if module not in MODULES:
        return f"there is no harness module {module[:40]!r}; the modules are {', '.join(MODULES)}."
    if not _NAME.fullmatch(name):
        return "a variant's name is lower-case letters, digits and _ (64 at most)."
    if name in BUILTINS[module]:
        return f"{name} is a built-in {module} variant; a variant file needs a name of its own."
    path = variant_path(module, name)
    for rel in (VARIANTS_DIR, f"{VARIANTS_DIR}/{module}", path):
        if os.path.islink(ws.root / rel):
            return f"refusing {path}: {rel} is a link."
    if len(source) > VARIANT_MAX_BYTES:
        return f"{path} would be larger than {VARIANT_MAX_BYTES} bytes."
    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError:
        return f"{path} is not UTF-8 text."
    if "\x00" in text:
        return f"{path} holds a NUL character."
    try:
        compile(text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return f"{path} is not valid Python ({type(exc).__name__}: {str(exc)[:120]})."
    try:
        check_files(ws, {path: source}, allowed=ALLOWED)
    except PathRefused as exc:
        return str(exc)
    return None


def plan_variant_file(
    ws: Workspace, module: str, name: str, source: bytes
) -> tuple[dict[str, bytes], list[Refusal]]:
    """The one change that writes the variant file ({path: bytes}), or no change and the
    refusal with its reason."""
    why = _reason(ws, str(module), str(name), source)
    if why is not None:
        what = f"{str(module)[:20]}/{str(name)[:40]}"
        return {}, [Refusal(op="variant_file", what=what, reason=why)]
    return {variant_path(module, name): source}, []
