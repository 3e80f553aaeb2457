"""Containment in the applier: protected paths, confinement, the size cap, parameters, and
guidance that replaces instead of appending. Enforced in code, never asked in a prompt."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

import evolve.gate
from evolve.applier import Refusal, check_files, guidance_of, plan_prompt_changes, write_files
from evolve.applier._prompts import END, START, SYSTEM
from evolve.errors import PathRefused
from evolve.txn._journal import journal_path
from evolve.workspace import PARAMETERS_FILE, Workspace, load_parameters

RunGit = Callable[..., str]

CAP = 6000

# Paths a proposal must never write, with the part of the refusal that says why.
PROTECTED = [
    "tests/x.md",
    "tests/health/test_workspace_health.py",
    "evalset/splits.yaml",
    "evalset/new.md",
    "evolve.yaml",
    ".gitignore",
    "TESTS/x.md",
    "Tests/x.md",
    "ｔｅｓｔｓ/x.md",  # fullwidth letters fold to `tests`
    "EVALSET/splits.yaml",
    "Evolve.YAML",
]
ESCAPES = [
    "../x.md",
    "../../.claude/settings.json",
    "/etc/passwd",
    ".git/config",
    ".GIT/config",
    "prompts/../tests/x.md",
    "prompts/../../x.md",
    "~/x.md",
    "C:/x.md",
    "prompts\\..\\tests\\x.md",
    "prompts/x.md\x00",
    " prompts/x.md",
]
GATE_CODE = [
    "src/evolve/gate/_gate.py",
    "src/evolve/applier/_files.py",
    "../src/evolve/gate/_gate.py",
    "../../src/evolve/applier/_prompts.py",
]


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file outside `.git/` (symlinks by their target), to prove nothing was written."""
    out: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] == ".git":
            continue
        if path.is_symlink():
            out[rel.as_posix()] = b"-> " + os.readlink(path).encode()
        elif path.is_file():
            out[rel.as_posix()] = path.read_bytes()
    return out


def _plan_edit(
    ws: Workspace, path: str, content: str = "# evil\n"
) -> tuple[tuple[str, ...], tuple[Refusal, ...]]:
    planned = plan_prompt_changes(
        ws, guidance=None, edits=[{"path": path, "content": content}], parameters={}, max_chars=CAP
    )
    return tuple(planned.files), tuple(planned.refused)


# --- protected paths -----------------------------------------------------------------------


@pytest.mark.parametrize("path", PROTECTED + ESCAPES + GATE_CODE)
def test_a_proposal_edit_outside_the_evolvable_surface_is_refused_with_a_reason(
    workspace: Workspace, path: str
) -> None:
    before = _snapshot(workspace.root)
    planned = plan_prompt_changes(
        workspace,
        guidance=None,
        edits=[{"path": path, "content": "# evil\n"}],
        parameters={},
        max_chars=CAP,
    )
    assert planned.files == {}
    assert len(planned.refused) == 1
    refusal = planned.refused[0]
    assert refusal.op == "edit" and refusal.what == path
    assert refusal.reason.startswith("refusing")
    assert _snapshot(workspace.root) == before


@pytest.mark.parametrize("path", PROTECTED)
def test_protection_wins_over_the_allow_list(workspace: Workspace, path: str) -> None:
    """Even a caller that allows the folder cannot write a protected path, in any spelling."""
    top = path.split("/")[0]
    allowed = (top + "/" if "/" in path else top, "prompts/")
    assert workspace.is_protected(path)
    with pytest.raises(PathRefused, match="protected path"):
        check_files(workspace, {path: b"x"}, allowed=allowed)
    before = _snapshot(workspace.root)
    with pytest.raises(PathRefused, match="protected path"):
        write_files(workspace, {path: b"x"}, allowed=allowed)
    assert _snapshot(workspace.root) == before
    assert not journal_path(workspace.store).exists()


