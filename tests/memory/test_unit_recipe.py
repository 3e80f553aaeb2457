"""A unit whose `recipe` names no registered recipe is refused in one sentence, like the other
typos of a hand edit (issue 23 item 8): it was never rendered, and `evolve show` called it
active."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conftest import one_sentence as _one_sentence
from conftest import run_cli as _cli
from evolve._format._units import BUILTIN_RECIPES
from evolve.cli import _fast
from evolve.cli._group import run as run_click
from evolve.memory import MalformedUnit, parse_unit
from evolve.updaters import RECIPES
from evolve.workspace import Workspace

RunGit = Callable[..., str]
TYPO = "---\nid: my-note\nrecipe: acee\nkind: bullet\nscope: user:alex\n---\nPay with the Amex.\n"


def test_the_shipped_recipes_are_the_registered_ones() -> None:
    assert set(RECIPES.choices()) | {"hand"} == BUILTIN_RECIPES


def test_a_recipe_typo_is_refused_naming_the_file_and_the_field() -> None:
    with pytest.raises(MalformedUnit) as caught:
        parse_unit("memory/alex/my-note.md", TYPO)
    sentence = _one_sentence(f"error: {caught.value}")
    assert "memory/alex/my-note.md" in sentence and "'acee'" in sentence
    assert "names no registered recipe" in sentence and "ace" in sentence
    # An import path is a recipe evolve can find (`recipe: mypkg.mod:Recipe`).
    parse_unit("memory/alex/my-note.md", TYPO.replace("acee", "mypkg.recipes:Mine"))


def test_commands_refuse_it_and_show_says_why_on_both_paths(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ws.root / "memory" / "alex" / "my-note.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TYPO, encoding="utf-8")
    run_git(ws.root, "add", "memory")
    run_git(ws.root, "commit", "-q", "-m", "a hand-written unit")
    head = run_git(ws.root, "rev-parse", "HEAD")
    for args in (("memory",), ("train", "--episodes", "2")):
        code, out, err = _cli(capsys, *args)
        assert code != 0 and "'acee' names no registered recipe" in _one_sentence(err), args
    assert run_git(ws.root, "rev-parse", "HEAD") == head
    for argv in (["show", "my-note"], ["show", "my-note", "--json"]):
        capsys.readouterr()
        assert _fast.run(argv) == 0
        fast = capsys.readouterr().out
        assert run_click(argv) == 0
        slow = capsys.readouterr().out
        assert fast == slow
        assert "names no registered recipe" in fast and "[active]" not in fast
