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
    format_message,
    format_ops,
    parse_ops,
    parse_trailers,
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
