"""The reading commands' fast path (`evolve.cli._fast`, `evolve.quick`) prints exactly what the
click commands print, on a workspace with every kind of file and commit evolve reads."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from evolve.cli import _fast
from evolve.cli._group import run as run_click
from evolve.memory import MemoryUnit, dump_counters, dump_unit
from evolve.train._trainref import record_refusals
from evolve.workspace import Workspace
from factories import memory_unit

RunGit = Callable[..., str]


def _write(ws: Workspace, rel: str, text: str) -> None:
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _put(ws: Workspace, unit: MemoryUnit) -> str:
    rel = unit.path().as_posix()
    _write(ws, rel, dump_unit(unit))
    return rel


def build(ws: Workspace, run_git: RunGit) -> None:
    """Units of every status and recipe, hand notes (also in nested folders), counters,
    training commits, hand commits, a `git revert`, a commit outside memory/ and refusal
    records on the side ref."""
    when = "2026-01-0{}T10:00:00+00:00"
    paths = [
        _put(
            ws,
            memory_unit(
                id="ace-01",
                text="Ask before paying.",
                valid_from=when.format(1),
                created_episode=1,
                updated_episode=3,
                complaint="it paid: twice",
                source_task="task-1",
            ),
        ),
        _put(
            ws,
            memory_unit(
                id="ace-02", text="- Keep payments private.\n- Say so.", valid_from=when.format(2)
            ),
        ),
        _put(ws, memory_unit(id="ace-03", status="pending", text="Maybe: be brief.")),
        _put(
            ws,
            memory_unit(
                id="ace-04",
                status="tombstoned",
                reason="wrong: 'public' payments",
                reverted_commit="0" * 40,
                text="Payments should be public.",
            ),
        ),
        _put(
            ws,
            memory_unit(
                id="ace-05",
                status="revoked",
                revoked_by="ace-01",
                revoked_at=3,
                text="Pay at once.",
            ),
        ),
        _put(
            ws,
            memory_unit(
                id="tepa-01",
                recipe="tepa",
                kind="precedent",
                key="pay",
                text="Confirm the amount.",
                valid_from=when.format(3),
            ),
        ),
        _put(ws, memory_unit(id="glob-1", scope="global", text="Answer in English.")),
        _put(
            ws,
            memory_unit(
                id="ace-06",
                text="Ünïcode and 'quotes' and #hash: fine.",
                value="42",
                predicate="yes",
                argument="null",
            ),
        ),
    ]
    _write(
        ws,
        "memory/alex/_counters.yaml",
        dump_counters({"ace-01": {"helpful": 3, "harmful": 1}, "ace-02": {"harmful": 2}}),
    )
    _write(ws, "memory/_counters.yaml", dump_counters({"glob-1": {"helpful": 1}}))
    _write(ws, "memory/alex/note.md", "Alex pays rent on the 1st.\n* and the phone bill\n")
    _write(ws, "memory/skills/general/pay-safely.md", "Check the payee twice.\n")
    _write(ws, "memory/skills/general/odd name!.md", "A note with an odd file name.\n")
    ws.store.commit(
        [*paths, "memory/alex/_counters.yaml", "memory/_counters.yaml", "memory/alex/note.md",
         "memory/skills/general/pay-safely.md", "memory/skills/general/odd name!.md"],
        "ace · alex · episode 1 (task-1): add 8",
        body="Complaint:\n  it paid twice\n  and more\n\nRefused:\n- add ace-09: capped\n",
        trailers=[("Evolve-Episode", "1"), ("Evolve-Recipe", "ace"), ("Evolve-Task", "task-1"),
                  ("Evolve-Ops", "add=ace-01 add=ace-02"), ("Evolve-Kind", "train")],
    )  # fmt: skip
    base = ws.store.head()
    assert base is not None
    record_refusals(
        ws.store, "refusals/s/2-x.txt", "ace · alex · episode 2: refused 1",
        "Refused:\n- add ace-10: tombstoned", [("Evolve-Episode", "2"), ("Evolve-Base", base)],
    )  # fmt: skip
    _write(ws, "memory/alex/note.md", "Alex pays rent on the 2nd.\n")
    run_git(ws.root, "commit", "-qam", "hand: fix the rent day")
    _write(ws, "README-notes.txt", "not memory\n")
    run_git(ws.root, "add", "README-notes.txt")
    run_git(ws.root, "commit", "-qm", "docs only")
    run_git(ws.root, "revert", "--no-edit", "HEAD~1")
    _put(ws, memory_unit(id="ace-01", text="Ask before paying, always.", valid_from=when.format(1)))
    ws.store.commit(
        ["memory/alex/ace-01.md"], "ace · alex · episode 3 (task-2): modify 1",
        trailers=[("Evolve-Episode", "3"), ("Evolve-Ops", "modify=ace-01"),
                  ("Evolve-Generation", "2")],
    )  # fmt: skip


COMMANDS = [
    ["log"],
    ["log", "-n", "2"],
    ["log", "-n2"],
    ["log", "--max-count=3", "--json"],
    ["log", "-n", "0", "--json"],
    ["log", "--json"],
    ["log", "--jsonl"],
    ["log", "-n", "1", "--jsonl"],
    ["log", "memory/alex"],
    ["log", "memory/alex/", "prompts", "--json"],
    ["log", "-n", "0", "--json", "memory/alex/note.md"],
    ["log", "--jsonl", "--", "memory/skills"],
    ["show", "ace-01"],
    ["show", "ace-01", "--json"],
    ["show", "ace-04"],
    ["show", "ace-05", "--json"],
    ["show", "note"],
    ["show", "glob-1", "--json"],
    ["show", "pay-safely"],
    ["show", "pay-safely", "--json"],
    ["memory"],
    ["memory", "--json"],
    ["memory", "--scope", "global"],
    ["memory", "--persona", "bob", "--json"],
    ["memory", "--as-of", "HEAD~2"],
    ["memory", "--as-of=HEAD", "--json"],
    ["memory", "--as-of", "2030-01-01"],
    ["memory", "--as-of", "2030-01-01T10:00:00Z", "--json"],
]


def _both(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[str, str]:
    capsys.readouterr()
    assert _fast.run(argv) == 0, f"the fast path did not answer evolve {' '.join(argv)}"
    fast = capsys.readouterr()
    assert run_click(argv) == 0
    slow = capsys.readouterr()
    assert fast.err == slow.err
    return fast.out, slow.out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    """One workspace from :func:`build` for the tests that only read it."""
    import subprocess

    from conftest import GIT_IDENTITY
    from evolve.workspace import init_workspace

    def run_git(cwd: Path, *args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
        ).stdout

    with pytest.MonkeyPatch.context() as mp:
        for key, value in GIT_IDENTITY.items():
            mp.setenv(key, value)
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        mp.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
        ws = init_workspace(tmp_path_factory.mktemp("built") / "ws")
        build(ws, run_git)
        yield ws


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_fast_path_prints_what_the_click_command_prints(
    built: Workspace,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
) -> None:
    monkeypatch.chdir(built.root)
    monkeypatch.delenv("EVOLVE_WORKSPACE", raising=False)
    for cache in ("evolve-log.cache", "evolve-config.cache"):
        (built.store.git_dir / cache).unlink(missing_ok=True)
    for _ in range(2):  # a first run, then one with what the first remembered
        fast, slow = _both(capsys, argv)
        assert fast == slow


def test_uncommitted_and_ignored_memory_is_compared_with_head(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    build(ws, run_git)
    _write(
        ws, "memory/alex/ace-07.md", dump_unit(memory_unit(id="ace-07", text="New, uncommitted."))
    )
    for argv in (["memory"], ["memory", "--json"]):
        fast, slow = _both(capsys, argv)
        assert fast == slow and "New, uncommitted." in fast


def test_an_evicted_unit_is_found_in_history(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    build(ws, run_git)
    run_git(ws.root, "rm", "-q", "memory/alex/ace-05.md")
    run_git(ws.root, "commit", "-qm", "evict ace-05")
    for argv in (["show", "ace-05"], ["show", "ace-05", "--json"]):
        fast, slow = _both(capsys, argv)
        assert fast == slow and "evict ace-05" in fast


def test_the_workspace_option_and_environment_are_read(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:  # fmt: skip
    build(ws, run_git)
    monkeypatch.chdir(tmp_path)
    fast, slow = _both(capsys, ["log", "-C", str(ws.root), "-n", "1"])
    assert fast == slow and "episode 3" in fast
    monkeypatch.setenv("EVOLVE_WORKSPACE", str(ws.root / "memory"))
    fast, slow = _both(capsys, ["show", "glob-1"])
    assert fast == slow and "Answer in English." in fast


@pytest.mark.parametrize(
    "argv",
    [
        ["log", "--help"],
        ["log", "-h"],
        ["log", "../elsewhere"],
        ["log", ".git/config"],
        ["log", "-n", "-1"],
        ["log", "-n", "x"],
        ["log", "--json", "--jsonl"],
        ["log", "--bogus"],
        ["show"],
        ["show", "a", "b"],
        ["show", "no-such-unit"],
        ["show", "../x"],
        ["memory", "--scope", "global", "--persona", "bob"],
        ["memory", "--scope", "User:Bad"],
        ["memory", "--as-of", "1999-01-01"],
        ["memory", "--as-of", "2026-13-45"],
        ["memory", "--as-of", "no-such-rev"],
        ["memory", "--as-of"],
    ],
    ids=" ".join,
)
def test_other_forms_are_left_to_click(
    built: Workspace,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
) -> None:
    monkeypatch.chdir(built.root)
    capsys.readouterr()
    assert _fast.run(argv) is None
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("command", ["log", "show", "memory"])
def test_help_still_helps(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    from evolve.cli._main import main

    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Usage: evolve {command}") and "--workspace" in out


def test_a_generation_journal_is_recovered_by_the_full_command(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    (ws.store.git_dir / "evolve-generation.json").write_text("{}", encoding="utf-8")
    assert _fast.run(["log"]) is None


def test_malformed_and_unusual_unit_files_read_as_the_full_parser_reads_them(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    build(ws, run_git)
    # YAML the canonical writer never produces: a comment, a multi-line value, flow style.
    _write(
        ws,
        "memory/alex/odd-1.md",
        "---\n# by hand\nid: odd-1\nrecipe: ace\nkind: bullet\nscope: user:alex\n---\nOdd.\n",
    )
    _write(
        ws,
        "memory/alex/odd-2.md",
        "---\nid: odd-2\nrecipe: ace\nkind: bullet\nscope: user:alex\ncomplaint: >\n"
        "  folded\n  text\n---\nOdd two.\n",
    )
    _write(
        ws,
        "memory/alex/odd-3.md",
        "---\n{id: odd-3, recipe: ace, kind: bullet, scope: 'user:alex'}\n---\nOdd three.\n",
    )
    fast, slow = _both(capsys, ["memory", "--json"])
    assert fast == slow and "Odd three." in fast
    fast, slow = _both(capsys, ["show", "odd-2", "--json"])
    assert fast == slow and "folded text" in fast
    # A malformed unit: both commands fail with the same sentence, naming the file.
    _write(
        ws, "memory/alex/bad.md", "---\nid: bad\nrecipe: ace\nkind: bullet\nhelpful: true\n---\nx\n"
    )
    capsys.readouterr()
    from evolve.cli._main import main

    assert main(["memory"]) == 1
    fast_err = capsys.readouterr().err
    assert run_click(["memory"]) == 1
    assert capsys.readouterr().err == fast_err and "memory/alex/bad.md" in fast_err
    fast, slow = _both(capsys, ["show", "bad", "--json"])
    assert (
        fast == slow and "cannot be read" not in fast and '"problem": "memory/alex/bad.md' in fast
    )
    # A unit with front matter deeper than memory/<user>/ is the full parser's to judge.
    _write(ws, "memory/skills/general/deep.md", dump_unit(memory_unit(id="deep", scope="global")))
    assert main(["memory"]) == run_click(["memory"])


def test_a_merge_in_history_is_read_as_git_walks_it(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two learners' work merged (issue 25): the fast path answers, as the full command does
    # (git's pathspec walk decides what a history with merges shows).
    build(ws, run_git)
    run_git(ws.root, "checkout", "-qb", "side", "HEAD~1")
    _write(ws, "memory/side.md", "A side note.\n")
    run_git(ws.root, "add", "memory")
    run_git(ws.root, "commit", "-qm", "side note")
    run_git(ws.root, "checkout", "-q", "main")
    run_git(ws.root, "merge", "-q", "--no-edit", "side")
    for argv in (["log", "-n", "0", "--json"], ["log", "--jsonl"], ["log"], ["log", "-n", "2"]):
        assert _fast.run(argv) == 0
        fast = capsys.readouterr()
        assert run_click(argv) == 0
        assert capsys.readouterr() == fast
        assert "side note" in fast.out or argv[-1] == "2"


def test_styles_are_those_click_writes_on_a_terminal() -> None:
    import io

    import click

    from evolve.quick._commands import Out

    class Tty(io.StringIO):
        encoding = "utf-8"

        def isatty(self) -> bool:
            return True

    out = Out(Tty())
    for style in ({"fg": "yellow"}, {"fg": "red"}, {"bold": True}, {"dim": True}):
        assert out.style("x y", **style) == click.style("x y", **style)


@pytest.mark.parametrize("name", ["log", "show", "memory"])
def test_the_fast_parser_knows_the_click_commands_options(name: str) -> None:
    """Every option of the click command is read by the fast parser (with the same names and
    kind), or is help, which click answers; an option the parser does not know sends the
    command to click, so a new one is never ignored."""
    import click

    from evolve.cli._group import cli

    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    flags, options, short = _fast.SPEC[name]
    for param in command.params:
        if not isinstance(param, click.Option):
            continue
        longs = [o for o in param.opts if o.startswith("--")]
        shorts = [o for o in param.opts if not o.startswith("--")]
        assert len(longs) == 1, param.opts
        if param.is_flag:
            assert longs[0] in flags and not shorts
        else:
            assert longs[0] in options
            assert all(short.get(s) == longs[0] for s in shorts)
        if param.envvar:
            assert longs[0] == "--workspace" and param.envvar == "EVOLVE_WORKSPACE"
    assert _fast.parse(name, ["--no-such-option"]) is None
