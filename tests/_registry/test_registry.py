"""The registry mechanism (`evolve._registry`): built-ins by decorator, import paths, entry
points, one sentence for an unknown name; and the four extension points that use it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import GitRunner as RunGit
from conftest import run_cli
from evolve._builtins import PLACES
from evolve._registry import BUILT_IN, ENTRY_POINT, IMPORT_PATH, Registry
from evolve.envs import environments, make_env
from evolve.errors import UnknownName
from evolve.executors import executors, get_executor
from evolve.llm import make_llm, models
from evolve.memory import load_units
from evolve.updaters import RECIPES, get_recipe, recipes
from evolve.workspace import Workspace


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An installed package `toyplug` (0.1) on sys.path, with entry points in the groups
    `evolve.test_things` and `evolve.test_models` (not imported by anything yet)."""
    _write(
        tmp_path,
        {
            "toyplug/__init__.py": """
                class Thing:
                    pass

                def provider(rest):
                    return f"provider got {rest}"
            """,
            "toyplug-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: toyplug\nVersion: 0.1\n",
            "toyplug-0.1.dist-info/entry_points.txt": """
                [evolve.test_things]
                thing = toyplug:Thing
                broken = toyplug_missing:Thing

                [evolve.test_models]
                myprov/ = toyplug:provider
            """,
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "toyplug", raising=False)
    return tmp_path


def test_an_unknown_name_is_one_sentence_listing_the_choices() -> None:
    reg: Registry[object] = Registry("widget", "evolve.test_widgets")
    reg.register("b")(object())
    reg.register("a")(object())
    with pytest.raises(UnknownName) as caught:
        reg.lookup("nosuch")
    assert str(caught.value) == "unknown widget 'nosuch'; choose one of a, b."
    assert reg.find("nosuch") is None and "nosuch" not in reg and sorted(reg) == ["a", "b"]


@pytest.mark.parametrize(
    ("lookup", "kind"),
    [
        (lambda name: get_recipe(name), "recipe"),
        (lambda name: make_env(name, Path("evalset")), "environment"),
        (lambda name: make_llm(name), "model"),
        (lambda name: get_executor(name, 1), "executor"),
    ],
)
def test_every_extension_point_refuses_an_unknown_name_in_one_sentence(
    lookup: object, kind: str
) -> None:
    with pytest.raises(UnknownName) as caught:
        lookup("nosuch")  # type: ignore[operator]
    message = str(caught.value)
    assert message.startswith(f"unknown {kind} 'nosuch'; choose one of ") and message.endswith(".")
    assert "\n" not in message and message.count(". ") == 0


def test_the_built_ins_are_found_where_they_are_defined() -> None:
    # (at least these: a new built-in needs no edit here)
    assert {"ace", "reflexion", "rewrite", "skills", "tepa", "topl", "trace"} <= set(RECIPES)
    assert {"appworld", "persona_world"} <= set(environments)
    assert {"asyncio", "process", "ray", "serial", "threads"} <= set(executors)
    assert {"anthropic/<model>", "mock", "openai/<model>", "sim"} <= set(models.choices())
    for registry in (recipes, environments, executors, models):
        for entry in registry.entries():
            assert entry.source == BUILT_IN and entry.where.startswith("evolve.")
    assert recipes["ace"].__module__ == "evolve.updaters._ace"  # registered in its own module


def test_model_names_keep_their_prefix_forms() -> None:
    factory, rest = models.resolve("openai/gpt-4o-mini")
    assert factory is models.resolve("openai/other")[0] and rest == "gpt-4o-mini"
    assert models.entries()[2].where == "evolve.llm._registry:openai_model"
    assert models.resolve("anthropic/claude-x")[1] == "claude-x"
    assert models.resolve("sim")[0] is models.resolve("sim:fast")[0]
    assert models.resolve("sim:fast")[1] == "fast"
    for bare in ("openai", "openai/", "anthropic"):
        with pytest.raises(UnknownName, match="choose one of anthropic/<model>, mock"):
            make_llm(bare)
    with pytest.raises(UnknownName, match="needs an environment"):
        make_llm("sim")


def test_two_objects_cannot_share_a_name() -> None:
    reg: Registry[object] = Registry("widget", "evolve.test_widgets")
    reg.register("a")(object)
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("a")(int)


def test_an_import_path_is_accepted_wherever_a_name_is(workspace: Workspace) -> None:
    env = make_env("evolve.envs.persona_world:PersonaWorldEnv", workspace.evalset_dir)
    assert type(env).__name__ == "PersonaWorldEnv"
    recipe = get_recipe("evolve.updaters._reflexion:ReflexionRecipe")
    assert recipe.name == "reflexion"
    assert get_executor("evolve.executors._base:SerialExecutor", 4).name == "serial"
    entry = next(e for e in environments.entries() if e.source == IMPORT_PATH)
    assert entry.where == "evolve.envs.persona_world._env:PersonaWorldEnv"
    assert "evolve.envs.persona_world:PersonaWorldEnv" not in environments.choices()


def test_a_wrong_import_path_says_what_to_fix() -> None:
    with pytest.raises(UnknownName) as caught:
        get_recipe("nosuchpkg.recipes:Mine")
    message = str(caught.value)
    assert message.startswith("cannot import the recipe 'nosuchpkg.recipes:Mine' (No module")
    assert "choose one of ace," in message and "\n" not in message
    with pytest.raises(UnknownName, match=r"module 'evolve.updaters' has no 'Nope'; check"):
        get_recipe("evolve.updaters:Nope")


def test_entry_points_are_read_when_a_name_is_missed_and_loaded_when_asked(
    plugin: Path,
) -> None:
    reg: Registry[type] = Registry("thing", "evolve.test_things")
    listed = {e.name: e for e in reg.entries()}
    assert listed["thing"].source == ENTRY_POINT
    assert listed["thing"].distribution == "toyplug 0.1"
    assert listed["thing"].where == "toyplug:Thing"
    assert "toyplug" not in sys.modules  # listed, not imported
    assert reg.lookup("thing").__name__ == "Thing"
    assert "toyplug" in sys.modules
    with pytest.raises(UnknownName) as caught:
        reg.lookup("broken")
    assert str(caught.value).startswith("the thing 'broken' of toyplug 0.1 cannot be imported")
    with pytest.raises(UnknownName, match="choose one of broken, thing"):
        reg.lookup("nosuch")


def test_an_entry_point_may_register_a_provider_prefix(plugin: Path) -> None:
    reg: Registry[object] = Registry("model", "evolve.test_models")
    factory, rest = reg.resolve("myprov/big-model")
    assert rest == "big-model" and factory(rest) == "provider got big-model"  # type: ignore[operator]
    assert [e.name for e in reg.entries()] == ["myprov/<model>"]


def test_a_package_place_finds_a_new_module_without_a_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(
        tmp_path,
        {
            "scanpkg/__init__.py": """
                from evolve._registry import Registry

                widgets = Registry("widget", "evolve.test_scan")
            """,
            "scanpkg/_one.py": """
                from scanpkg import widgets

                @widgets.register("one")
                class One:
                    pass
            """,
            "scanpkg/_two.py": """
                from scanpkg import widgets

                @widgets.register("two")
                class Two:
                    pass
            """,
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(PLACES, "evolve.test_scan", ("scanpkg.*",))
    import scanpkg  # type: ignore[import-not-found]

    assert sorted(scanpkg.widgets) == ["one", "two"]
    assert scanpkg.widgets.lookup("two").__module__ == "scanpkg._two"


def test_the_built_in_places_exist() -> None:
    import importlib
    import pkgutil

    for places in PLACES.values():
        for place in places:
            name = place.removesuffix(".*")
            module = importlib.import_module(name)
            if place.endswith(".*"):
                assert list(pkgutil.iter_modules(module.__path__))


def test_the_model_seam_imports_no_simulator(workspace: Workspace) -> None:
    """The registry breaks the circle llm -> sim -> agent -> llm: `evolve.llm` does not import
    `evolve.sim`; the sim is imported (from `evolve._builtins`) when `sim` is first asked for."""
    code = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        import evolve.llm
        before = sorted(m for m in sys.modules if m.startswith("evolve.sim"))
        from evolve.envs.persona_world import PersonaWorldEnv
        llm = evolve.llm.make_llm("sim", env=PersonaWorldEnv(Path(sys.argv[1])))
        print(before, llm.name)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(workspace.evalset_dir)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["[]", "sim"]


def test_plugins_lists_every_group_and_the_workspace_import_paths(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ws.root / "evolve.yaml"
    text = config.read_text("utf-8")
    assert "environment: persona_world" in text
    config.write_text(
        text.replace(
            "environment: persona_world", "environment: evolve.envs.persona_world:PersonaWorldEnv"
        ),
        "utf-8",
    )
    code, out, err = run_cli(capsys, "plugins", "--json")
    assert code == 0, err
    listed = json.loads(out)
    assert sorted(listed) == ["agents", "environments", "executors", "models", "recipes"]
    names = {group: [e["name"] for e in entries] for group, entries in listed.items()}
    assert "ace" in names["recipes"] and "sim" in names["models"]
    shown = next(e for e in listed["environments"] if e["source"] == IMPORT_PATH)
    assert shown["name"] == "evolve.envs.persona_world:PersonaWorldEnv"
    code, out, err = run_cli(capsys, "plugins")
    assert code == 0, err
    assert out.splitlines()[0] == "models:"
    assert any(line.split()[:2] == ["ace", "built-in:"] for line in out.splitlines())


def test_train_takes_any_registered_recipe_and_refuses_others_as_usage(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(
        capsys,
        "train",
        "--recipe",
        "evolve.updaters._reflexion:ReflexionRecipe",
        "--unrendered",
        "--episodes",
        "2",
    )
    assert code == 0, err
    code, _, err = run_cli(capsys, "train", "--recipe", "nosuch", "--episodes", "2")
    assert code == 2
    assert "unknown recipe 'nosuch'; choose one of ace, " in err and "reflexion" in err


def test_evolve_yaml_may_name_import_paths(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ws.root / "evolve.yaml"
    text = config.read_text("utf-8").replace(
        "environment: persona_world", "environment: evolve.envs.persona_world:PersonaWorldEnv"
    )
    config.write_text(
        text.replace("  recipe: ace", "  recipe: evolve.updaters._reflexion:ReflexionRecipe"),
        "utf-8",
    )
    run_git(ws.root, "commit", "-q", "-am", "name the environment and the recipe by import path")
    code, out, err = run_cli(capsys, "train", "--episodes", "4", "--json")
    assert code == 0, err
    assert json.loads(out)["commits"]
    units = load_units(ws.root)
    assert units and {u.recipe for u in units} == {"reflexion"}  # the recipe's own name
    code, out, err = run_cli(capsys, "run", "--split", "dev", "--json")
    assert code == 0, err
    assert json.loads(out)["episodes"]
