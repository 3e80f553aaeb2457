"""Whether a folder is evolve's own source checkout.

The checkout's root holds the default harness that `evolve init` copies (`evolve.yaml`,
`evalset/`, `prompts/`, `memory/`), so it looks like a workspace; a command run there would
commit onto the project's own branch. Every way of opening a workspace asks this first.
Standard library only.
"""

from __future__ import annotations

import os

SOURCE_CHECKOUT = (
    "{root} is evolve's own source checkout (the default harness `evolve init` copies), not a "
    "workspace; create one with `evolve init DIR` and run the command there."
)


def source_checkout(root: str | os.PathLike[str]) -> bool:
    """Whether `root` holds evolve's source: `src/evolve/__init__.py` beside a
    `pyproject.toml` that names the project `evolve`."""
    if not os.path.isfile(os.path.join(root, "src", "evolve", "__init__.py")):
        return False
    try:
        with open(os.path.join(root, "pyproject.toml"), "rb") as f:
            head = f.read(8192)
    except OSError:
        return False
    # `re` is not imported here: the reading commands' start-up does without it.
    return any(
        line.replace(b" ", b"").replace(b"\t", b"") == b'name="evolve"'
        for line in head.splitlines()
    )
