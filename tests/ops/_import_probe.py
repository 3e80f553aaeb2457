"""Run evolve's commands in this process and say which proposer loaded the writer, if any.

`python _import_probe.py WORKDIR` records every import statement evolve's code executes (at
module level or inside a function, cached or not: `builtins.__import__` sees them all) with the
evolve modules on the stack, then runs `evolve init --skills`, `evolve train --recipe skills`
and one `evolve evolve` generation in WORKDIR with the sim, and prints one JSON object:

- `violations`: each time a writer module (`WRITER`) was imported while a proposer module
  (`PROPOSERS`: the recipes, the reflector, the skills package, the sim) was running, or a
  proposer imported a module that imports the writer at module level (through any chain);
- `proposer_imports`: how many import statements the proposers executed (so a run that saw
  none says so), and `writer_loaded`: whether the run loaded the writer at all.
"""

from __future__ import annotations

import builtins
import importlib.util
import json
import os
import sys
from collections.abc import Mapping, Sequence
from types import FrameType, ModuleType
from typing import Any

PROPOSERS = ("evolve.updaters", "evolve.reflector", "evolve.skills", "evolve.sim")
WRITER = ("evolve.applier", "evolve.store")

_real_import = builtins.__import__
# (importer, target, at module level, proposers running): one row per distinct event
_events: set[tuple[str, str, bool, tuple[str, ...]]] = set()


def _within(name: str, packages: Sequence[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _running(frame: FrameType | None) -> tuple[str, ...]:
    """The proposer modules whose code is on the stack, innermost first."""
    out: list[str] = []
    while frame is not None:
        name = str(frame.f_globals.get("__name__", ""))
        if _within(name, PROPOSERS) and name not in out:
            out.append(name)
        frame = frame.f_back
    return tuple(out)


def _targets(module: ModuleType, name: str, fromlist: Sequence[str] | None) -> list[str]:
    """The modules an import statement reaches: the one named, each submodule in its
    `fromlist`, and the module that defines each other name it takes (a package that hands a
    name on, lazily or not, does not hide where the name lives)."""
    out = [name]
    for item in fromlist or ():
        if item == "*":
            continue
        if f"{name}.{item}" in sys.modules:
            out.append(f"{name}.{item}")
            continue
        defined = getattr(getattr(module, item, None), "__module__", None)
        if isinstance(defined, str):
            out.append(defined)
    return out


def _traced_import(
    name: str,
    globals: Mapping[str, Any] | None = None,
    locals: Mapping[str, Any] | None = None,
    fromlist: Sequence[str] | None = (),
    level: int = 0,
) -> ModuleType:
    module = _real_import(name, globals, locals, fromlist, level)
    importer = str((globals or {}).get("__name__", ""))
    if not importer.startswith("evolve"):
        return module
    if level:
        package = str((globals or {}).get("__package__") or importer)
        name = importlib.util.resolve_name("." * level + name, package)
    frame = sys._getframe(1)
    at_module_level = frame.f_code.co_name == "<module>"
    running = _running(frame)
    for target in _targets(module, name, fromlist):
        if target.startswith("evolve"):
            _events.add((importer, target, at_module_level, running))
    return module


def _violations() -> list[str]:
    module_level: dict[str, set[str]] = {}
    for importer, target, at_module_level, _ in _events:
        if at_module_level:
            module_level.setdefault(importer, set()).add(target)

    def loads_writer(module: str) -> list[str] | None:
        """A chain of module-level imports from `module` to the writer, if there is one."""
        seen, todo = {module}, [[module]]
        while todo:
            chain = todo.pop()
            if _within(chain[-1], WRITER):
                return chain
            for nxt in sorted(module_level.get(chain[-1], ())):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append([*chain, nxt])
        return None

    out = set()
    for importer, target, _, running in _events:
        if _within(target, WRITER) and running:
            out.add(f"{target} imported by {importer} while {running[0]} ran")
        if _within(importer, PROPOSERS):
            chain = loads_writer(target)
            if chain is not None:
                out.add(f"{importer} imports {' -> '.join(chain)}")
    return sorted(out)


def main(workdir: str) -> int:
    builtins.__import__ = _traced_import
    from evolve.cli import main as evolve

    ws = os.path.join(workdir, "ws")
    if evolve(["init", "--skills", ws]) != 0:
        return 1
    os.chdir(ws)
    # 16 episodes: four batches, the last followed by a sleep pass; then a generation, which
    # trains a batch of its own and asks the reflector
    if evolve(["train", "--recipe", "skills", "--unrendered", "--episodes", "16"]) != 0:
        return 1
    if evolve(["evolve", "--generations", "1"]) != 0:
        return 1
    builtins.__import__ = _real_import
    report = {
        "violations": _violations(),
        "proposer_imports": sum(1 for e in _events if _within(e[0], PROPOSERS)),
        "function_local_proposer_imports": sorted(
            {f"{e[0]} -> {e[1]}" for e in _events if _within(e[0], PROPOSERS) and not e[2]}
        ),
        "writer_loaded": all(w in sys.modules for w in WRITER),
    }
    print("PROBE " + json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
