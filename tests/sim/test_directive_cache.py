"""The sim parses the directives of one system prompt once, whatever the number of turns."""

from __future__ import annotations

import pytest

from evolve.sim import _agent


def test_identical_prompts_are_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    _agent._directives_of.cache_clear()
    calls: list[str] = []
    real = _agent.split_sentences  # type: ignore[attr-defined]

    def counting(text: str) -> list[str]:
        calls.append(text)
        return list(real(text))

    monkeypatch.setattr(_agent, "split_sentences", counting)
    prompt = "You help the user.\n<memory>\nPayments should be private.\n</memory>"
    first = _agent.read_directives(prompt)
    for _ in range(5):
        assert _agent.read_directives(prompt) == first
    assert len(calls) == 1
    _agent.read_directives(prompt + "\nAlways sign texts with Cheers.")
    assert len(calls) == 2


def test_a_caller_cannot_change_what_the_next_turn_reads() -> None:
    prompt = "<memory>\nPayments should be private.\n</memory>"
    first = _agent.read_directives(prompt)
    first.clear()
    assert _agent.read_directives(prompt) == _agent.read_directives(prompt)
    assert _agent.read_directives(prompt) is not _agent.read_directives(prompt)
