"""`recognize` asks a rule only about sentences with the words it `needs`: the same directives
as asking every rule, on every sentence of the repository's personas, evalset, prompts, docs
and test sources, and on generated statements, complaints and paraphrases of them."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml

from evolve.envs.persona_world import RULES, Directive, PersonaWorldEnv, Ref, recognize
from evolve.envs.persona_world import _rules as rules_module
from evolve.envs.persona_world._rules import Rule, split_sentences

REPO = Path(__file__).resolve().parents[2]


def every_rule(sentence: str) -> list[Directive]:
    """`recognize` as it was: every rule asked about every sentence."""
    return [d for rule in RULES if (d := rule.recognize(sentence)) is not None]


def _strings(data: Any) -> list[str]:
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for v in data.values() for s in _strings(v)]
    if isinstance(data, list):
        return [s for v in data for s in _strings(v)]
    return []


def _repo_texts() -> list[str]:
    texts: list[str] = []
    for path in sorted((REPO / "evalset").rglob("*.yaml")):
        texts += _strings(yaml.safe_load(path.read_text(encoding="utf-8")))
    for path in sorted(itertools.chain(REPO.glob("docs/**/*.md"), REPO.glob("prompts/**/*.md"))):
        texts.append(path.read_text(encoding="utf-8"))
    for path in sorted(REPO.glob("tests/**/*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        texts += [
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        ]
    return texts


def _generated() -> list[str]:
    """Every rule's statement for the values the personas hold (and a few more), its
    complaint and vague statement, each also negated, contrasted, joined with another, in
    other cases, with typographic quotes and with letters that match ASCII case-blind."""
    env = PersonaWorldEnv(REPO / "evalset")
    values: dict[str, set[Any]] = {rule.name: set() for rule in RULES}
    for name in env.personas():
        for pref in env.persona(name).preferences:
            for episode in (0, *(c.at_episode for c in pref.changes)):
                values[pref.rule].add(pref.value_at(episode))
    extra = ("Alex", "B", "Hey", "Cheers", "[Alex]", "1005", "friends", "private", "public")
    base: list[str] = []
    for rule in RULES:
        for value in sorted(values[rule.name], key=repr) + [Ref("initials"), *extra]:
            try:
                base.append(rule.statement(value))
            except (KeyError, ValueError):
                continue
        base.append(
            rule.instance_template.format(
                name="Sam", title="Groceries", actual="public", direction="more"
            )
        )
        base.append(rule.vague("Alex"))
    base += [
        "Sign texts with '- Alex'.",
        "Payments should be private.",
        "Start e-mails with 'Hi'.",
        "Keep the grocery list for week 3 in the shared folder.",
        "CC myself on mail.",
        "Use my usual card for Venmo.",
        "Number the items of my notes.",
        "Finish every SMS with my initials.",
        "Greet people with Howdy when texting.",
    ]
    out = list(base)
    for a, b in itertools.product(base[:40], base[-40:]):
        out.append(f"{a.rstrip('.')}, but {b[0].lower()}{b[1:]}")
        out.append(f"{a.rstrip('.')}; {b}")
    for s in base:
        low = s[0].lower() + s[1:]
        out += [
            f"Do not {low}",
            f"Never {low}",
            f"Don't {low.rstrip('.')}, {low.rstrip('.')} instead.",
            s.upper(),
            s.lower(),
            s.swapcase(),
            s.replace("'", "\u2019").replace(" \u2019", " \u2018"),
            s.replace("s", "\u017f"),
            s.replace("k", "\u212a"),
            s.replace("i", "\u0130"),
            s.replace("i", "\u0131"),
            s.replace(" ", "\u00a0"),
            s + " \u2014 always.",
        ]
    return out


@pytest.fixture(scope="module")
def sentences() -> list[str]:
    generated = _generated()
    texts = _repo_texts() + generated
    return sorted({s for text in texts for s in split_sentences(text)} | set(generated))


def test_the_same_directives_as_asking_every_rule(sentences: list[str]) -> None:
    assert len(sentences) >= 4000
    recognized = 0
    for sentence in sentences:
        expected = every_rule(sentence)
        assert recognize(sentence) == expected, sentence
        recognized += bool(expected)
    assert recognized >= 1000  # the corpus exercises recognition, not only its misses


def test_a_rule_is_on_topic_only_where_it_has_the_words_it_needs(sentences: list[str]) -> None:
    for rule in RULES:
        assert rule.needs, rule.name
        for sentence in sentences:
            if sentence.isascii() and rule.on_topic(sentence):
                low = sentence.lower()
                assert all(any(w in low for w in group) for group in rule.needs), (
                    rule.name,
                    sentence,
                )


def test_a_rule_is_not_asked_about_a_sentence_without_its_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[str] = []

    def spy(self: Rule, sentence: str) -> Directive | None:
        asked.append(self.name)
        return None

    monkeypatch.setattr(Rule, "recognize", spy)
    assert recognize("Keep the grocery notes for week 3 in a shared list.") == []
    assert asked == ["private_note_format"]  # "notes", "list": the only words it has
    asked.clear()
    recognize("Greet the user in Gr\u00fc\u00dfe style.")  # a letter beyond ASCII: every rule
    assert asked == [rule.name for rule in rules_module.RULES]
