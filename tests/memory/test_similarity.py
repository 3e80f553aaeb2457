"""Surface similarity and polarity are judged separately (seed 000 §7)."""

from __future__ import annotations

import pytest

from evolve.memory._similarity import conflicts, negated, normalize, trigram_cosine

SIGN = "Text messages should end with my first name."
SIGN_NOT = "Text messages should not end with my first name."


def test_the_seeds_negated_pair_is_similar_and_conflicts() -> None:
    score = trigram_cosine(SIGN, SIGN_NOT)
    assert score >= 0.85  # the seed measured 0.931: a threshold alone cannot see the "not"
    assert conflicts(SIGN, SIGN_NOT)
    assert conflicts(SIGN_NOT, SIGN)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "Set my Venmo payments to public visibility.",
            "Set my Venmo payments to private visibility.",
        ),
        (
            "Text messages should end with my first name.",
            "Text messages should end with my initials.",
        ),
        ("Pay with the card ending 4242.", "Pay with the card ending 1881."),
        ("Start every email with 'Hi'.", "Start every email with 'Dear'."),
    ],
)
def test_changed_values_conflict(a: str, b: str) -> None:
    assert conflicts(a, b)
    assert conflicts(b, a)


@pytest.mark.parametrize(
    "b",
    [
        SIGN,
        "Text messages should end with my first name!",
        "text messages should END with my first name",
        "  Text messages should end with my first name.  ",
    ],
)
def test_a_pure_duplicate_does_not_conflict(b: str) -> None:
    assert trigram_cosine(SIGN, b) >= 0.85
    assert not conflicts(SIGN, b)


def test_stop_word_paraphrase_does_not_conflict() -> None:
    assert not conflicts(SIGN, "Text messages must always end with my first name.")


@pytest.mark.parametrize(
    "text",
    [
        "Never use emoji.",
        "Don't cc my manager.",
        "Do not use emoji.",
        "Avoid exclamation marks.",
        "Send it without a greeting.",
    ],
)
def test_negations_are_seen(text: str) -> None:
    assert negated(text)
    assert not negated("Use emoji.")


def test_trigram_cosine_bounds_and_symmetry() -> None:
    assert trigram_cosine(SIGN, SIGN) == pytest.approx(1.0)
    assert trigram_cosine("", SIGN) == 0.0
    assert trigram_cosine(SIGN, SIGN_NOT) == pytest.approx(trigram_cosine(SIGN_NOT, SIGN))
    assert trigram_cosine(SIGN, "Pay with the card I use most often.") < 0.5


def test_normalize_is_the_same_statement_form() -> None:
    assert normalize("  Text Messages should END with my first name. ") == normalize(SIGN)
    assert normalize(SIGN) != normalize(SIGN_NOT)
    assert normalize("") == ""
