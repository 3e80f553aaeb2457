"""The applier's harness part: a generation switches modules of `prompts/harness.yaml` only
through it, each module checked, the file written whole in its canonical form."""

from __future__ import annotations

from evolve.applier import plan_prompt_changes
from evolve.harness import HARNESS_FILE, dump_choice, load_harness, parse_choice
from evolve.workspace import Workspace


def _plan(ws: Workspace, harness: dict[str, object]) -> tuple[dict[str, bytes], list[str]]:
    out = plan_prompt_changes(
        ws, guidance=None, edits=[], parameters={}, max_chars=6000, harness=harness
    )
    return {k: v for k, v in out.files.items() if v is not None}, [r.line() for r in out.refused]


def test_a_switch_writes_the_whole_file_over_what_it_says_now(workspace: Workspace) -> None:
    (workspace.root / HARNESS_FILE).write_text("memory: {variant: topk_similar, k: 2}\n")
    files, refused = _plan(workspace, {"workflow": "verify_first"})
    assert refused == []
    text = files[HARNESS_FILE].decode()
    assert parse_choice(text)["memory"] == ("topk_similar", {"k": 2})  # kept
    assert parse_choice(text)["workflow"] == ("verify_first", {})
    assert text == dump_choice(parse_choice(text))


def test_refused_modules_are_logged_and_the_rest_applied(workspace: Workspace) -> None:
    files, refused = _plan(
        workspace,
        {"tools": "docs_on_demand", "workflow": "nope", "gate": "off", "context": {"variant": 1}},
    )
    assert parse_choice(files[HARNESS_FILE].decode())["tools"] == ("docs_on_demand", {})
    assert len(refused) == 3
    assert any("workflow has no variant 'nope'" in line for line in refused)
    assert any("has no module 'gate'" in line for line in refused)


def test_no_change_writes_nothing(workspace: Workspace) -> None:
    assert _plan(workspace, {"workflow": "act"}) == ({}, [])
    assert load_harness(workspace.root).names()["workflow"] == "act"


def test_an_invalid_file_refuses_every_change(workspace: Workspace) -> None:
    (workspace.root / HARNESS_FILE).write_text("workflow: [\n")
    files, refused = _plan(workspace, {"workflow": "verify_first"})
    assert files == {} and len(refused) == 1 and "not valid YAML" in refused[0]


def test_a_markdown_edit_cannot_write_the_harness_file(workspace: Workspace) -> None:
    out = plan_prompt_changes(
        workspace, guidance=None, edits=[{"path": HARNESS_FILE, "content": "workflow: x\n"}],
        parameters={}, max_chars=6000,
    )  # fmt: skip
    assert HARNESS_FILE not in out.files
    assert "only Markdown prompt files may be edited" in out.refused[0].reason
