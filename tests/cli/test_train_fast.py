"""A plain `evolve train` runs without click (`evolve.cli._fast`, issue 21 item 7: a writer
imports what it runs): it makes the commits the click command makes, prints what it prints,
says an error or an interrupt in the click group's words, and leaves every other form to
click with nothing written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from conftest import GitRunner
from evolve.cli import _fast
from evolve.cli._group import run as run_click
from evolve.txn import WriteInterrupted, WriteKeyboardInterrupt
from evolve.workspace import Workspace, init_workspace

_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[^\s'\"]*")
_SHA = re.compile(r"\b[0-9a-f]{40}\b")  # commit ids (a stream's record names its commits)


def _history(root: Path, run_git: GitRunner) -> tuple[str, ...]:
    """What training wrote, times and object ids aside: every ref's messages and changes."""
    refs = run_git(root, "for-each-ref", "--format=%(refname)").split()
    logs = (run_git(root, "log", "-p", "--format=%B", ref) for ref in sorted(refs))
    return tuple(
        _SHA.sub(
            "SHA",
            _TIME.sub("TIME", "\n".join(x for x in log.splitlines() if not x.startswith("index "))),
        )
        for log in logs
    ) + (run_git(root, "status", "--porcelain", "--untracked-files=all"),)


def _one(
    root: Path,
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *,
    fast: bool,
) -> tuple[int | None, str, str]:
    monkeypatch.chdir(root)
    capsys.readouterr()
    rc = _fast.run(argv) if fast else run_click(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _comparable(out: str) -> str:
    """stdout with the commit ids and the duration, which no two runs share, taken out."""
    try:
        data = json.loads(out)
    except ValueError:
        return "\n".join(line.split(" ", 3)[-1] for line in out.splitlines()[1:])
    data.pop("duration_s")
    data["commits"] = len(data["commits"])
    for outcome in data["outcomes"]:
        outcome["commit"] = bool(outcome["commit"])
    return json.dumps(data, sort_keys=True)


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "--episodes", "3", "--json"],
        ["train", "--episodes=2", "--seed", "5", "--feedback", "corrective", "--review"],
        ["train", "--json", "--episodes", "2", "--persona", "blair", "--seed=0"],
    ],
    ids=" ".join,
)
def test_fast_train_commits_what_the_click_command_commits(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    run_git: GitRunner,
    argv: list[str],
) -> None:
    monkeypatch.delenv("EVOLVE_WORKSPACE", raising=False)
    fast_ws, click_ws = init_workspace(tmp_path / "a"), init_workspace(tmp_path / "b")
    fast = _one(fast_ws.root, argv, monkeypatch, capsys, fast=True)
    slow = _one(click_ws.root, argv, monkeypatch, capsys, fast=False)
    assert fast[0] == slow[0] == 0
    assert fast[2] == slow[2]
    assert _comparable(fast[1]) == _comparable(slow[1])
    assert _history(fast_ws.root, run_git) == _history(click_ws.root, run_git)
    assert any("Evolve-Episode: " in log for log in _history(fast_ws.root, run_git))
    # again, from where each stream stopped (the fast path's caches now filled)
    more = [a for a in argv if not a.startswith("--episodes")]
    more = [a for a in more if not a.isdigit() or argv[argv.index(a) - 1] != "--episodes"]
    more += ["--episodes", "4"]
    assert _one(fast_ws.root, more, monkeypatch, capsys, fast=True)[0] == 0
    assert _one(click_ws.root, more, monkeypatch, capsys, fast=False)[0] == 0
    assert _history(fast_ws.root, run_git) == _history(click_ws.root, run_git)


def test_an_error_is_said_as_the_click_group_says_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    run_git: GitRunner,
) -> None:
    monkeypatch.delenv("EVOLVE_WORKSPACE", raising=False)
    said = []
    for name, fast in (("a", True), ("b", False)):
        ws = init_workspace(tmp_path / name)
        (ws.root / "memory" / "mine.md").write_text("Buy milk.\n", encoding="utf-8")
        before = _history(ws.root, run_git)
        said.append(_one(ws.root, ["train", "--episodes", "1"], monkeypatch, capsys, fast=fast))
        assert _history(ws.root, run_git) == before
    assert said[0] == said[1]
    assert said[0][0] == 1 and said[0][2].lstrip().startswith("error: memory/ has uncommitted")


@pytest.mark.parametrize(
    "raised",
    [
        KeyboardInterrupt(),
        EOFError(),
        WriteKeyboardInterrupt("the episode's write was undone.", "SIGINT"),
        WriteInterrupted("the episode's write was undone.", "SIGTERM"),
    ],
    ids=lambda e: type(e).__name__ + ("" if not isinstance(e, WriteInterrupted) else e.signame),
)
def test_an_interrupt_is_said_as_the_click_group_says_it(
    ws: Workspace,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    raised: BaseException,
) -> None:
    import evolve.cli._trainer

    def stopped(*args: object, **kwargs: object) -> typing.NoReturn:
        raise raised

    monkeypatch.setattr(evolve.cli._trainer, "train", stopped)
    argv = ["train", "--episodes", "1", "--json"]
    fast = _one(ws.root, argv, monkeypatch, capsys, fast=True)
    slow = _one(ws.root, argv, monkeypatch, capsys, fast=False)
    assert fast == slow
    assert fast[0] in (130, 143) and fast[2].strip() in (
        "aborted.",
        "interrupted: the episode's write was undone.",
    )