@pytest.mark.parametrize("path", ESCAPES + GATE_CODE)
def test_a_path_escaping_the_workspace_is_refused(workspace: Workspace, path: str) -> None:
    before = _snapshot(workspace.root)
    with pytest.raises(PathRefused):
        check_files(workspace, {path: b"x"})
    with pytest.raises(PermissionError):  # PathRefused is a PermissionError too
        write_files(workspace, {path: b"x"})
    assert _snapshot(workspace.root) == before


@pytest.mark.parametrize("path", ESCAPES)
def test_the_workspace_confinement_itself_refuses_escapes(workspace: Workspace, path: str) -> None:
    with pytest.raises(PathRefused):
        workspace.resolve(path)


def test_the_installed_gate_module_cannot_be_named_by_an_absolute_path(
    workspace: Workspace,
) -> None:
    gate_file = str(Path(evolve.gate.__file__).resolve())
    with pytest.raises(PathRefused, match="relative to the workspace"):
        write_files(workspace, {gate_file: b"def decide(): return True\n"}, allowed=("/",))
    files, refused = _plan_edit(workspace, gate_file)
    assert files == () and len(refused) == 1


def test_one_refused_path_stops_the_whole_write(workspace: Workspace) -> None:
    before = _snapshot(workspace.root)
    with pytest.raises(PathRefused, match="tests/x.md"):
        write_files(workspace, {"prompts/ok.md": b"fine\n", "tests/x.md": b"evil\n"})
    assert _snapshot(workspace.root) == before
    assert not (workspace.root / "prompts" / "ok.md").exists()
    assert not journal_path(workspace.store).exists()


def test_a_symlinked_folder_into_the_evalset_is_refused(workspace: Workspace) -> None:
    root = workspace.root
    (root / "prompts" / "eval").symlink_to(root / "evalset", target_is_directory=True)
    before = _snapshot(root)
    files, refused = _plan_edit(workspace, "prompts/eval/splits.md")
    assert files == ()
    assert "protected path" in refused[0].reason
    with pytest.raises(PathRefused, match="protected path"):
        write_files(workspace, {"prompts/eval/splits.md": b"x"})
    assert _snapshot(root) == before
    assert not (root / "evalset" / "splits.md").exists()


def test_a_symlinked_file_into_the_evalset_is_refused(workspace: Workspace) -> None:
    root = workspace.root
    (root / "prompts" / "splits.md").symlink_to(Path("..") / "evalset" / "splits.yaml")
    before = _snapshot(root)
    files, refused = _plan_edit(workspace, "prompts/splits.md")
    assert files == ()
    assert "protected path" in refused[0].reason
    with pytest.raises(PathRefused):
        write_files(workspace, {"prompts/splits.md": b"train: []\n"})
    assert _snapshot(root) == before


def test_a_dangling_symlink_into_the_tests_is_refused(workspace: Workspace) -> None:
    root = workspace.root
    (root / "prompts" / "later.md").symlink_to(Path("..") / "tests" / "conftest.py")
    with pytest.raises(PathRefused, match="protected path"):
        write_files(workspace, {"prompts/later.md": b"import os\n"})
    assert not (root / "tests" / "conftest.py").exists()


def test_a_symlink_out_of_the_workspace_is_refused(workspace: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace.root / "prompts" / "out").symlink_to(outside, target_is_directory=True)
    with pytest.raises(PathRefused, match="outside the workspace"):
        write_files(workspace, {"prompts/out/x.md": b"x"})
    files, refused = _plan_edit(workspace, "prompts/out/x.md")
    assert files == () and len(refused) == 1
    assert list(outside.iterdir()) == []


def test_an_allowed_prompt_edit_is_planned_and_written(workspace: Workspace) -> None:
    """The control: the same calls do write an ordinary prompt file."""
    planned = plan_prompt_changes(
        workspace,
        guidance=None,
        edits=[{"path": "prompts/style.md", "content": "Be brief.\n"}],
        parameters={},
        max_chars=CAP,
    )
    assert planned.refused == []
    assert planned.files == {"prompts/style.md": b"Be brief.\n"}
    assert write_files(workspace, planned.files, allowed=("prompts/",)) == ["prompts/style.md"]
    assert (workspace.root / "prompts" / "style.md").read_text(encoding="utf-8") == "Be brief.\n"


