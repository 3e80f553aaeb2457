"""The boundary where model text enters (evolve._text), and the \\x1f case end to end."""

from __future__ import annotations

import contextlib
import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve._text import (
    MAX_DEPTH,
    ReplyError,
    fragment,
    is_placeholder,
    json_depth,
    loads_reply,
    printable,
    shape_error,
    unsafe_char,
)
from evolve.agent import BadReply, parse_action
from evolve.applier import MemoryApplier, plan_prompt_changes
from evolve.envs.persona_world import tool_names
from evolve.llm import MockLLM
from evolve.memory import MemoryUnit, load_units, parse_unit
from evolve.memory._unit import MalformedUnit
from evolve.ops import Op
from evolve.train import train
from evolve.updaters import parse_json_reply
from evolve.updaters._ace import SCHEMA as ACE
from evolve.updaters._base import BadReply as UpdaterBadReply
from evolve.workspace import Workspace

TOOLS = tool_names()
DONE = json.dumps({"tool": "supervisor__complete_task", "arguments": {}})


@pytest.mark.parametrize("ch", ["\x00", "\x1f", "\x1e", "\r", "\x7f", "\x85", "\u2028", "\ud800"])
def test_unsafe_characters_are_refused_in_any_string_of_a_reply(ch: str) -> None:
    assert unsafe_char(f"a{ch}b") == ch
    for value in ({"k": f"a{ch}"}, {f"k{ch}": "v"}, [[f"{ch}"]]):
        for ascii_only in (True, False):
            with pytest.raises(ReplyError, match="contains the character U\\+"):
                loads_reply(json.dumps(value, ensure_ascii=ascii_only))
    assert "\\" in printable(ch) and unsafe_char(printable(f"x{ch}y\n\t")) is None


def test_newlines_tabs_and_any_script_are_allowed() -> None:
    text = "Line one\n\tline two: café, 日本語, emoji 🙂, ‘quotes’"
    assert loads_reply(json.dumps({"t": text})) == {"t": text}
    assert unsafe_char(text) is None


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("[" * 5000 + "]" * 5000, "deeper than"),
        ("[" * 200_000, "deeper than"),
        (json.dumps({"a": [[[[[[[[[[[[[[[[[["x"]]]]]]]]]]]]]]]]]]}), "deeper than"),
        ('{"n": ' + "9" * 5000 + "}", "not usable JSON"),
        ('{"n": NaN}', "not a JSON number"),
        ('{"n": -Infinity}', "not a JSON number"),
        ('{"n": 1e999}', "not finite"),
        ("{'single': 'quotes'}", "not valid JSON"),
    ],
)
def test_deep_huge_and_non_finite_json_is_a_clean_refusal(reply: str, reason: str) -> None:
    with pytest.raises(ReplyError, match=reason):
        loads_reply(reply)
    with pytest.raises(BadReply):
        parse_action(reply, TOOLS)
    with pytest.raises(UpdaterBadReply):
        parse_json_reply(reply)


