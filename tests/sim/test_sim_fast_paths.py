"""The sim's shortcuts read what the longer ways read: sentence splitting, the units an
updater prompt shows, vague statements, and the directives of a system prompt, each against
the code it replaced (kept here) on the repository's texts and generated ones."""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest

from evolve.agent import without_sections
from evolve.envs.persona_world import RULES, split_sentences
from evolve.sim import _agent, _updater
from evolve.sim._parse import recognized
from evolve.sim._updater import Shown, shown_units, vague_slot_of

REPO = Path(__file__).resolve().parents[2]


def old_split_sentences(text: str) -> list[str]:
    _end = re.compile(r"(?<=[.!?])\s+(?=[A-Z\[])")
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip().lstrip("-*•").strip()
        line = re.sub(r"^\[[\w.:-]+\]\s*", "", line)
        if line:
            out.extend(s.strip() for s in _end.split(line) if s.strip())
    return out


_OLD_SHOWN = re.compile(
    r"^\[([A-Za-z0-9_.:-]+)\]\s*(?:\[[A-Za-z0-9_.:-]+\]\s*)?(.*?)\s*(?:\(alpha [^)]*\))?$"
)


def old_shown_units(section_text: str | None) -> list[Shown]:
    out = []
    for line in (section_text or "").splitlines():
        m = _OLD_SHOWN.match(line.strip())
        if m:
            out.append(Shown(m.group(1), m.group(2)))
    return out


_OLD_VAGUE = [(r, r.vague_regex()) for r in RULES]


def old_vague_slot_of(statement: str) -> str | None:
    text = statement.strip()
    return next((r.slot for r, pattern in _OLD_VAGUE if pattern.fullmatch(text)), None)


def old_vague_slots_of(text: str) -> frozenset[str]:
    return frozenset(
        v for s in old_split_sentences(text) if (v := old_vague_slot_of(s)) is not None
    )


def _texts() -> list[str]:
    texts: list[str] = []
    for path in sorted(itertools.chain(REPO.glob("docs/**/*.md"), REPO.glob("prompts/**/*.md"))):
        texts.append(path.read_text(encoding="utf-8"))
    for path in sorted(REPO.glob("tests/**/*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        texts += [
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
        ]
    statements = [r.vague(who) for r in RULES for who in ("Alex", "The user", "x")]
    statements += [
        r.statement(v)
        for r in RULES
        for v in ("Alex", "private", "bullets", "date")
        if _states(r, v)
    ]
    lines = []
    spaces = (" ", "  ", "\t", "\u00a0", "\u2003", "")
    tails = ("", " (alpha 0.5)", "(alpha 1)", " (alpha 2) (alpha 3)", " (alpha x", " (alpha (a)")
    for (i, text), space, tail in itertools.product(enumerate(statements), spaces, tails):
        lines.append(f"[u{i}]{space}[k.{i}]{space}{text}{space}{tail}")
        lines.append(f"  - [u-{i}]{space}{text}{tail}{space}")
        lines.append(f"[u{i}] {text} {text}{tail}")
    texts += lines
    texts.append("\n".join(lines))
    return texts


def _states(rule: object, value: str) -> bool:
    try:
        rule.statement(value)  # type: ignore[attr-defined]
    except (KeyError, ValueError):
        return False
    return True


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return sorted(set(_texts()))


def test_sentences_split_as_before(texts: list[str]) -> None:
    assert len(texts) >= 4000
    for text in texts:
        assert split_sentences(text) == old_split_sentences(text), text


def test_shown_units_read_as_before(texts: list[str]) -> None:
    shown = 0
    for text in texts:
        new = shown_units(text)
        assert new == old_shown_units(text), text
        shown += len(new)
    assert shown >= 1000
    assert shown_units(None) == []


def test_vague_statements_read_as_before(texts: list[str]) -> None:
    found = 0
    for text in texts:
        for line in [text, *text.splitlines()[:20]]:
            assert vague_slot_of(line) == old_vague_slot_of(line), line
        assert _updater._vague_slots_of.__wrapped__(text) == old_vague_slots_of(text), text
        found += bool(old_vague_slots_of(text))
    assert found >= 100


def test_a_system_prompts_directives_read_as_before(texts: list[str]) -> None:
    def old_parse(system_prompt: str) -> tuple[tuple[str, object], ...]:
        readable = _agent._LEADING_TAGS.sub(
            r"\1", without_sections(system_prompt, ("api_docs", "stats"))
        )
        found: dict[str, object] = {}
        for sentence in old_split_sentences(readable):
            for directive in recognized(sentence):
                found[directive.slot] = directive
        return tuple(found.items())

    prompts = ["\n".join(texts[i : i + 40]) for i in range(0, len(texts), 40)]
    for prompt in prompts:
        assert _agent._parse_directives(prompt) == old_parse(prompt)
