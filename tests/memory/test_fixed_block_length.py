"""The token-matched control is exactly as long as what it matches.

`fixed_block(n)` cut its filler at `n` characters and stripped a trailing space, so where the
cut fell on a space the control was one character short of the arm it matched (`compare`'s
skills arm at 535 characters got a 534-character control).
"""

from __future__ import annotations

from evolve.memory import fixed_block


def test_every_length_is_matched_exactly_and_the_block_ends_on_no_space() -> None:
    for n in range(1, 1200):
        block = fixed_block(n)
        assert len(block) == n, n
        assert block == block.strip(), n  # what the prompt renders is the whole block


def test_no_length_gives_nothing() -> None:
    assert fixed_block(0) == "" and fixed_block(-3) == ""