def test_depth_counts_brackets_outside_strings_only() -> None:
    assert json_depth('{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", "b": [1]}') == 2
    assert json_depth("[" * MAX_DEPTH + "]" * MAX_DEPTH) == MAX_DEPTH
    assert loads_reply("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None


@settings(max_examples=300, deadline=None, database=None)
@given(st.text(st.characters(exclude_categories=()), max_size=200))
def test_any_text_parses_or_is_refused_cleanly(text: str) -> None:
    for parse in (lambda t: parse_action(t, TOOLS), parse_json_reply, loads_reply):
        with contextlib.suppress(ValueError):
            parse(text)
    assert unsafe_char(fragment(text)) is None


def test_parse_json_reply_checks_the_top_level_shape_against_the_schema() -> None:
    with pytest.raises(UpdaterBadReply, match="has no 'operations' field"):
        parse_json_reply('{"ops": [{"op": "add", "text": "x"}]}', ACE)
    with pytest.raises(UpdaterBadReply, match="'operations' must be a JSON array"):
        parse_json_reply('{"operations": "add x"}', ACE)
    with pytest.raises(UpdaterBadReply, match="must be a JSON object"):
        parse_json_reply("[1, 2]", ACE)
    ok = parse_json_reply('Sure!\n```json\n{"operations": [], "thought": "none"}\n```', ACE)
    assert ok == {"operations": [], "thought": "none"}
    assert shape_error({"tag": "x"}, {"properties": {"tag": {"enum": ["a"]}}}) == (
        "'tag' must be one of \"a\""
    )


@pytest.mark.parametrize(
    "text", ["", "  ", "...", "…", "-", "<bullet>", "{text}", "[insert rule]", "TODO", "N/A",
             "none.", "Placeholder", "lorem ipsum"],
)  # fmt: skip
def test_placeholders(text: str) -> None:
    assert is_placeholder(text)


@pytest.mark.parametrize(
    "text", ["Sign texts with -A.", "No", "Use card 4242", "[ace-1] Send privately", "<3 Sam"]
)
def test_statements_are_not_placeholders(text: str) -> None:
    assert not is_placeholder(text)


# --- the last lines of defence --------------------------------------------------------------


def test_a_unit_with_an_unsafe_character_is_malformed_on_disk_and_in_code() -> None:
    with pytest.raises(ValueError, match="U\\+001F"):
        MemoryUnit(id="u-1", recipe="ace", kind="bullet", text="a\x1fb")
    raw = "---\nid: u-1\nrecipe: ace\nkind: bullet\n---\nhand edit \x1f here\n"
    with pytest.raises(MalformedUnit, match="U\\+001F"):
        parse_unit("memory/u-1.md", raw)


def test_the_applier_refuses_placeholder_units(workspace: Workspace) -> None:
    unit = MemoryUnit(id="ace-1", recipe="ace", kind="bullet", scope="user:alex", text="...")
    result = MemoryApplier(workspace, "user:alex").apply([Op(op="add", unit=unit)], [])
    assert not result.applied and "placeholder" in result.refused[0].reason
    assert not (workspace.root / "memory" / "alex" / "ace-1.md").exists()


@pytest.mark.parametrize("path", ["prompts/a\ud800.md", "prompts/a\u2028.md", "prompts/\x1f.md"])
def test_prompt_file_names_with_unsafe_characters_are_refused(
    workspace: Workspace, path: str
) -> None:
    planned = plan_prompt_changes(
        workspace, guidance=None, edits=[{"path": path, "content": "x"}], parameters={},
        max_chars=6000,
    )  # fmt: skip
    assert not planned.files and planned.refused


# --- the \x1f case (issue 9): a bullet with \x1f never reaches a commit ---------------------


@pytest.mark.parametrize("escape", [True, False])
def test_a_bullet_with_a_unit_separator_is_refused_and_git_log_still_works(
    workspace: Workspace, escape: bool
) -> None:
    bullet = json.dumps(
        {"operations": [{"op": "add", "text": "Sign texts\x1fwith -A."}]}, ensure_ascii=escape
    )
    good = json.dumps({"operations": [{"op": "add", "text": "Send payments as private."}]})
    updater = MockLLM([bullet, good])
    report = train(workspace, episodes=2, agent_llm=MockLLM(lambda m, s: DONE), updater_llm=updater)
    first, second = report.outcomes
    assert first.commit is None and "U+001F" in first.refused[0]
    assert second.commit is not None
    log = subprocess.run(
        ["git", "log", "--all", "--format=%B"], cwd=workspace.root, capture_output=True, check=True
    ).stdout
    assert b"\x1f" not in log
    assert not any("\x1f" in u.text for u in load_units(workspace.root))
    infos = workspace.store.log()  # the framing git log output is split on
    assert any(second.commit == i.sha for i in infos)
    lines = Path(workspace.runs_dir).glob("train-*.jsonl")
    records = [json.loads(x) for p in lines for x in p.read_text("utf-8").splitlines()]
    assert "U+001F" in records[0]["refused"][0]


def test_plan_prompt_changes_refuses_unsafe_text_from_any_proposer(workspace: Workspace) -> None:
    planned = plan_prompt_changes(
        workspace,
        guidance=["Be brief.", "a\ud800b", "c\x00d"],
        edits=[{"path": "prompts/x.md", "content": "# X\n\udfff\n"}],
        parameters={},
        max_chars=6000,
    )
    reasons = sorted(r.reason for r in planned.refused)
    assert reasons == [
        "contains the character U+0000",
        "contains the character U+D800",
        "the edit contains the character U+DFFF",
    ]
    assert set(planned.files) == {"prompts/system.md"}
    planned.files["prompts/system.md"].decode("utf-8")


def test_a_hand_note_with_a_control_character_is_reported_with_its_path() -> None:
    with pytest.raises(
        MalformedUnit, match="memory/note.md: Value error, contains the character U\\+000C"
    ):
        parse_unit("memory/note.md", "My note\x0c with a form feed\n")
