"""No text in a unit, a commit message or an author name can break the store's history parsing.

The issue's case: a bullet holding `\\x1f` was committed, and from then on every command that
read `git log` crashed. Here such content reaches git both through the store and by hand.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import run_cli
from evolve.history import history, revert, show_unit
from evolve.memory import MemoryUnit, dump_unit, unit_path
from evolve.store import GitStore
from evolve.workspace import Workspace
from factories import memory_unit

RunGit = Callable[..., str]
ALEX = "user:alex"
# Everything the old framing split on, plus other control characters and a line that looks
# like a trailer.
NASTY = "sep\x1fhere\x1erec\x1dgrp\x1cfs\x00nul\x1bESC\x7f\x85\u2028 end"


def _unit(uid: str, text: str) -> MemoryUnit:
    """A unit holding `text` as a person's hand edit could: built without validation, since
    the unit model itself refuses control characters (model replies never get this far)."""
    valid = memory_unit(uid, "placeholder text", created_episode=0, updated_episode=0)
    return MemoryUnit.model_construct(**{**valid.model_dump(), "text": text})


def _write_unit(ws: Workspace, unit: MemoryUnit) -> str:
    rel = str(unit_path(unit.scope, unit.id))
    full = ws.root / rel
    full.parent.mkdir(parents=True, exist_ok=True)
    # A NUL cannot travel in YAML/Markdown text the way a file is read back; keep the rest.
    full.write_text(dump_unit(unit), encoding="utf-8")
    return rel


def _commit_nasty_unit(ws: Workspace) -> tuple[str, str]:
    unit = _unit("ace-1f1f1f1f1f", NASTY.replace("\x00", ""))
    rel = _write_unit(ws, unit)
    sha = ws.store.commit(
        [rel],
        f"learn: {NASTY}",
        body=f"Complaint:\n  {NASTY}\n\nNot-A-Trailer: {NASTY}",
        trailers=[
            ("Evolve-Kind", "train"),
            ("Evolve-Ops", f"add={unit.id}"),
            ("Evolve-Task", NASTY),
        ],
    )
    assert sha is not None
    return sha, unit.id


def _hand_commit(root: Path, message: bytes, author: str) -> str:
    """A commit made with git by hand, whose message and author hold raw control bytes."""
    (root / "memory" / "hand.md").write_text("by hand\n", encoding="utf-8")
    subprocess.run(["git", "add", "memory/hand.md"], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", f"user.name={author}", "commit", "-q", "--cleanup=verbatim", "-F", "-"],
        cwd=root,
        input=message,
        check=True,
        env={
            **__import__("os").environ,
            "GIT_AUTHOR_NAME": author,
            "GIT_COMMITTER_NAME": author,
        },
    )
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_store_commits_with_control_characters_read_back(ws: Workspace, run_git: RunGit) -> None:
    sha, _ = _commit_nasty_unit(ws)
    info = next(ws.store.log())
    assert info.sha == sha
    assert info.subject.startswith("learn: sep")
    assert info.trailers["Evolve-Kind"] == "train"
    assert info.trailers["Evolve-Ops"] == "add=ace-1f1f1f1f1f"
    assert "Evolve-Task" in info.trailers
    assert "Not-A-Trailer" not in info.trailers  # inside the body, not the trailer block
    assert "Complaint:" in info.body
    # the store writes control characters as visible escapes; git's own view agrees
    raw = run_git(ws.root, "cat-file", "commit", sha)
    assert "\\x1f" in raw and "\x1f" not in raw and "\x00" not in raw
    assert all(c.isprintable() or c in "\n\t" for c in raw)
    run_git(ws.root, "fsck", "--strict", "--no-progress", "--no-dangling")


def test_hand_commit_with_raw_separators_cannot_forge_fields(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = ws.store.head()
    # A message built to forge the old framing: field and record separators, a fake sha,
    # and a fake trailer block before the real one.
    forged = (
        b"subject \x1f with \x1e separators\n\n"
        b"body\x1fdeadbeef\x1e\x1fcafe\x1f2020\x1fEvolve-Kind: forged\n\n"
        b"Evolve-Kind: hand\nEvolve-Episode: 3\x1f4\n"
    )
    sha = _hand_commit(ws.root, forged, "Mallory \x1f\x1e")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Name\x1fWith<Sep>\nnewline")
    second, _ = _commit_nasty_unit(ws)
    infos = list(ws.store.log())
    assert [i.sha for i in infos[:3]] == [second, sha, base]
    hand = infos[1]
    assert hand.parents == (base,)
    assert hand.subject == "subject \x1f with \x1e separators"
    assert hand.trailers == {"Evolve-Kind": "hand", "Evolve-Episode": "3\x1f4"}
    assert hand.body.startswith("body\x1fdeadbeef")
    assert ws.store.commit_info(sha).trailers["Evolve-Kind"] == "hand"
    # the author name was cleaned before it went into the commit header
    author = subprocess.run(
        ["git", "log", "-1", "--format=%an"], cwd=ws.root, capture_output=True, text=True
    ).stdout.strip()
    assert "<" not in author and "\n" not in author and "\x1f" not in author
    assert [c.sha for c, _ in ws.store.log_patches(["memory"])][:2] == [second, sha]


def test_log_show_and_revert_survive_a_control_character_unit(
    ws: Workspace, capsys: pytest.CaptureFixture[str], run_git: RunGit
) -> None:
    sha, uid = _commit_nasty_unit(ws)
    # a later commit whose patch context also holds the separators
    _hand_commit(ws.root, b"by hand \x1e\x1d\n", "Hand")

    entries = history(ws.store)
    assert any(e.commit == sha for e in entries)

    shown = show_unit(ws, uid)
    assert shown.unit is None and shown.problem is not None and "U+001F" in shown.problem
    assert shown.commits and shown.commits[0][0].sha == sha
    assert "sep\x1fhere\x1erec" in shown.commits[0][1]  # the patch, intact

    code, out, err = run_cli(capsys, "log", "--json")
    assert code == 0, err
    logged: Any = json.loads(out)
    assert sha in json.dumps(logged)
    code, out, err = run_cli(capsys, "log")
    assert code == 0, err
    code, out, err = run_cli(capsys, "show", uid)
    assert code == 0, err

    result = revert(ws, sha, reason="control characters")
    assert result.reverted == sha
    info = ws.store.commit_info(result.commit)
    assert info.trailers["Evolve-Kind"] == "revert"
    assert info.trailers["Evolve-Reverts"] == sha
    code, out, err = run_cli(capsys, "log")
    assert code == 0, err
    assert run_git(ws.root, "status", "--porcelain") == ""


def test_log_patches_cannot_be_forged_by_file_content(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    store = GitStore.init(root)
    # git looks for a NUL only in a file's first 8,000 bytes to call it binary, so a NUL
    # further in travels inside the patch text: content can imitate any fixed frame.
    (root / "f.md").write_text("a\n" * 4100 + "\x00\x1e0\x00\x1d\x1f\n", encoding="utf-8")
    first = store.commit(["f.md"], "one")
    (root / "f.md").write_text("a\n" * 4100 + "x\x1ey\x1dz\x1f\n", encoding="utf-8")
    second = store.commit(["f.md"], "two")
    pairs = store.log_patches(["f.md"])
    assert [info.sha for info, _ in pairs] == [second, first]
    assert [info.subject for info, _ in pairs] == ["two", "one"]
    assert "+x\x1ey\x1dz\x1f" in pairs[0][1]
    assert "-\x00\x1e0\x00\x1d\x1f" in pairs[0][1]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    content=st.text(max_size=200),
    subject=st.text(min_size=1, max_size=60).filter(lambda s: s.split() != []),
    body=st.text(max_size=200),
    value=st.text(max_size=60),
)
def test_any_text_in_files_and_messages_parses_back(
    tmp_path_factory: pytest.TempPathFactory, content: str, subject: str, body: str, value: str
) -> None:
    root = tmp_path_factory.mktemp("fuzz")
    store = GitStore.init(root)
    (root / "u.md").write_text("base\n", encoding="utf-8")
    base = store.commit(["u.md"], "base")
    (root / "u.md").write_bytes(content.encode("utf-8", "surrogatepass") + b"\n")
    sha = store.commit(
        ["u.md"], subject, body=body, trailers={"Evolve-Task": value, "Evolve-Kind": "k"}
    )
    infos = list(store.log())
    assert [i.sha for i in infos] == ([sha, base] if sha else [base])
    if sha:
        assert infos[0].trailers["Evolve-Kind"] == "k"
        assert infos[0].parents == (base,)
        pairs = store.log_patches(["u.md"])
        assert [i.sha for i, _ in pairs] == [sha, base]
    store.close()
