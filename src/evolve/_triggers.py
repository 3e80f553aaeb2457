"""Lexical trigger matching (the `lexical` skill selector, `evolve.skills._select`).

Pure text functions with no imports from evolve, so that the sim's selector role (a proposer)
can use them without loading the skills package's write path.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

_STOP = frozenset(
    """a an the and or but of to in on at for with by from as is are be been being it its this
    that these those any every each some all when whenever where which who whom what how why
    if then than so do does did doing done task tasks user users my me i you your we our
    they them their he she his her about into over after before up down out off just only
    also not no can could should would will shall may might must one two new""".split()  # noqa: SIM905
)
# A few words the tasks and triggers use for the same thing (before stemming).
_SYNONYMS = {
    "venmo": "pay",
    "sms": "text",
    "phone": "text",
    "message": "text",
    "messages": "text",
    "mail": "email",
    "gmail": "email",
    "simple_note": "note",
}
_WORD = re.compile(r"[a-z0-9_]+")


def _stem(word: str) -> str:
    """A crude stem: a common suffix off, then a final "e" (save, saving, saved -> sav)."""
    for suffix in ("ments", "ment", "ings", "ing", "ies", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def words(text: str) -> frozenset[str]:
    """The content words of `text` the lexical selector compares (lower case, stemmed)."""
    out = set()
    for raw in _WORD.findall(text.lower().replace("e-mail", "email")):
        if raw in _STOP or raw.isdigit():
            continue
        out.add(_stem(_SYNONYMS.get(raw, raw)))
    return frozenset(out)


# Lexical shares this close count as a tie that the evidence breaks (0: exact ties only; the
# measured choice, docs/sim.md "The wrong lesson against the scoreboard (measured)").
TIE_BAND = 0.0


def _band(share: float, band: float) -> float:
    """The lexical share as ranking compares it: itself, or the top of its band (bands of
    width `band` counted down from 1, so a full match and one within `band` of it tie)."""
    return share if band <= 0 else 1.0 - math.floor((1.0 - share) / band + 1e-9) * band


def evidence_key(ident: str, evidence: Mapping[str, float]) -> tuple[float, bool]:
    """How `evidence` orders `ident` (ascending): higher lift first, and a skill with no
    evidence before one measured at that value (a value that is not finite counts as none).
    The lexical matcher's ties and the model selector's candidate lines share it."""
    lift = float(evidence.get(ident, 0.0))
    if not math.isfinite(lift):
        return 0.0, False
    return -lift, ident in evidence


def rank_triggers(
    task_text: str,
    triggers: Sequence[tuple[str, str]],
    evidence: Mapping[str, float] | None = None,
    band: float | None = None,
) -> list[str]:
    """The ids of `(id, trigger)` pairs whose trigger shares a content word with the task,
    best first: by the share of the trigger's words the task has, then the number shared,
    then the skill's `evidence` (higher first; 0 for an id it does not give, and such an id
    goes before the ids it gives at 0: no evidence yet is not a measured 0), then id. A
    trigger with no content word (a hand-written skill that gives none) applies to every
    task, after all the others.

    `evidence` is the scoreboard's within-task lift (`evolve.skills._select.evidence_of`):
    it only breaks ties of the lexical key, so what a skill's trigger says still decides
    which skills apply and which rank higher. `band` (default TIE_BAND) widens a tie to shares
    in the same band of that width."""
    have = words(task_text)
    ev = evidence or {}
    width = TIE_BAND if band is None else band
    ranked: list[tuple[int, float, int, float, bool, str]] = []
    for ident, trigger in triggers:
        want = words(trigger)
        shared = len(want & have)
        lift, measured = evidence_key(ident, ev)
        if shared:
            share = _band(shared / len(want), width)
            ranked.append((0, -share, 0 if width > 0 else -shared, lift, measured, ident))
        elif not want:
            ranked.append((1, 0.0, 0, lift, measured, ident))
    ranked.sort()
    return [r[5] for r in ranked]
