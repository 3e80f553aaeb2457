"""The traps a new user fell into (issue 27), each closed: a recipe the agent never sees, an
unknown persona, a hand note's provenance, evolve's own checkout taken for a workspace, and
no `-C` before the command."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import GitRunner, one_sentence, run_cli, workspace_state
from evolve.cli._group import run as run_click
from evolve.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]
UNSEEN = "note: memory holds active units the agent does not see"


def test_training_a_recipe_the_workspace_does_not_render_is_refused_with_the_fix(
    ws: Workspace, capsys: pytest.CaptureFixture[str], run_git: GitRunner
) -> None:
    before = workspace_state(ws.root, run_git)
    code, _, err = run_cli(capsys, "train", "--recipe", "topl", "--episodes", "2")
    assert code == 1
    line = one_sentence(err)
    assert "render: {recipes: [ace, topl]}" in line and "--unrendered" in line
    assert workspace_state(ws.root, run_git) == before  # nothing written


def test_skills_in_a_workspace_without_skills_is_refused_too(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "train", "--recipe", "skills", "--episodes", "1")
    assert code == 1 and "skills" in one_sentence(err)


def test_units_the_agent_does_not_see_are_named_by_memory_and_run(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "train", "--recipe", "topl", "--episodes", "4", "--unrendered")
    assert code == 0, err
    held = [
        p
        for p in (ws.root / "memory" / "alex").glob("topl-*.md")
        if "\nstatus: active\n" in p.read_text()
    ]
    assert held, "topl learned nothing in 4 episodes: the test needs units to hide"
    code, out, err = run_cli(capsys, "memory")  # the fast path
    assert code == 0 and f"{UNSEEN} ({len(held)} of topl)" in err, err
    assert "render: {recipes: [ace, topl]}" in err
    assert run_click(["memory"]) == 0  # the full command says the same
    assert f"{UNSEEN} ({len(held)} of topl)" in capsys.readouterr().err
    code, _, err = run_cli(capsys, "run", "--split", "dev", "--json")
    assert code == 0 and f"{UNSEEN} ({len(held)} of topl)" in err, err


def test_no_note_when_everything_is_rendered(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "train", "--episodes", "4")
    assert code == 0, err
    code, _, err = run_cli(capsys, "memory")
    assert code == 0 and UNSEEN not in err


@pytest.mark.parametrize("args", [["--persona", "zed"], ["--scope", "user:zed"]])
def test_an_unknown_persona_is_an_error(
    ws: Workspace, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, out, err = run_cli(capsys, "memory", *args)
    assert code != 0 and "(empty)" not in out
    line = one_sentence(err)
    assert "'zed'" in line and "alex" in line and "casey" in line
    code, _, err = run_cli(capsys, "memory", *args, "--as-of", "HEAD")
    assert code != 0 and "'zed'" in one_sentence(err)


def test_skills_are_not_a_persona(ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "memory", "--persona", "skills")
    assert code != 0 and "evolve skills" in one_sentence(err)


def test_a_known_persona_with_no_memory_yet_is_empty_not_an_error(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "memory", "--persona", "casey")
    assert code == 0 and "(empty)" in out, err


def test_show_gives_a_hand_note_its_real_provenance(
    ws: Workspace, capsys: pytest.CaptureFixture[str], run_git: GitRunner
) -> None:
    note = ws.root / "memory" / "alex" / "my-note.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("I prefer short emails.\n")
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "my note")
    added = run_git(ws.root, "rev-parse", "HEAD").strip()
    note.write_text("I prefer very short emails.\n")
    run_git(ws.root, "commit", "-qam", "shorter")
    changed = run_git(ws.root, "rev-parse", "HEAD").strip()
    outputs = [run_cli(capsys, "show", "my-note")[1], _click_out(capsys)]
    for out in outputs:
        head = "\n".join(out.splitlines()[:3])
        assert "?" not in head and "None" not in head and "episode" not in head, head
        assert "written by hand; added " in head and added[:10] in head, head
        assert "last changed " in head and changed[:10] in head, head
    code, out, _ = run_cli(capsys, "show", "my-note", "--json")
    import json

    doc = json.loads(out)
    assert doc["provenance"]["added"]["commit"] == added
    assert doc["provenance"]["last_changed"]["commit"] == changed


def _click_out(capsys: pytest.CaptureFixture[str]) -> str:
    assert run_click(["show", "my-note"]) == 0
    return capsys.readouterr().out


def _fake_checkout(root: Path, run_git: GitRunner) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "src" / "evolve").mkdir(parents=True)
    (root / "src" / "evolve" / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text('[project]\nname = "evolve"\nversion = "0"\n')
    for name in ("evolve.yaml", "evalset", "prompts", "memory"):
        src = REPO / name
        if src.is_dir():
            subprocess.run(["cp", "-r", str(src), str(root / name)], check=True)
        else:
            (root / name).write_bytes(src.read_bytes())
    run_git(root, "add", "-A")
    run_git(root, "commit", "-qm", "project")
    return root


@pytest.mark.parametrize(
    "args", [["train", "--episodes", "1"], ["memory"], ["log"], ["run", "--split", "dev"]]
)
def test_evolves_own_source_checkout_is_not_a_workspace(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    run_git: GitRunner,
    args: list[str],
) -> None:
    root = _fake_checkout(tmp_path / "evolve", run_git)
    monkeypatch.chdir(root)
    before = workspace_state(root, run_git)
    code, _, err = run_cli(capsys, *args)
    assert code == 1
    assert "evolve's own source checkout" in one_sentence(err)
    assert workspace_state(root, run_git) == before


def test_the_real_checkout_is_refused_too(capsys: pytest.CaptureFixture[str]) -> None:
    if not (REPO / "src" / "evolve" / "__init__.py").is_file():
        pytest.skip("not run from a source checkout")
    code, _, err = run_cli(capsys, "-C", str(REPO), "log", "-n", "1")
    assert code == 1 and "evolve's own source checkout" in one_sentence(err)


def test_dash_c_runs_the_command_in_that_folder_and_restores_the_callers(
    workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("EVOLVE_WORKSPACE", raising=False)
    code, out, err = run_cli(capsys, "-C", str(workspace.root), "memory")
    assert code == 0 and "# memory for user:alex" in out, err
    assert os.getcwd() == str(elsewhere)
    rel = os.path.relpath(workspace.root, tmp_path)
    code, out, _ = run_cli(capsys, "-C", str(tmp_path), "-C", rel, "log", "-n", "1")
    assert code == 0 and out.strip()
    code, out, err = run_cli(capsys, f"-C{workspace.root}", "memory")
    assert code == 0 and "# memory for user:alex" in out, err


@pytest.mark.parametrize("args", [["-C"], ["-C", "/no/such/folder", "log"]])
def test_dash_c_without_a_folder_is_one_sentence(
    capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, _, err = run_cli(capsys, *args)
    assert code == 2 and one_sentence(err).startswith("error: -C")


def test_dash_c_is_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0 and "-C DIR" in out


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--split", "dev", "--persona", "zed"],
        ["train", "--episodes", "1", "--persona", "zed"],
        ["run", "--split", "dev", "--persona", "zed", "--json"],
    ],
)
def test_an_error_after_the_progress_bar_comes_without_a_blank_line(
    ws: Workspace, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, _, err = run_cli(capsys, *args)
    assert code != 0
    assert err.startswith("error: "), repr(err)  # nothing before it: no stray empty line
    assert err.count("\n") == 1, repr(err)


def test_a_run_writes_nothing_on_a_stderr_that_is_no_terminal(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "run", "--split", "dev")
    assert code == 0 and out.strip()
    assert err == "", repr(err)
    assert run_click(["run", "--split", "dev"]) == 0  # the full command alike
    assert capsys.readouterr().err == ""
