"""Commit messages and trailers (DESIGN.md §8, contract)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evolve.store import (
    EPISODE,
    GENERATION,
    KIND,
    OPS,
    PERSONA,
    RECIPE,
    TASK,
    clean_text,
    format_message,
    format_ops,
    parse_ops,
    parse_trailers,
    split_message,
)


def test_contract_trailer_names() -> None:
    assert (EPISODE, RECIPE, TASK, OPS, GENERATION) == (
        "Evolve-Episode",
        "Evolve-Recipe",
        "Evolve-Task",
        "Evolve-Ops",
        "Evolve-Generation",
    )
    assert (PERSONA, KIND) == ("Evolve-Persona", "Evolve-Kind")


def test_format_message_layout() -> None:
    message = format_message(
        "learn  sign-off", "Why it changed.\n\nMore.", {EPISODE: "3", OPS: "add=u-1"}
    )
    assert message == (
        "learn sign-off\n\nWhy it changed.\n\nMore.\n\nEvolve-Episode: 3\nEvolve-Ops: add=u-1\n"
    )


def test_format_message_without_body_or_trailers() -> None:
    assert format_message("just a subject") == "just a subject\n"
    assert format_message("s", "", [(TASK, "t-1")]) == "s\n\nEvolve-Task: t-1\n"
    assert format_message("s", "  \n ", ()) == "s\n"


def test_subject_is_one_line() -> None:
    assert format_message("a\nb\tc").splitlines()[0] == "a b c"


@pytest.mark.parametrize("subject", ["", "   ", "\n\t"])
def test_empty_subject_is_refused(subject: str) -> None:
    with pytest.raises(ValueError, match="subject"):
        format_message(subject)


@pytest.mark.parametrize(
    "key", ["", "Evolve Episode", "Evolve:Episode", "1Evolve", "-x", "Évolve", "a\nb", "Key:"]
)
def test_invalid_trailer_keys_are_refused(key: str) -> None:
    with pytest.raises(ValueError, match="invalid trailer key"):
        format_message("s", trailers={key: "v"})


def test_trailer_values_are_flattened_and_empty_values_dropped() -> None:
    message = format_message("s", trailers=[(EPISODE, " 1 \n 2 "), (TASK, "  "), (OPS, "")])
    assert message == "s\n\nEvolve-Episode: 1 2\n"


def test_parse_trailers() -> None:
    block = "Evolve-Episode: 3\nEvolve-Ops: add=u-1 modify=u-2\nnot a trailer\n: no key\nX-Y:z\n"
    assert parse_trailers(block) == {
        "Evolve-Episode": "3",
        "Evolve-Ops": "add=u-1 modify=u-2",
        "X-Y": "z",
    }
    assert parse_trailers("") == {}


def test_parse_trailers_keeps_colons_in_values() -> None:
    assert parse_trailers("Evolve-Task: a:b:c") == {"Evolve-Task": "a:b:c"}


def test_format_then_parse_trailers_round_trip() -> None:
    trailers = {EPISODE: "12", RECIPE: "tepa", TASK: "pay_back-3", GENERATION: "2"}
    block = format_message("s", trailers=trailers).split("\n\n")[-1]
    assert parse_trailers(block) == trailers


def test_parse_ops() -> None:
    assert parse_ops("add=u-1 modify=u-2  revoke=u-3") == [
        ("add", "u-1"),
        ("modify", "u-2"),
        ("revoke", "u-3"),
    ]
    assert parse_ops("") == []
    assert parse_ops("junk add=x") == [("add", "x")]


def test_format_ops() -> None:
    assert format_ops([("add", "u-1"), ("revoke", "u-2")]) == "add=u-1 revoke=u-2"
    assert format_ops([]) == ""


_token = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=12)


@given(st.lists(st.tuples(_token, _token), max_size=8))
def test_ops_round_trip(ops: list[tuple[str, str]]) -> None:
    assert parse_ops(format_ops(ops)) == ops


@pytest.mark.slow
@given(
    st.dictionaries(
        st.from_regex(r"[A-Za-z][A-Za-z0-9-]{0,15}", fullmatch=True),
        st.text(alphabet="abc xyz=:-1", min_size=1, max_size=20).filter(lambda v: v.strip()),
        max_size=6,
    )
)
def test_trailer_round_trip_property(trailers: dict[str, str]) -> None:
    message = format_message("subject", trailers=trailers)
    parsed = parse_trailers(message.split("\n\n", 1)[1] if "\n\n" in message else "")
    assert parsed == {k: " ".join(v.split()) for k, v in trailers.items()}


# --- reading a raw message -------------------------------------------------------------


def test_split_message_reads_subject_body_and_trailers() -> None:
    message = format_message(
        "learn: x", "Complaint:\n  said y\n\nMore: not a trailer here", {"Evolve-Kind": "train"}
    )
    subject, body, trailers = split_message(message)
    assert subject == "learn: x"
    assert body == "Complaint:\n  said y\n\nMore: not a trailer here"
    assert trailers == {"Evolve-Kind": "train"}


def test_split_message_without_body_or_trailers() -> None:
    assert split_message("only a subject\n") == ("only a subject", "", {})
    assert split_message("s\n\nEvolve-Kind: x\n") == ("s", "", {"Evolve-Kind": "x"})
    assert split_message("s\n\njust a body\n") == ("s", "just a body", {})
    assert split_message("two-line\nsubject\n\nb\n") == ("two-line subject", "b", {})


def test_split_message_unfolds_continuations_and_tolerates_a_hook_line() -> None:
    folded = "s\n\nEvolve-Task: a\n  b\nEvolve-Kind: k\n"
    assert split_message(folded)[2] == {"Evolve-Task": "a b", "Evolve-Kind": "k"}
    hooked = "s\n\nEvolve-Kind: k\nEvolve-Task: t\nchecked by a hook\n"
    assert split_message(hooked)[2] == {"Evolve-Kind": "k", "Evolve-Task": "t"}
    # a plain last paragraph with one colon line is a body, not trailers
    prose = "s\n\nNote: this is prose\nand more prose\nand even more\nand more\n"
    assert split_message(prose)[2] == {}


def test_split_message_is_not_fooled_by_separator_characters() -> None:
    subject, body, trailers = split_message("a\x1fb\x1ec\n\nx\x1fy\n\nEvolve-Kind: k\x1fz\n")
    assert (subject, body, trailers) == ("a\x1fb\x1ec", "x\x1fy", {"Evolve-Kind": "k\x1fz"})


def test_format_message_escapes_control_characters_and_lone_surrogates() -> None:
    message = format_message("s\x1bx", "b\x1fo\x00d\ud800y\u2028z\tok", {"Evolve-Task": "t\x07"})
    assert "\\x1f" in message and "\\x00" in message and "\\ud800" in message
    assert "\\u2028" in message and "\\x07" in message and "\\x1b" in message
    assert "\tok" in message  # tab and newline stay
    assert all(c.isprintable() or c in "\n\t" for c in message)
    message.encode("utf-8")  # no lone surrogate left to fail the encoding
    assert clean_text("plain text\n") == "plain text\n"


@given(
    subject=st.text(min_size=1).filter(lambda s: s.split() != []),
    body=st.text(),
    value=st.text(),
)
def test_any_text_round_trips_through_a_message(subject: str, body: str, value: str) -> None:
    message = format_message(subject, body, {"Evolve-Task": value, "Evolve-Kind": "k"})
    got_subject, _, trailers = split_message(message)
    assert got_subject == " ".join(clean_text(subject).split())
    assert trailers["Evolve-Kind"] == "k"
    flat = " ".join(clean_text(value).split())
    assert trailers.get("Evolve-Task", "") == flat
