"""The mechanical filter: a lesson that names its source task's specifics is refused.

Skill compilation's hard part is a lesson that transfers; its failure mode is a rule that names a
file, a repo, a URL or a customer. The paper leans on prompt instructions; this is the cheap,
strict gate it recommends, applied to every candidate before the evolver sees it (and again
to any text the evolver writes for it). A candidate's lesson and trigger are refused when
they contain:

- anywhere: a URL, an e-mail address, a file path, a phone number or a long digit run (an id);
- from the source task: its task id; a capitalized word of the instruction that does not open
  a sentence (a contact, a place) or any word of a quoted phrase (a title, a subject); an
  amount or other number of two or more digits; the values under name-like keys of the
  trajectory's call arguments and results (names, e-mails, numbers, titles, ids) and the
  capitalized words in them.

App names (the topics) and a short list of words that are capitalized for grammar only are
never refused: "in venmo, set the visibility explicitly" is a generic lesson.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

_URL = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\S+", re.I)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_PATH = re.compile(
    r"(?:^|(?<=[\s(\"']))(?:~|\.{1,2})?(?:/[\w.-]+)+|\b[\w.-]+(?:/[\w.-]+){2,}"
    r"|\b[\w-]+\.(?:py|js|ts|md|txt|json|yaml|yml|csv|sh|html|pdf|docx?)\b"
)
_PHONE = re.compile(r"\+?\d[\d ().-]{6,}\d")
_DIGITS = re.compile(r"\d{5,}")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_QUOTED = re.compile(r"'([^']{2,80})'|\"([^\"]{2,80})\"|“([^”]{2,80})”")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_SENTENCE_END = re.compile(r"[.!?:;]\s*$")
_POSSESSIVE = re.compile(r"['’]s?$")
# Keys of call arguments/results whose values name something of this task.
_NAMEY = re.compile(
    r"name|email|phone|recipient|receiver|sender|contact|title|subject|to$|id$|card|user"
)
# Capitalized for grammar or common in instructions; never a task's specific.
GRAMMAR_WORDS = frozenset(
    [
        "i",
        "a",
        "an",
        "the",
        "my",
        "me",
        "on",
        "in",
        "for",
        "to",
        "of",
        "and",
        "or",
        "with",
        "as",
        "at",
        "by",
        "from",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "is",
        "be",
        "if",
        "then",
        "when",
        "before",
        "after",
        "every",
        "each",
        "all",
        "any",
        "no",
        "not",
        "do",
        "don't",
        "never",
        "always",
        "make",
        "save",
        "create",
        "send",
        "pay",
        "text",
        "email",
        "venmo",
        "note",
        "notes",
        "phone",
        "gmail",
        "mail",
        "message",
        "messages",
        "simple",
        "supervisor",
        "list",
        "day",
        "today",
        "tomorrow",
        "yesterday",
    ]
)


@dataclass(frozen=True)
class TaskSpecifics:
    """What a lesson learned from one task must not name."""

    task_id: str
    words: frozenset[str]  # lower-case single words
    phrases: frozenset[str]  # lower-case multi-word phrases (quoted titles, full names)
    numbers: frozenset[str]
    topics: frozenset[str] = frozenset()

    def merged(self, other: TaskSpecifics) -> TaskSpecifics:
        return TaskSpecifics(
            f"{self.task_id} {other.task_id}",
            self.words | other.words,
            self.phrases | other.phrases,
            self.numbers | other.numbers,
            self.topics | other.topics,
        )


def specifics(
    task_id: str, instruction: str, actions: str, topics: Iterable[str] = ()
) -> TaskSpecifics:
    """The specifics of a task from its instruction and its (summarized) trajectory."""
    allowed = GRAMMAR_WORDS | {t.lower() for t in topics} | _topic_words(topics)
    words: set[str] = set()
    phrases: set[str] = set()
    numbers: set[str] = set(_numbers(instruction))
    for match in _QUOTED.finditer(instruction):
        phrase = next(g for g in match.groups() if g)
        phrases.add(phrase.lower().strip())
        words |= {w.lower() for w in _WORD.findall(phrase) if len(w) > 2}
    words |= _proper_words(instruction)
    for value in _named_values(actions):
        text = str(value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            numbers |= set(_numbers(text))
            continue
        if len(text) < 3:
            continue
        phrases.add(text.lower().strip())
        words |= {w.lower() for w in _WORD.findall(text) if w[:1].isupper() and len(w) > 2}
        if "@" in text:
            words.add(text.split("@", 1)[0].lower())
    words -= allowed
    return TaskSpecifics(
        task_id,
        frozenset(w for w in words if w),
        frozenset(p for p in phrases if p and p not in allowed),
        frozenset(numbers),
        frozenset(topics),
    )


def screen(text: str, task: TaskSpecifics) -> str | None:
    """Why `text` (a lesson or trigger) is refused, or None when it names nothing specific."""
    if (m := _URL.search(text)) is not None:
        return f"names a URL ({m.group(0)[:40]})"
    if (m := _EMAIL.search(text)) is not None:
        return f"names an e-mail address ({m.group(0)[:40]})"
    if (m := _PATH.search(text)) is not None:
        return f"names a path ({m.group(0).strip()[:40]})"
    if (m := _PHONE.search(text)) is not None or (m := _DIGITS.search(text)) is not None:
        return f"names a number or id ({m.group(0)[:40]})"
    low = text.lower()
    for ident in task.task_id.split():
        if ident and ident.lower() in low:
            return f"names the source task's id ({ident})"
    for number in _numbers(text):
        if number in task.numbers:
            return f"names an amount or number from the task ({number})"
    for phrase in sorted(task.phrases, key=len, reverse=True):
        if len(phrase) > 3 and re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", low):
            return f"names {phrase!r} from the task"
    for word in _WORD.findall(text):
        if _forms(word) & task.words:
            return f"names {word!r} from the task"
    return None


def _forms(word: str) -> set[str]:
    """A word as the filter compares it: whole, without a possessive ("Jamie's" is Jamie),
    and each part of a hyphenated or apostrophized word ("Jamie-style")."""
    low = _POSSESSIVE.sub("", word.lower()).strip("'’-")
    return {low, *(part for part in re.split(r"['’-]", low) if len(part) > 2)}


def _numbers(text: str) -> list[str]:
    """Numbers of two or more digits (amounts, counts, ids), normalized (12.00 -> 12)."""
    out = []
    for raw in _NUMBER.findall(text):
        digits = raw.replace(",", ".")
        if sum(c.isdigit() for c in digits) < 2:
            continue
        try:
            value = float(digits)
        except ValueError:
            continue
        out.append(f"{value:g}")
    return out


def _proper_words(instruction: str) -> set[str]:
    """Capitalized words that do not open a sentence (names, places), lower-cased."""
    out: set[str] = set()
    previous = ""
    for match in re.finditer(r"\S+", instruction):
        token = match.group(0)
        word = _WORD.search(token)
        opens = previous == "" or _SENTENCE_END.search(previous) is not None
        if word is not None and word.group(0)[:1].isupper() and not opens:
            out.add(_POSSESSIVE.sub("", word.group(0).lower()).strip("'’-"))
        previous = token
    return out


def _topic_words(topics: Iterable[str]) -> set[str]:
    return {part for t in topics for part in t.lower().split("_")}


def _named_values(actions: str) -> list[object]:
    """Values under name-like keys in the JSON of each summarized call (args and result)."""
    out: list[object] = []
    decoder = json.JSONDecoder()
    for line in actions.splitlines():
        for start in [m.start() for m in re.finditer(r"[{\[]", line)]:
            try:
                data, _ = decoder.raw_decode(line, start)
            except ValueError:
                continue
            _collect(data, out)
            break
        arrow = line.find("-> ")
        if arrow >= 0:
            try:
                data, _ = decoder.raw_decode(line, arrow + 3)
            except ValueError:
                continue
            _collect(data, out)
    return out


def _collect(data: object, out: list[object], key: str = "") -> None:
    if isinstance(data, dict):
        for k, v in data.items():
            _collect(v, out, str(k))
    elif isinstance(data, list):
        for v in data:
            _collect(v, out, key)
    elif isinstance(data, str | int | float) and _named_key(key, data):
        out.append(data)


def _named_key(key: str, value: object) -> bool:
    if key and _NAMEY.search(key.lower()):
        return True
    return isinstance(value, int | float) and not isinstance(value, bool) and "amount" in key
