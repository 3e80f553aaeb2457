"""A train run imports only what it runs: `evolve train` as a user runs it (its own process,
the sim models, skills off) loads none of the parts it does not reach, no evolve module of
its imports `socket`, `zipfile` or the resource readers itself, and evolve's module count
and the number of dataclasses its modules define stay under bounds (`sys.modules`, not time;
the time is `benchmarks/bench_scale.py`'s)."""

from __future__ import annotations

import importlib
import json
import os
import re
import socket
import subprocess
import sys
import zipfile
from importlib import resources
from pathlib import Path

import pytest

from conftest import GitRunner
from evolve._held import host
from evolve._io import package_files, package_text
from evolve._lazy import pattern
from evolve.workspace import Workspace

# What a plain training run (no --review, skills off, evolve's persona world, no git revert
# to answer, no request cache) never needs.
NEVER = (
    "evolve.review",  # only with --review
    "evolve.skills._select", "evolve.skills._skill", "evolve.skills._failed",
    "evolve.skills._strata", "evolve.skills._records", "evolve.skills._staging",  # skills on
    "evolve.sim._skills", "evolve.sim._skills_agent", "evolve.sim._selector",  # their roles
    "evolve.llm._cache", "evolve.llm._budget", "evolve.llm._mock", "evolve.llm._paths",
    "evolve.applier._caps", "evolve.applier._prompts", "evolve.applier._harness",
    "evolve.history._gitanswer", "evolve.history._changes", "evolve.history._restarts",
    "evolve.history._unretire",  # the answer to a plain git revert
    "evolve.evaluate._run", "evolve.evaluate._report", "evolve.executors",  # scoring's runner
    "click", "rich",
)  # fmt: skip
# Standard-library modules no evolve module imports itself on this path (a dependency may).
NOT_BY_EVOLVE = ("socket", "zipfile", "importlib.resources", "importlib.metadata")
# evolve's modules the run below loads: 165 before this bound was set, 136 then.
BOUND = 140
# The dataclasses those modules define: Python 3.11 builds each one's methods with exec() at
# import (~0.8 ms a class); internal classes are msgspec Structs instead. 90 before this bound
# was set, 63 then (the rest are public: exported, a plug-in seam's, reachable from an
# exported value, or persona specs pydantic validates).
DATACLASS_BOUND = 63

_PROBE = """
import builtins, json, runpy, sys
direct = set()
_import = builtins.__import__
def probe(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__name__") or ""
    if level == 0 and importer.startswith("evolve"):
        for full in (name, *(f"{name}.{part}" for part in fromlist or ())):
            if full.startswith(NOT_BY_EVOLVE):
                direct.add(f"{importer} -> {full}")
    return _import(name, globals, locals, fromlist, level)
builtins.__import__ = probe
sys.argv = ["evolve", *ARGS]
try:
    runpy.run_module("evolve", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
finally:
    built = sorted(
        f"{name}.{value.__qualname__}"
        for name, module in list(sys.modules.items())
        if name == "evolve" or name.startswith("evolve.")
        for value in list(vars(module).values())
        if isinstance(value, type) and value.__module__ == name
        and "__dataclass_fields__" in value.__dict__
    )
    seen = {"modules": sorted(sys.modules), "direct": sorted(direct), "dataclasses": built}
    print("LOADED:" + json.dumps(seen))
sys.exit(code)
"""


def _train(root: Path, *args: str) -> tuple[dict[str, object], list[str], list[str], list[str]]:
    """The report of `evolve train --json ARGS` run as a user runs it, the modules loaded when it
    ended, the imports of `NOT_BY_EVOLVE` an evolve module made itself, and the dataclasses
    the loaded evolve modules define."""
    code = _PROBE.replace("NOT_BY_EVOLVE", repr(NOT_BY_EVOLVE)).replace(
        "ARGS", repr(["train", "--json", *args])
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, env=os.environ
    )
    assert done.returncode == 0, done.stderr
    out, loaded = done.stdout.rsplit("LOADED:", 1)
    seen = json.loads(loaded)
    return json.loads(out), seen["modules"], seen["direct"], seen["dataclasses"]


def test_a_train_run_loads_only_what_it_runs(workspace: Workspace) -> None:
    report, loaded, direct, built = _train(workspace.root, "--episodes", "2", "--seed", "3")
    assert len(report["outcomes"]) == 2  # type: ignore[arg-type]
    assert "evolve.train._train" in loaded and "evolve.applier._memory" in loaded
    needless = [m for m in loaded if m.startswith(NEVER)]
    assert needless == [], needless
    assert direct == [], direct
    ours = [m for m in loaded if m == "evolve" or m.startswith("evolve.")]
    assert len(ours) <= BOUND, f"{len(ours)} of evolve's modules loaded (bound {BOUND})"
    assert "evolve.envs._protocol.Task" in built  # the public seam types stay dataclasses
    assert len(built) <= DATACLASS_BOUND, f"{len(built)} dataclasses: {built}"


