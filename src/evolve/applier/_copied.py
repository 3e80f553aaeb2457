"""Text a model copied instead of writing: refused at the applier, whatever proposed it.

Every text a model proposes that could reach the agent passes :func:`copied` before it is
written: memory units of every recipe (statements, documents, skills' lessons), the
reflector's guidance lines and its prompt-file edits. (A harness variant proposed by a model
goes through the same function.) A text is refused, with the reason logged in the existing
refusal records, when one of its lines

- is a placeholder (`evolve._text.is_placeholder`: empty, no words, ``TODO``, ``<bullet>``), or
  only the capitalized names the prompts give a reply's fields (``STATEMENT``: the prompts show
  a reply's shape with such names, which copied whole make no valid JSON);
- holds an ellipsis standing where a value belongs (``Use ... for ...``) or starts with
  ``TODO``/``TBD``/``FIXME``;
- holds a template token: one that evolve's own prompts show (``<bullet id>``, ``<id>``,
  ``$complaint``, a section tag such as ``<complaint>``), or any ``<...>`` made only of
  schema words (``<rule>``, ``<new text>``) — ``<their first name>`` is a value's shape, kept;
- largely repeats evolve's own prompts: at least half of its word 4-grams (and two, if it has two),
  appear in one of the prompt templates evolve sends its proposer
  models (``updaters/prompts``, ``reflector/prompts``, ``skills/prompts``: read as files, never
  imported). "Propose changes to the playbook as JSON" and "a preference the playbook lacks"
  are refused; a complaint line the model turned into a statement is not (the variable parts
  of a prompt are not in the templates).

A prompt-file edit is checked line by line the same way, only for the lines it adds, and
without the section tags and the ellipsis (the agent's own prompt names its `<memory>` and
shows a call as ``{"tool": "app__api", "arguments": {...}}``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

import msgspec

from evolve._io import package_files
from evolve._lazy import pattern
from evolve._text import is_placeholder, printable

# The proposer prompt folders, by their path inside the `evolve` package.
PROMPT_FOLDERS = ("updaters/prompts", "reflector/prompts", "skills/prompts")
N = 4  # word n-grams compared with the templates
SHARE = 0.5  # the part of a line's n-grams that may come from one template before it is refused

_WORD = pattern(r"[a-z0-9]+(?:'[a-z]+)?")
_ANGLE = pattern(r"</?[A-Za-z_][^<>\n]{0,60}>")
_DOLLAR = pattern(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")
_ELLIPSIS = pattern(r"(?:^|(?<=[\s\"'(\[{:,]))(?:\.{3,}|…)(?=$|[\s\"')\]},;:.])")
_LETTERS = pattern(r"[A-Za-z]+")
_CAPS = pattern(r"\b[A-Z]{2,}\b")
_TODO = pattern(r"^\W*(?:todo|tbd|fixme|xxx)\b", re.I)
# Words a schema placeholder is made of: `<bullet id>`, `<rule>`, `<the new text>`.
_SCHEMA_WORDS = frozenset(
    """a an the your my new old some any one this that here insert placeholder string value
    values id ids key keys text texts rule rules bullet bullets statement sentence lesson
    lessons preference preferences guidance item items name names field entry entries
    assertion precedent check checks skill skills trigger topic shape why reason note notes
    content path description example or null none subject verdict api argument predicate
    reflection earlier document line parameter evidence scope action kept merged candidate
    target operation""".split()  # noqa: SIM905 (a word list, read as prose)
)


class _Template(msgspec.Struct, frozen=True):
    name: str  # "updaters/prompts/ace.md"
    grams: frozenset[tuple[str, ...]]


class _Corpus(msgspec.Struct, frozen=True):
    templates: tuple[_Template, ...]
    tokens: frozenset[str]  # template tokens the prompts show, lower case
    tags: frozenset[str]  # section tags (`<complaint>`, `</task>`), lower case
    fields: frozenset[str]  # the capitalized names the prompts give a reply's fields


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("’", "'"))


def _grams(ws: list[str]) -> set[tuple[str, ...]]:
    return {tuple(ws[i : i + N]) for i in range(len(ws) - N + 1)}


def _template(name: str, text: str) -> _Template:
    # n-grams never run across a `$variable`: what fills it is not the template's text
    runs = [words(part) for part in _DOLLAR.split(text)]
    grams: set[tuple[str, ...]] = set()
    for run in runs:
        grams |= _grams(run)
    return _Template(name, frozenset(grams))


def _prompt_files() -> Iterable[tuple[str, str]]:
    root = package_files("evolve")
    for folder in PROMPT_FOLDERS:
        here = root.joinpath(*folder.split("/"))
        if not here.is_dir():
            continue
        for entry in sorted(here.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".md") and entry.is_file():
                yield f"{folder}/{entry.name}", entry.read_text("utf-8")


@lru_cache(maxsize=1)
def corpus() -> _Corpus:
    """evolve's own proposer prompts, read once per process."""
    return corpus_of(_prompt_files())