PLAIN = ["train", "--episodes", "1", "--json"]


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "--recipe", "ace"],
        ["train", "--episodes", "0"],
        ["train", "--episodes", "100001"],
        ["train", "--episodes", "two"],
        ["train", "--seed", "-1"],
        ["train", "--feedback", "loud"],
        ["train", "--review=yes"],
        ["train", "extra"],
        ["train", "--help"],
        ["train", "--model", "sim"],
        ["train", "-C", "evolve.yaml"],
        ["train", "--episodes"],
    ],
    ids=" ".join,
)
def test_other_forms_are_left_to_click(
    ws: Workspace, capsys: pytest.CaptureFixture[str], run_git: GitRunner, argv: list[str]
) -> None:
    before = _history(ws.root, run_git)
    assert _fast.run(argv) is None
    assert capsys.readouterr() == ("", "")
    assert _history(ws.root, run_git) == before
    assert _fast.run(PLAIN) == 0  # while the plain form is answered here


@pytest.mark.parametrize(
    "name", ["EVOLVE_MODEL", "EVOLVE_UPDATER_MODEL", "EVOLVE_CACHE", "_EVOLVE_COMPLETE"]
)
def test_the_environment_the_click_command_reads_is_left_to_it(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, run_git: GitRunner, name: str
) -> None:
    monkeypatch.setenv(name, "sim" if name.endswith("MODEL") else "read")
    before = _history(ws.root, run_git)
    assert _fast.run(PLAIN) is None
    assert _history(ws.root, run_git) == before
    monkeypatch.delenv(name)
    assert _fast.run(PLAIN) == 0


def test_a_journal_left_behind_is_left_to_the_click_command(ws: Workspace) -> None:
    from evolve.workspace._paths import APPLY_JOURNAL

    journal = ws.store.git_dir / APPLY_JOURNAL
    journal.write_text("{}", encoding="utf-8")
    assert _fast.run(PLAIN) is None
    assert journal.read_text(encoding="utf-8") == "{}"
    journal.unlink()
    assert _fast.run(PLAIN) == 0


def test_the_fast_parser_knows_the_train_commands_options() -> None:
    """Every option of the click command is read by the fast parser or left to click by name
    (a new option is never ignored: the parser sends what it does not know to click)."""
    import click

    from evolve.cli._common import _ROLE_OPTIONS
    from evolve.cli._group import cli
    from evolve.envs import Tier

    command = cli.get_command(click.Context(cli), "train")
    assert command is not None
    flags, options, short = _fast.SPEC["train"]
    left = {"--recipe", "--unrendered", "--model", "--updater-model", "--reflector-model", "--cache",
            "--help", "--sync", "--remote"}  # fmt: skip
    for param in command.params:
        if not isinstance(param, click.Option):
            continue
        (name,) = [o for o in param.opts if o.startswith("--")]
        assert name in flags | options | left, name
        assert all(short.get(s) == name for s in param.opts if not s.startswith("--"))
        if param.envvar and name != "--workspace":
            assert param.envvar in _fast.CLICK_ENV, param.envvar
    assert typing.get_args(Tier) == _fast.TIERS
    assert {env for _, _, env, _ in _ROLE_OPTIONS} <= set(_fast.CLICK_ENV)


def _loaded(root: Path, argv: list[str]) -> list[str]:
    code = (
        "import sys\n"
        "from evolve.cli._main import main\n"
        f"rc = main({argv!r})\n"
        "print('LOADED:' + ' '.join(sorted(sys.modules)))\n"
        "sys.exit(rc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, env=os.environ
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.rsplit("LOADED:", 1)[1].split()


NEVER = (
    "click", "evolve.cli._group", "evolve.cli._train", "evolve.cli._plugins",
    "evolve.envs.persona_world._specs",
)  # fmt: skip


def test_train_imports_no_click_and_reads_a_remembered_evalset(workspace: Workspace) -> None:
    """Deterministic (`sys.modules`, not time). The first run validates the evalset with its
    models and remembers it in `.git/`; a later one reads it back."""
    loaded = _loaded(workspace.root, ["train", "--episodes", "1", "--json"])
    assert "evolve.train" in loaded  # it did train
    assert _among(loaded, NEVER[:4]) == []
    loaded = _loaded(workspace.root, ["train", "--episodes", "2", "--json"])
    assert _among(loaded, NEVER) == []


def _among(loaded: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in loaded if any(m == n or m.startswith(n + ".") for n in names)]
