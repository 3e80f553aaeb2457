"""The CLI in-process: `init`, `run --json`, memory changing the next run, errors and help."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evolve.cli import main
from evolve.llm import _http
from evolve.workspace import CONFIG_NAME

RunGit = Callable[..., str]

SIGNOFF = "Sign off every text message with a last line of a dash and my first name.\n"


def _tree_hash(*folders: Path) -> str:
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            digest.update(path.relative_to(folder.parent).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes() if path.is_file() else b"<dir>")
            digest.update(b"\0")
    return digest.hexdigest()


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip()]


@pytest.fixture
def ws_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Path:
    """A workspace made by `evolve init`, and the current folder set to it."""
    root = tmp_path / "ws"
    assert main(["init", str(root)]) == 0
    capsys.readouterr()
    monkeypatch.chdir(root)
    monkeypatch.delenv("EVOLVE_WORKSPACE", raising=False)
    return root


def _run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code = main(["run", "--split", "dev", "--json", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)  # exactly one JSON document
    return data


# --- init --------------------------------------------------------------------------------


def test_init_creates_a_workspace_and_says_what_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], run_git: RunGit
) -> None:
    root = tmp_path / "new"
    assert main(["init", str(root)]) == 0
    out, err = capsys.readouterr()
    assert f"created workspace {root.resolve()}" in out
    assert "persona alex" in out
    assert "evolve run --split dev" in out
    assert (root / CONFIG_NAME).is_file()
    assert run_git(root, "status", "--porcelain") == ""
    assert "Evolve-Kind: init" in run_git(root, "log", "-1", "--format=%B")


def test_init_defaults_to_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["init"]) == 0
    assert (here / CONFIG_NAME).is_file()


def test_init_persona_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "ws"
    assert main(["init", str(root), "--persona", "dana"]) == 0
    assert "persona dana" in capsys.readouterr().out
    assert "persona: dana" in (root / CONFIG_NAME).read_text(encoding="utf-8")


def test_init_refuses_a_non_empty_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "busy"
    root.mkdir()
    (root / "mine.txt").write_text("x", encoding="utf-8")
    assert main(["init", str(root)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = _error_lines(err)
    assert len(lines) == 1 and lines[0].startswith("error: ") and "not empty" in lines[0]
    assert sorted(p.name for p in root.iterdir()) == ["mine.txt"]


def test_init_twice_is_refused(ws_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(ws_root)]) == 1
    assert "already an evolve workspace" in capsys.readouterr().err


# --- run ---------------------------------------------------------------------------------


def test_run_json_reports_tasks_and_rules_and_changes_nothing(
    ws_root: Path, capsys: pytest.CaptureFixture[str], run_git: RunGit
) -> None:
    before = _tree_hash(ws_root / "memory", ws_root / "prompts")
    head = run_git(ws_root, "rev-parse", "HEAD")
    data = _run_json(capsys)
    assert data["split"] == "dev" and data["persona"] == "alex" and data["model"] == "sim"
    assert data["episodes"] == len(data["tasks"]) > 0
    task = data["tasks"][0]
    assert {"task_id", "accepted", "violations", "applicable_rules", "tokens"} <= set(task)
    assert "sms_signoff" in data["rules"]
    for rule in data["rules"].values():
        assert rule["applicable"] > 0
        assert rule["rate"] == pytest.approx(rule["violations"] / rule["applicable"], abs=1e-4)
    assert 0.0 <= data["score"] <= 1.0
    assert data["score"] == pytest.approx(
        sum(t["accepted"] for t in data["tasks"]) / len(data["tasks"]), abs=1e-4
    )
    # the run wrote its log under generations/runs/ and nothing else
    log_dir = ws_root / data["log_dir"]
    assert log_dir.is_dir() and (log_dir / "summary.json").is_file()
    assert log_dir.parent == ws_root / "generations" / "runs"
    assert run_git(ws_root, "status", "--porcelain", "--untracked-files=all") == ""
    assert run_git(ws_root, "rev-parse", "HEAD") == head
    assert _tree_hash(ws_root / "memory", ws_root / "prompts") == before


def test_run_is_deterministic(ws_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def outcome(data: dict[str, Any]) -> list[tuple[str, bool, list[str]]]:
        return [(t["task_id"], t["accepted"], sorted(t["violations"])) for t in data["tasks"]]

    assert outcome(_run_json(capsys)) == outcome(_run_json(capsys))


def test_memory_note_changes_the_next_run_and_removing_it_undoes_that(
    ws_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run_json(capsys)["rules"]["sms_signoff"]["rate"] == 1.0
    note = ws_root / "memory" / "note.md"
    note.write_text(SIGNOFF, encoding="utf-8")
    with_note = _run_json(capsys)["rules"]
    assert with_note["sms_signoff"]["rate"] == 0.0
    assert with_note["sms_greeting"]["rate"] == 1.0  # only the stated preference is learned
    note.unlink()
    assert _run_json(capsys)["rules"]["sms_signoff"]["rate"] == 1.0


def test_run_inject_none_ignores_memory(ws_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (ws_root / "memory" / "note.md").write_text(SIGNOFF, encoding="utf-8")
    assert _run_json(capsys, "--inject", "none")["rules"]["sms_signoff"]["rate"] == 1.0


def test_run_from_a_subfolder_and_with_workspace_option(
    ws_root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(ws_root / "memory")
    assert _run_json(capsys)["split"] == "dev"
    monkeypatch.chdir(tmp_path)
    assert _run_json(capsys, "--workspace", str(ws_root))["persona"] == "alex"


def test_run_runs_option_multiplies_episodes(
    ws_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = _run_json(capsys)
    two = _run_json(capsys, "--runs", "2")
    assert two["runs"] == 2
    assert two["episodes"] == 2 * one["episodes"]


def test_run_human_output(ws_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--split", "dev"]) == 0
    out = capsys.readouterr().out
    assert "persona=alex" in out and "sms_signoff" in out


# --- errors ------------------------------------------------------------------------------


def _fails(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 1) -> str:
    assert main(argv) == code
    out, err = capsys.readouterr()
    assert out == ""
    return err


def _one_sentence(err: str) -> str:
    lines = _error_lines(err)
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    return lines[0]


def test_run_outside_a_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVOLVE_WORKSPACE", raising=False)
    line = _one_sentence(_fails(capsys, ["run", "--split", "dev"]))
    assert "no evolve.yaml found" in line and "evolve init" in line


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda t: t + "colour: blue\n", "unknown key 'colour'"),
        (lambda t: t.replace("runs: 1", "runs: lots"), "key 'run.runs'"),
        (lambda t: t + "  - [unclosed\n", "not valid YAML at line"),
    ],
)
def test_run_with_a_malformed_config(
    ws_root: Path,
    capsys: pytest.CaptureFixture[str],
    edit: Callable[[str], str],
    expected: str,
) -> None:
    path = ws_root / CONFIG_NAME
    text = path.read_text(encoding="utf-8")
    assert "runs: 1" in text
    path.write_text(edit(text), encoding="utf-8")
    line = _one_sentence(_fails(capsys, ["run", "--split", "dev"]))
    assert expected in line
    assert CONFIG_NAME in line


def test_run_unknown_split(ws_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _fails(capsys, ["run", "--split", "nosuch"], code=2)
    assert "Invalid value for '--split'" in err
    assert "'nosuch' is not one of" in err


def test_run_missing_split(ws_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _fails(capsys, ["run"], code=2)
    assert "--split" in err


def test_run_unknown_model(ws_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _one_sentence(_fails(capsys, ["run", "--split", "dev", "--model", "nosuch"]))
    assert "unknown model 'nosuch'" in line and "sim" in line


def test_run_missing_api_key(
    ws_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    argv = ["run", "--split", "dev", "--model", "openai/gpt-4o-mini"]
    line = _one_sentence(_fails(capsys, argv))
    assert "OPENAI_API_KEY" in line
    assert not (ws_root / "generations" / "runs").exists()


def test_run_unreachable_endpoint(
    ws_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "sk-test-do-not-print"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9")
    # The default retry policy really sleeps (about 3 s in all); record the waits instead.
    waits: list[float] = []
    monkeypatch.setattr(
        _http, "RetryPolicy", functools.partial(_http.RetryPolicy, sleep=waits.append)
    )
    line = _one_sentence(_fails(capsys, ["run", "--split", "dev", "--model", "openai/x"]))
    assert "could not be reached" in line
    assert "http://127.0.0.1:9" in line
    assert secret not in line
    attempts = int(re.search(r"after (\d+) attempts", line).group(1))  # type: ignore[union-attr]
    assert attempts > 1 and len(waits) == attempts - 1
    assert not (ws_root / "generations" / "runs").exists()


def test_run_unknown_persona(ws_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _one_sentence(_fails(capsys, ["run", "--split", "dev", "--persona", "nobody"]))
    assert "unknown persona 'nobody'" in line and "alex" in line


def test_persona_unknown_at_init_fails_at_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "ws"
    assert main(["init", str(root)]) == 0
    capsys.readouterr()
    config = root / CONFIG_NAME  # a persona set by hand after init
    config.write_text(config.read_text().replace("persona: alex", "persona: nobody"))
    monkeypatch.chdir(root)
    line = _one_sentence(_fails(capsys, ["run", "--split", "dev"]))
    assert "unknown persona 'nobody'" in line


@pytest.mark.parametrize(
    ("persona", "says"),
    [("nobody", "unknown persona 'nobody'"), ("skills", "persona 'skills' is reserved")],
)
def test_init_refuses_a_persona_no_command_would_accept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], persona: str, says: str
) -> None:
    root = tmp_path / "ws"
    line = _one_sentence(_fails(capsys, ["init", str(root), "--skills", "--persona", persona]))
    assert says in line and not root.exists()


def test_unknown_command(capsys: pytest.CaptureFixture[str]) -> None:
    err = _fails(capsys, ["frobnicate"], code=2)
    assert "No such command 'frobnicate'" in err


# --- help --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "mentions"),
    [
        (["--help"], ["init", "run", "--version", "--help"]),
        (["-h"], ["init", "run"]),
        (
            ["run", "--help"],
            ["--split", "train", "dev", "holdout", "--model", "--runs", "--concurrency", "--json"],
        ),
        (["init", "--help"], ["DIRECTORY", "--persona"]),
    ],
)
def test_help(argv: list[str], mentions: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: evolve")
    for word in mentions:
        assert word in out, word


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert re.search(r"\d+\.\d+", capsys.readouterr().out)