def corpus_of(files: Iterable[tuple[str, str]]) -> _Corpus:
    templates: list[_Template] = []
    found: set[str] = set()
    fields: set[str] = set()
    for name, text in files:
        templates.append(_template(name, text))
        fields.update(_CAPS.findall(text))
        found.update(token.lower() for token in _ANGLE.findall(text))
        found.update(t.lower() for t in _DOLLAR.findall(text))
    # A section tag is one the prompts also close (`<complaint>` ... `</complaint>`).
    closed = {t[2:-1] for t in found if t.startswith("</")}
    tags = {t for t in found if t.strip("</>") in closed}
    return _Corpus(tuple(templates), frozenset(found - tags), frozenset(tags), frozenset(fields))


def _schema_token(token: str) -> bool:
    inner = words(token)
    return bool(inner) and all(w in _SCHEMA_WORDS for w in inner)


def _repeats(line: str, c: _Corpus) -> str | None:
    grams = _grams(words(line))
    if not grams:
        return None  # under four words: too short to tell a copy from a coincidence
    best, where = 0, ""
    for t in c.templates:
        n = len(grams & t.grams)
        if n > best:
            best, where = n, t.name
    if best >= min(2, len(grams)) and best >= SHARE * len(grams):
        return f"{best} of its {len(grams)} word {N}-grams are in evolve's prompt {where}"
    return None


def _line_reason(line: str, c: _Corpus, statement: bool) -> str | None:
    if is_placeholder(line):
        return "a placeholder (empty, or no words), not a statement"
    if _TODO.match(line):
        return "a to-do marker, not a statement"
    names = _LETTERS.findall(line)
    if names and all(n in c.fields for n in names):
        return "only the names a prompt gives a reply's fields (STATEMENT, SUBJECT)"
    if statement and _ELLIPSIS.search(line):
        return "an ellipsis stands where a value belongs"
    lower = line.lower()
    for token in _ANGLE.findall(line):
        low = token.lower()
        if low in c.tokens or (statement and low in c.tags) or _schema_token(token):
            return f"the template token {printable(token, 40)} is copied from a prompt"
    for token in _DOLLAR.findall(line):
        if token.lower() in c.tokens:
            return f"the template variable {token} is copied from a prompt"
    for token in c.tokens:
        if token.startswith("<") and token in lower:
            return f"the template token {printable(token, 40)} is copied from a prompt"
    why = _repeats(line, c)
    return None if why is None else f"it repeats evolve's own prompt ({why})"


def copied(text: str, *, file: bool = False, kept: Iterable[str] = ()) -> str | None:
    """Why `text` is not the model's own statement (copied, placeholder), or None.

    `file`: the text is a whole prompt file (an edit): section tags and a schema's ``{...}``
    are allowed in it, and its lines in `kept` (the file as it stands) are not checked again.
    """
    if is_placeholder(text):
        return "the text is a placeholder (empty, or no words), not a statement"
    c = corpus()
    known = {line.strip() for line in kept}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line in known:
            continue
        why = _line_reason(line, c, statement=not file)
        if why is not None:
            quoted = "" if line == text.strip() else f" (line {printable(line, 60)!r})"
            return f"copied or placeholder text{quoted}: {why}"
    return None
