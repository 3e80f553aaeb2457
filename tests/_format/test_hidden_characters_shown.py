"""The character policy at the boundary (issue 28): bidi controls and isolates, the BOM and
zero-width spaces are refused in model replies and in path names, escaped in commit messages
and in what `evolve show`, `evolve memory` and `evolve log` print."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from evolve._format._message import HIDDEN, clean_text, format_message
from evolve._format._views import log_entry, memory_text, show_text
from evolve._text import ReplyError, hidden_char, loads_reply, printable
from evolve.errors import PathRefused
from evolve.workspace._paths import normalize_relpath

BIDI = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"]
MARKS = ["\u200e", "\u200f", "\u061c"]
INVISIBLE = ["\ufeff", "\u200b", "\u2060", "\u180e"]
ALL = BIDI + MARKS + INVISIBLE


def _plain(text: str, **_: object) -> str:
    return text


def test_the_hidden_set_is_exactly_the_bidi_controls_bom_and_zero_width_spaces() -> None:
    assert set(ALL) == HIDDEN


@pytest.mark.parametrize("ch", ALL, ids=[f"U+{ord(c):04X}" for c in ALL])
def test_a_reply_holding_a_hidden_character_is_refused_naming_it(ch: str) -> None:
    reply = json.dumps({"tool": "app__api", "arguments": {"q": f"pay{ch}bob"}}, ensure_ascii=False)
    with pytest.raises(ReplyError, match=f"U\\+{ord(ch):04X}"):
        loads_reply(reply)
    # Escaped in the JSON source too: the decoded string is what is checked.
    with pytest.raises(ReplyError, match=f"U\\+{ord(ch):04X}"):
        loads_reply(json.dumps({"k": f"a{ch}"}))
    # In an object key too.
    with pytest.raises(ReplyError):
        loads_reply(json.dumps({f"k{ch}": "a"}))


def test_joiners_and_ordinary_unicode_stay_allowed_in_text() -> None:
    text = "caf\u00e9 \u05e9\u05dc\u05d5\u05dd \U0001f469\u200d\U0001f4bb \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"
    assert loads_reply(json.dumps({"k": text})) == {"k": text}
    assert hidden_char(text) is None


@pytest.mark.parametrize("ch", ALL, ids=[f"U+{ord(c):04X}" for c in ALL])
def test_diagnostics_and_commit_messages_escape_hidden_characters(ch: str) -> None:
    escaped = f"\\u{ord(ch):04x}"
    assert printable(f"a{ch}b") == f"a{escaped}b"
    assert clean_text(f"a{ch}b\nc") == f"a{escaped}b\nc"
    message = format_message(f"ace: add{ch} one", f"body{ch}", [("Evolve-Task", f"t{ch}")])
    assert ch not in message
    assert message.count(escaped) == 3


@pytest.mark.parametrize(
    "path",
    [
        "prompts/\u202eevil.md",
        "prompts/a\u2066b.md",
        "prompts/\ufeffsystem.md",
        "memory/a\u200bb.md",
        "memory/a\u200db.md",  # a joiner too: two names that look the same
        "prompts/soft\u00adhyphen.md",
        "prompts/tag\U000e0041.md",
    ],
)
def test_a_path_with_an_invisible_formatting_character_is_refused_in_one_sentence(
    path: str,
) -> None:
    with pytest.raises(PathRefused) as caught:
        normalize_relpath(path)
    message = str(caught.value)
    assert "invisible formatting characters are not allowed" in message
    assert message.count(".") >= 1 and "\n" not in message
    assert not any(ch in message for ch in ALL + ["\u200d", "\u00ad"])  # named escaped


def test_ordinary_unicode_paths_are_still_accepted() -> None:
    assert str(normalize_relpath("prompts/caf\u00e9.md")) == "prompts/caf\u00e9.md"
    assert (
        str(normalize_relpath("memory/\u05e9\u05dc\u05d5\u05dd.md"))
        == "memory/\u05e9\u05dc\u05d5\u05dd.md"
    )


def _unit(text: str) -> SimpleNamespace:
    return SimpleNamespace(
        id="hand-0000000001", recipe="hand", kind="note", status="active", scope="global",
        text=text, valid_from="2026-01-01", valid_to=None, created_episode=0,
        updated_episode=0, reason=None, reverted_commit=None, revoked_by=None, revoked_at=None,
        complaint="it paid \u202ethe wrong card", source_task=None,
    )  # fmt: skip


def test_show_prints_hidden_characters_escaped() -> None:
    commit = SimpleNamespace(
        sha="a" * 40, time="2026-01-01", subject="hand: \u202eevil", parents=(), body="",
        trailers={},
    )  # fmt: skip
    lines = show_text(
        "hand-0000000001",
        "memory/\u202eevil.md",
        _unit("Pay \u202e0001 and\ufeff \u200bnow\x1b[2J"),
        None,
        [(commit, ["file"], "+Pay \u2067x\u2069\n", None)],
        _plain,
    )
    out = "\n".join(lines)
    assert not any(ch in out for ch in ALL + ["\x1b"])
    for escaped in ("\\u202e", "\\ufeff", "\\u200b", "\\u2067", "\\u2069", "\\x1b"):
        assert escaped in out
    assert "memory/\\u202eevil.md" in out


def test_show_escapes_a_problem_sentence_too() -> None:
    lines = show_text("x", "memory/x.md", None, "bad \u202e field.", [], _plain)
    assert "\u202e" not in lines[0] and "\\u202e" in lines[0]


def test_memory_prints_hidden_characters_escaped_and_keeps_lines() -> None:
    lines = memory_text("b" * 40, "user:alex", "- one\u202e\n- two\ufeff\n\tthree", _plain)
    assert lines[1] == "- one\\u202e\n- two\\ufeff\n\tthree"


def test_log_prints_hidden_characters_escaped() -> None:
    entry = {
        "commit": "c" * 40, "time": "2026-01-01", "subject": "ace: \u202eadd", "kind": "train",
        "episode": 1, "task": "t\u2066", "complaint": "said \u200bno", "ops": [],
        "refused": ["refused \ufeffthis"],
    }  # fmt: skip
    out = "\n".join(log_entry(entry, _plain))
    assert not any(ch in out for ch in ALL)
    assert all(e in out for e in ("\\u202e", "\\u2066", "\\u200b", "\\ufeff"))
