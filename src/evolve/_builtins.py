"""Where evolve's own extension points are filled: the composition root, as data.

Each registry group (see `evolve._registry`) names the modules that hold evolve's built-ins for
it; a registry imports them the first time a name it was asked for is not registered yet. A
place ending in ``.*`` is a package whose every module is imported, so a new module there (a
recipe in `evolve/updaters/`) is found without editing this table.

This module imports nothing: the strings name modules of every layer (the `sim` model lives
above `evolve.llm`), and naming them here, once, is what lets no lower package import a higher
one to fill its registry. Installed packages fill the same groups through Python entry points.
"""

from __future__ import annotations

PLACES: dict[str, tuple[str, ...]] = {
    "evolve.models": ("evolve.llm._registry", "evolve.sim._model"),
    "evolve.recipes": ("evolve.updaters.*",),
    "evolve.environments": (
        "evolve.envs.persona_world",
        "evolve.envs.appworld",
        "evolve.envs.files",
    ),
    "evolve.executors": ("evolve.executors._base", "evolve.executors._ray"),
    "evolve.agents": ("evolve.agent._registry",),
}