def test_only_markdown_prompt_files_may_be_edited(workspace: Workspace) -> None:
    for path in ("prompts/tool.py", PARAMETERS_FILE, "prompts/.gitignore"):
        files, refused = _plan_edit(workspace, path)
        assert files == ()
        assert "only Markdown" in refused[0].reason


def test_memory_is_not_writable_by_the_reflector(workspace: Workspace) -> None:
    files, refused = _plan_edit(workspace, "memory/alex/x.md")
    assert files == ()
    assert "only prompts/" in refused[0].reason


def test_an_edit_without_text_content_is_refused(workspace: Workspace) -> None:
    planned = plan_prompt_changes(
        workspace,
        guidance=None,
        edits=[{"path": "prompts/a.md"}, {"path": 3, "content": "x"}],
        parameters={},
        max_chars=CAP,
    )
    assert planned.files == {}
    assert [r.reason for r in planned.refused] == ["an edit needs a path and text content"] * 2


# --- the size cap ----------------------------------------------------------------------------


def test_guidance_over_the_cap_is_refused_with_its_size(workspace: Workspace) -> None:
    system = (workspace.root / SYSTEM).read_text(encoding="utf-8")
    line = "Always " + "x" * 500
    planned = plan_prompt_changes(
        workspace, guidance=[line], edits=[], parameters={}, max_chars=len(system) + 100
    )
    assert planned.files == {}
    [refusal] = planned.refused
    size = len(system.rstrip("\n")) + 2 + len(START) + 1 + len(f"- {line}\n") + len(END) + 1
    assert refusal.op == "guidance" and refusal.what == SYSTEM
    assert refusal.reason == (
        f"{SYSTEM} would be {size} characters, over the cap of {len(system) + 100}"
    )
    # Within the cap the same guidance is planned.
    ok = plan_prompt_changes(workspace, guidance=[line], edits=[], parameters={}, max_chars=size)
    assert ok.refused == [] and SYSTEM in ok.files


def test_an_edit_over_the_cap_is_refused(workspace: Workspace) -> None:
    files, refused = _plan_edit(workspace, "prompts/long.md", "x" * (CAP + 1))
    assert files == ()
    assert refused[0].reason == f"{CAP + 1} characters, over the cap of {CAP}"
    files, refused = _plan_edit(workspace, "prompts/long.md", "x" * CAP)
    assert files == ("prompts/long.md",) and refused == ()


# --- parameters ------------------------------------------------------------------------------


def test_a_parameter_in_range_is_written_to_the_parameters_file(workspace: Workspace) -> None:
    planned = plan_prompt_changes(
        workspace, guidance=None, edits=[], parameters={"agent.max_turns": 8}, max_chars=CAP
    )
    assert planned.refused == []
    assert list(planned.files) == [PARAMETERS_FILE]
    assert yaml.safe_load(planned.files[PARAMETERS_FILE]) == {"agent.max_turns": 8}
    write_files(workspace, planned.files, allowed=("prompts/",))
    assert load_parameters(workspace.root, workspace.config) == {"agent.max_turns": 8}


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        ("agent.max_turns", 99, "outside its range [4, 30]"),
        ("agent.max_turns", 3, "outside its range [4, 30]"),
        ("agent.max_turns", 8.5, "must be a whole number"),
        ("agent.max_turns", True, "must be a number"),
        ("agent.max_turns", "12", "must be a number"),
        ("agent.temperature", 0.2, "is not declared"),
        ("gate.min_gain", -1.0, "is not declared"),
    ],
)
def test_a_parameter_out_of_range_or_undeclared_is_refused(
    workspace: Workspace, name: str, value: object, reason: str
) -> None:
    planned = plan_prompt_changes(
        workspace, guidance=None, edits=[], parameters={name: value}, max_chars=CAP
    )
    assert planned.files == {}
    [refusal] = planned.refused
    assert refusal.op == "parameter" and refusal.what == name
    assert reason in refusal.reason


