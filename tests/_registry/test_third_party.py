"""A third-party package adds a recipe and an environment through entry points, with no
change to evolve: it is installed by pip (offline, from a wheel built here) into a new virtual
environment that sees this evolve, and `evolve train` and `evolve evolve --dry-run` run with
them as subprocesses of that environment's python."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from factories import evolve_with, plugin_wheel, venv_with_plugin

pytestmark = pytest.mark.slow


# The package's code: only evolve's public names. The recipe writes the first line of each
# complaint as a note; the environment is persona_world under another name (the sim model
# plays on persona_world's rules).
PACKAGE = '''
"""A recipe and an environment from outside evolve."""

from evolve.envs.persona_world import PersonaWorldEnv
from evolve.ops import Op
from evolve.updaters import Update
from evolve.workspace import RecipeCaps


class ToyRecipe:
    name = "toy"

    def default_caps(self, config):
        return RecipeCaps(units=5, chars=200)

    def render(self, units):
        return "\\n".join(f"[{u.id}] {u.text}" for u in units if u.status == "active")

    def verify(self, units, calls):
        return []

    def observe(self, ctx):
        update = Update()
        lines = [ln.strip("-* ").strip() for ln in ctx.episode.complaint.splitlines()]
        first = next((ln for ln in lines if ln), "")
        known = {u.text for u in ctx.mine(self.name) if u.status == "active"}
        if first and first[:200] not in known:
            update.ops = [Op(op="add", unit=ctx.new_unit(self.name, "note", first[:200]))]
        return update


class ToyDesk(PersonaWorldEnv):
    """persona_world's tasks, personas and checkers, installed under another name."""
'''

ENTRY_POINTS = """\
[evolve.recipes]
toy = evolve_toy:ToyRecipe

[evolve.environments]
toydesk = evolve_toy:ToyDesk
"""


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a new venv that sees this evolve, with `evolve_toy` installed offline."""
    root = tmp_path_factory.mktemp("third_party")
    return venv_with_plugin(root, plugin_wheel(root, "evolve_toy", PACKAGE, ENTRY_POINTS))


_evolve = evolve_with


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


def test_an_installed_package_adds_a_recipe_and_an_environment(
    python: Path, tmp_path: Path
) -> None:
    done = _evolve(python, tmp_path, "init", "ws")
    assert done.returncode == 0, done.stderr
    ws = tmp_path / "ws"
    config = ws / "evolve.yaml"
    text = config.read_text("utf-8")
    text = text.replace("environment: persona_world", "environment: toydesk")
    config.write_text(text.replace("  recipe: ace", "  recipe: toy"), "utf-8")
    _git(ws, "commit", "-q", "-am", "the third-party recipe and environment")

    listed = json.loads(_evolve(python, ws, "plugins", "--json").stdout)
    toy = next(e for e in listed["recipes"] if e["name"] == "toy")
    desk = next(e for e in listed["environments"] if e["name"] == "toydesk")
    for entry in (toy, desk):
        assert entry["source"] == "entry point" and entry["distribution"] == "evolve-toy 0.1"

    done = _evolve(python, ws, "train", "--episodes", "6", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["recipe"] == "toy" and report["commits"]
    units = sorted((ws / "memory").rglob("toy-*.md"))
    assert units, "the third-party recipe wrote no memory"
    assert all("recipe: toy" in u.read_text("utf-8") for u in units)
    assert "Evolve-Recipe: toy" in _git(ws, "log", "-1", "--format=%B", report["commits"][-1])
    assert _git(ws, "status", "--porcelain") == ""

    head = _git(ws, "rev-parse", "HEAD")
    done = _evolve(python, ws, "evolve", "--dry-run", "--generations", "1", "--json")
    assert done.returncode == 0, done.stderr
    assert _git(ws, "rev-parse", "HEAD") == head  # a dry run leaves the workspace as it was


def test_an_unknown_name_lists_the_installed_ones_too(python: Path, tmp_path: Path) -> None:
    done = _evolve(python, tmp_path, "init", "ws")
    assert done.returncode == 0, done.stderr
    done = _evolve(python, tmp_path / "ws", "train", "--recipe", "nosuch", "--episodes", "1")
    assert done.returncode == 2
    (line,) = [ln for ln in done.stderr.splitlines() if "nosuch" in ln]
    assert "unknown recipe 'nosuch'; choose one of ace, " in line and ", toy, " in line