def test_a_warm_train_run_imports_no_yaml(workspace: Workspace, run_git: GitRunner) -> None:
    """Once a run has parsed `evolve.yaml` and `prompts/parameters.yaml`, the next run reads
    them from the workspace's YAML cache: PyYAML is not imported at all."""
    (workspace.root / "prompts" / "parameters.yaml").write_text(
        "agent.max_turns: 12\n", encoding="utf-8"
    )
    run_git(workspace.root, "add", "prompts/parameters.yaml")
    run_git(workspace.root, "commit", "-q", "-m", "tune max_turns")
    _train(workspace.root, "--episodes", "1", "--seed", "5")  # fills the caches
    report, loaded, _, _ = _train(workspace.root, "--episodes", "1", "--seed", "6")
    assert len(report["outcomes"]) == 1  # type: ignore[arg-type]
    assert "evolve.workspace._parameters" in loaded
    assert [m for m in loaded if m == "yaml" or m.startswith("yaml.")] == []


# Modules on the train path whose regular expressions compile on first use (`_lazy.pattern`,
# or a cached accessor), not at import: a run that never reaches one does not compile it.
LAZY_PATTERNS = (
    "evolve.envs.persona_world._rules", "evolve.sim._updater", "evolve.sim._agent",
    "evolve.memory._similarity", "evolve.applier._copied", "evolve.workspace._config",
    "evolve.workspace._fields", "evolve.ops._reply", "evolve.store._refs", "evolve._text",
)  # fmt: skip

_COMPILES = """
import importlib, json, re, sys
compiled = []
_compile = re._compile
def counting(pattern, flags):
    caller = sys._getframe(1)
    while caller is not None and caller.f_globals.get("__name__") == "re":
        caller = caller.f_back
    compiled.append(caller.f_globals.get("__name__") if caller is not None else None)
    return _compile(pattern, flags)
re._compile = counting
for name in MODULES:
    importlib.import_module(name)
print(json.dumps([name for name in compiled if name in MODULES]))
"""


def test_importing_the_train_path_modules_compiles_none_of_their_patterns() -> None:
    code = _COMPILES.replace("MODULES", repr(LAZY_PATTERNS))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_the_host_is_the_name_socket_gives() -> None:
    from evolve.gate._tempdirs import host as gate_host

    assert host() == gate_host() == socket.gethostname()


def test_package_text_reads_what_the_resource_reader_reads() -> None:
    for package, parts in [
        ("evolve.updaters", ("prompts", "tepa.md")),
        ("evolve.reflector", ("prompts", "system.md")),
    ]:
        expected = resources.files(package).joinpath(*parts).read_text("utf-8")
        assert package_text(package, *parts) == expected
    assert isinstance(package_files("evolve"), Path)


def test_package_text_of_a_zipped_package_goes_through_the_resource_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "pkgs.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zipped_probe/__init__.py", "")
        z.writestr("zipped_probe/prompts/a.md", "line one\nline two\n")
    monkeypatch.syspath_prepend(str(archive))
    monkeypatch.delitem(sys.modules, "zipped_probe", raising=False)
    assert not isinstance(package_files("zipped_probe"), Path)
    assert package_text("zipped_probe", "prompts", "a.md") == "line one\nline two\n"


def test_a_pattern_compiles_on_first_use_and_then_is_the_compiled_one() -> None:
    lazy = pattern(r"(?<=[.!?])\s+", re.I)
    assert "split" not in vars(lazy)  # nothing compiled yet
    assert lazy.split("One. Two!  Three") == ["One.", "Two!", "Three"]
    compiled = re.compile(r"(?<=[.!?])\s+", re.I)
    assert lazy.pattern == compiled.pattern and lazy.flags == compiled.flags
    assert lazy.sub("_", "a. b") == "a._b" and lazy.search("x") is None
    assert vars(lazy)["findall"].__self__ is vars(lazy)["search"].__self__  # one compile
    with pytest.raises(AttributeError):
        getattr(lazy, "_private")  # noqa: B009
    bad = pattern(r"(")
    with pytest.raises(re.error):
        bad.search("(")


def test_each_sim_role_is_found_in_the_module_named_for_it() -> None:
    """`sim._model.ROLE_MODULES` names where the roles outside `_roles` live: every role those
    modules register is listed there, under its own module."""
    from evolve.sim._model import ROLE_MODULES, load_roles
    from evolve.sim._role import ROLES

    load_roles()
    elsewhere = {
        name: fn.__module__
        for name, fn in ROLES.items()
        if fn.__module__ not in ("evolve.sim._roles", "evolve.sim._model")
    }
    assert elsewhere == ROLE_MODULES
    for module in set(ROLE_MODULES.values()):
        assert importlib.import_module(module) is not None