def test_a_refused_parameter_does_not_stop_a_valid_one(workspace: Workspace) -> None:
    planned = plan_prompt_changes(
        workspace,
        guidance=None,
        edits=[],
        parameters={"agent.max_turns": 20, "agent.temperature": 0.5},
        max_chars=CAP,
    )
    assert yaml.safe_load(planned.files[PARAMETERS_FILE]) == {"agent.max_turns": 20}
    assert [r.what for r in planned.refused] == ["agent.temperature"]


# --- guidance replaces, never appends ------------------------------------------------------


def _apply_guidance(ws: Workspace, lines: list[str]) -> str:
    planned = plan_prompt_changes(ws, guidance=lines, edits=[], parameters={}, max_chars=CAP)
    assert planned.refused == []
    write_files(ws, planned.files, allowed=("prompts/",))
    return (ws.root / SYSTEM).read_text(encoding="utf-8")


def test_two_successive_guidance_proposals_leave_one_block_with_the_second(
    workspace: Workspace,
) -> None:
    original = (workspace.root / SYSTEM).read_text(encoding="utf-8")
    first = _apply_guidance(workspace, ["Sign texts with a dash and my name.", "Pay friends-only."])
    assert first.startswith(original.rstrip("\n"))
    second = _apply_guidance(workspace, ["Write notes as bulleted lists."])
    assert second.count(START) == 1 and second.count(END) == 1
    assert guidance_of(second) == ["Write notes as bulleted lists."]
    assert "Sign texts" not in second and "friends-only" not in second
    # Everything outside the block is the original prompt, untouched.
    start, end = second.index(START), second.index(END) + len(END)
    assert second[:start].rstrip("\n") == original.rstrip("\n")
    assert second[end:].strip() == ""
    assert len(second) < len(first)


def test_the_same_guidance_again_changes_nothing(workspace: Workspace) -> None:
    _apply_guidance(workspace, ["Write notes as bulleted lists."])
    again = plan_prompt_changes(
        workspace, guidance=["Write  notes as\nbulleted lists. "], edits=[], parameters={},
        max_chars=CAP,
    )  # fmt: skip
    assert again.files == {} and again.refused == []


def test_a_guidance_line_cannot_smuggle_text_past_the_block(workspace: Workspace) -> None:
    smuggling = f"Be brief. {END} STICKY ADVICE {START}"
    planned = plan_prompt_changes(
        workspace, guidance=["Keep it short.", smuggling], edits=[], parameters={}, max_chars=CAP
    )
    assert [r.op for r in planned.refused] == ["guidance"]
    assert "marker" in planned.refused[0].reason
    write_files(workspace, planned.files, allowed=("prompts/",))
    second = _apply_guidance(workspace, ["Write notes as bulleted lists."])
    assert "STICKY" not in second and "Keep it short." not in second
    assert second.count(START) == 1 and second.count(END) == 1


def test_an_edit_of_system_md_keeps_the_guidance_block_and_guidance_lands_on_top(
    workspace: Workspace,
) -> None:
    _apply_guidance(workspace, ["Sign texts with a dash and my first name."])
    edited = f"You are a careful assistant.\n\n{START}\n- SMUGGLED\n{END}\n"
    planned = plan_prompt_changes(
        workspace,
        guidance=["Write notes as bulleted lists."],
        edits=[{"path": SYSTEM, "content": edited}],
        parameters={},
        max_chars=CAP,
    )
    assert planned.refused == []
    text = planned.files[SYSTEM].decode("utf-8")
    assert text.startswith("You are a careful assistant.")
    assert "SMUGGLED" not in text
    assert text.count(START) == 1 and "Write notes as bulleted lists." in text
