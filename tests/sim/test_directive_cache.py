"""The sim parses the directives of one system prompt once, whatever the number of turns; a
changed prompt is parsed again (each unchanged sentence from the sentence cache); memory stays
bounded."""

from __future__ import annotations

import pytest

from evolve.envs.persona_world import recognize
from evolve.sim import _agent, _parse
from evolve.sim._parse import PromptCache


@pytest.fixture(autouse=True)
def fresh_caches() -> None:
    _agent.PROMPTS.clear()
    _agent.STATS.clear()
    _parse.clear_sentences()


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every sentence the rules are asked about."""
    calls: list[str] = []

    def counting(sentence: str) -> list[object]:
        calls.append(sentence)
        return list(recognize(sentence))

    monkeypatch.setattr(_parse, "recognize", counting)
    return calls


def test_identical_prompts_are_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
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
    # An equal prompt built anew (another object, same content) is found by its digest.
    assert _agent.read_directives("".join(list(prompt))) == first
    assert len(calls) == 1
    _agent.read_directives(prompt + "\nAlways sign texts with Cheers.")
    assert len(calls) == 2


def test_a_changed_prompt_is_read_again_and_the_change_is_seen() -> None:
    before = "<memory>\n[tepa-1] [sms.signoff] Sign texts with '- Alex'.\n</memory>"
    after = before.replace("'- Alex'", "'Cheers, Alex'")
    first = _agent.read_directives(before)
    second = _agent.read_directives(after)
    assert first["sms.signoff"] != second["sms.signoff"]
    assert _agent.read_directives(before) == first  # the old prompt's answer is still right


def test_only_new_sentences_reach_the_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch)
    lines = [f"[tepa-{i}] Note {i} is about the garden." for i in range(50)]
    _agent.read_directives("<memory>\n" + "\n".join(lines) + "\n</memory>")
    assert len([c for c in calls if c.startswith("Note")]) == 50
    calls.clear()
    lines[7] = "[tepa-7] Payments should be private."
    assert "payment.visibility" in _agent.read_directives(
        "<memory>\n" + "\n".join(lines) + "\n</memory>"
    )
    assert calls == ["Payments should be private."]


def test_a_caller_cannot_change_what_the_next_turn_reads() -> None:
    prompt = "<memory>\nPayments should be private.\n</memory>"
    first = _agent.read_directives(prompt)
    first.clear()
    assert _agent.read_directives(prompt) == _agent.read_directives(prompt)
    assert _agent.read_directives(prompt) is not _agent.read_directives(prompt)


def test_the_prompt_cache_is_bounded_and_keeps_no_prompt_text() -> None:
    cache: PromptCache[int] = PromptCache(3)
    prompts = [f"prompt {i} " * 1000 for i in range(10)]
    for p in prompts:
        assert cache.get(p, len) == len(p)
    assert len(cache) == 3 and cache.parsed == 10
    # Entries are digests, not the prompts themselves.
    assert all(isinstance(k, bytes) and len(k) == 20 for k in cache._entries)
    cache.get(prompts[-1], len)
    assert cache.parsed == 10  # still cached
    cache.get(prompts[0], len)
    assert cache.parsed == 11  # evicted long ago, parsed again


def test_long_sentences_are_not_kept() -> None:
    sentence = "Payments should be private " + "and so on " * 300 + "."
    _parse.recognized(sentence)
    assert _parse._recognized.cache_info().currsize == 0
    _parse.recognized("Payments should be private.")
    assert _parse._recognized.cache_info().currsize == 1


def test_stats_are_read_once_per_prompt_and_again_when_it_changes() -> None:
    stats = "<stats>\n- Checksum of this note's items: 41\n</stats>"
    prompt = "<memory>\nPayments should be private.\n</memory>\n" + stats
    assert _agent.read_stats(prompt).checksum == 41
    assert _agent.read_stats("".join(list(prompt))).checksum == 41
    assert _agent.STATS.parsed == 1
    assert _agent.read_stats(prompt.replace("41", "42")).checksum == 42
    assert _agent.STATS.parsed == 2


def test_the_updater_reads_each_shown_unit_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from evolve.sim._updater import replaced_ids, shown_units

    calls: list[str] = []
    real = _parse.split_sentences  # type: ignore[attr-defined]

    def counting(text: str) -> list[str]:
        calls.append(text)
        return list(real(text))

    monkeypatch.setattr(_parse, "split_sentences", counting)
    section = "\n".join(
        [f"[tepa-{i}] [other.x] Note {i} is about the garden." for i in range(30)]
        + ["[tepa-99] [sms.signoff] Sign texts with '- Alex'."]
    )
    for n in range(5):
        shown = shown_units(section)
        assert replaced_ids(shown, "sms.signoff", f"Sign texts with '- Al {n}'.") == ["tepa-99"]
    assert len(calls) == 31  # each shown unit once, not once per request
