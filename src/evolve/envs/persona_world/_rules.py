"""The preference rules of `persona_world`.

Each rule owns one *slot* of a task's final API call and declares, for a value the persona
holds:

- ``check``: the real checker over the recorded call and the cross-episode history;
- ``statement``: the correction template (what the corrective feedback tier says, and the
  persona's oracle statement);
- ``instance``: the complaint of the instance tier, which names the failure without the
  target value; ``instance_value`` is the value such a line itself shows (visibility steps
  from the value it shows, the computed rules and CC-me are named by it), None for the rest;
  ``vague`` is the statement a learner can write when the line shows no value (it names the
  slot and fixes nothing). There is no default guess: a value no complaint line shows cannot
  be learned from this tier;
- ``recognize``: whether a sentence expresses a value for the slot. Recognition tolerates
  paraphrase (word order, listed synonyms, case) and does not tolerate a wrong value or a
  flipped polarity: those are recognized as what they say;
- ``render``: how a competent agent applies a value to the call's arguments (used by `sim`).

Rules are generic over values; a persona (in `evalset/personas/`) picks rules and values.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import msgspec

from evolve._lazy import pattern
from evolve.envs._protocol import Task
from evolve.envs.persona_world._values import Computed, Directive, Ref, Value
from evolve.envs.persona_world._world import VISIBILITIES, Card, Contact, Payment, Profile

RuleClass = Literal["format", "choice", "computed"]

_NEGATION = pattern(
    r"\b(not|never|no longer|stop|avoid|without|dont|doesnt)\b|\b\w+n['’]t\b|\bno\s", re.I
)
# A quote opens only where no letter precedes it, so the apostrophe of "don't" is no quote.
_QUOTED = pattern(r"(?<!\w)['\"“‘]([^'\"”’]+)['\"”’](?!\w)")
# Segments reset polarity ("..., but ..."); commas only separate clauses within a segment.
_SEGMENT_SPLIT = pattern(r";|\bbut\b", re.I)
_CONTRAST = pattern(r"\b(instead|rather)\b", re.I)

SMS_TOPIC = pattern(r"\b(text|texts|texting|sms)\b", re.I)
EMAIL_TOPIC = pattern(r"\be-?mails?\b", re.I)
PAYMENT_TOPIC = pattern(r"\b(venmo|payments?|pay|paying|paid)\b", re.I)
NOTE_TOPIC = pattern(r"\bnotes?\b", re.I)
# The pieces of the topics' and verbs' words, for the rules' `needs`.
_SMS_WORDS = ("text", "sms")
_PAYMENT_WORDS = ("venmo", "pay", "paid")
_GREETING_VERBS = ("start", "begin", "open", "greet", "salutation")


def resolve_ref(ref: Ref, profile: Profile) -> str:
    if ref.field == "first_name":
        return profile.first_name
    if ref.field == "initials":
        return profile.initials
    if ref.field == "full_name":
        return f"{profile.first_name} {profile.last_name}"
    raise ValueError(f"unknown profile field {ref.field!r}")


@dataclass(frozen=True)
class CheckContext:
    """What a checker (or the sim's renderer) may look at for one episode."""

    task: Task
    profile: Profile
    cards: tuple[Card, ...]
    history: tuple[Payment, ...]
    contact: Contact | None

    @property
    def params(self) -> Mapping[str, Any]:
        return self.task.params


def most_used_card(history: Sequence[Payment]) -> int | None:
    """The card used most often; a tie goes to the card used most recently."""
    if not history:
        return None
    counts = Counter(p.card for p in history)
    last_use = {p.card: i for i, p in enumerate(history)}
    return max(counts, key=lambda card: (counts[card], last_use[card]))


def total_paid(history: Sequence[Payment], contact: str) -> float:
    return round(sum(p.amount for p in history if p.contact == contact), 2)


def note_checksum(items: Sequence[str]) -> int:
    return sum(len(item) for item in items)


def _clauses(sentence: str) -> list[tuple[str, bool]]:
    """(clause, negated) pairs: a clause inherits the negation of an earlier clause of its
    segment, so "Do not write notes as a list, one '- ' item per line" stays negated, unless
    it says "instead" or "rather" ("Do not sign with 'B', sign with 'Alex' instead")."""
    out = []
    for segment in _SEGMENT_SPLIT.split(sentence):
        inherited = False
        for clause in segment.split(","):
            if not clause.strip():
                continue
            own = bool(_NEGATION.search(clause))
            negated = own if _CONTRAST.search(clause) else (own or inherited)
            inherited = inherited or own
            out.append((clause, negated))
    return out


class _Found(msgspec.Struct, frozen=True):
    value: Value
    negated: bool


class Rule(ABC):
    """One preference rule (see the module docstring)."""

    name: ClassVar[str]
    slot: ClassVar[str]
    kind: ClassVar[str]
    rule_class: ClassVar[RuleClass]
    instance_template: ClassVar[str]
    synonyms: ClassVar[tuple[str, ...]] = ()
    # Words `on_topic` cannot hold without: each group names, in lower case, pieces of which
    # a sentence about the slot holds at least one (e.g. the topic's words, then the verb's).
    # `recognize` (the module's) asks a rule only about sentences that have them all.
    needs: ClassVar[tuple[tuple[str, ...], ...]] = ()

    def applies(self, task: Task) -> bool:
        return task.kind == self.kind

    # --- recognition -----------------------------------------------------------------

    @abstractmethod
    def on_topic(self, sentence: str) -> bool:
        """Whether the sentence is about this rule's slot at all."""

    @abstractmethod
    def find_value(self, clause: str) -> Value | None:
        """The value a clause states for the slot, if any."""

    def recognize(self, sentence: str) -> Directive | None:
        """The directive a sentence expresses for this slot, or None."""
        if not self.on_topic(sentence):
            return None
        found: list[_Found] = []
        for clause, negated in _clauses(sentence):
            value = self.find_value(clause)
            if value is not None:
                found.append(_Found(value, negated))
        if not found:
            whole = self.find_value(sentence)
            if whole is None:
                return None
            found.append(_Found(whole, bool(_NEGATION.search(sentence))))
        positive = [f for f in found if not f.negated]
        chosen = positive[0] if positive else found[0]
        return Directive(self.slot, chosen.value, chosen.negated)

    # --- the persona side --------------------------------------------------------------

    @abstractmethod
    def statement(self, value: Value) -> str:
        """The correction template for `value`: a sentence that `recognize` maps back to it."""

    @abstractmethod
    def check(self, ctx: CheckContext, args: Mapping[str, Any], value: Value) -> str | None:
        """None if the call honours `value`, else the instance-tier complaint."""

    def instance(self, ctx: CheckContext, **extra: str) -> str:
        names = {
            "name": ctx.contact.name if ctx.contact else "",
            "title": str(ctx.params.get("title", "")),
        }
        names.update(extra)
        return self.instance_template.format(**names)

    def instance_regex(self) -> re.Pattern[str]:
        source = re.escape(self.instance_template)
        source = re.sub(r"\\\{(\w+)\\\}", lambda m: f"(?P<{m.group(1)}>.+?)", source)
        return re.compile(source)

    # What an instance complaint shows. There is no default guess: a learner states a value
    # only when the complaint line itself shows it (`instance_value`); otherwise it can write
    # only `vague_template`, which names the slot and fixes no value.
    vague_template: ClassVar[str] = "{who} has a preference ({rule}) that no complaint stated."

    def instance_value(self, match: re.Match[str]) -> Value | None:
        """The value an instance complaint line itself shows (its text is the evidence), or
        None when the line names the failure without the value (the default)."""
        return None

    def vague(self, who: str) -> str:
        """A statement about the slot that fixes no value: no rule recognizes a value in it."""
        return self.vague_template.format(who=who, rule=self.name)

    def vague_regex(self) -> re.Pattern[str]:
        source = re.escape(self.vague_template.replace("{rule}", self.name))
        return re.compile(source.replace(r"\{who\}", r"(?P<who>.+?)"))

    # The value a persona's preference takes when its file gives none (computed rules only).
    implied_value: ClassVar[Value | None] = None

    # --- the agent side (used by the sim) ------------------------------------------------

    @abstractmethod
    def render(self, ctx: CheckContext, args: dict[str, Any], value: str) -> None:
        """Apply a resolved value to the call's arguments."""

    def render_negated(self, ctx: CheckContext, args: dict[str, Any], value: Value) -> None:
        """What "do not <value>" makes a competent agent do; by default, nothing."""
        return None

    def resolve(self, ctx: CheckContext, value: Value) -> str:
        """The concrete value for this episode (profile references resolved)."""
        if isinstance(value, Ref):
            return resolve_ref(value, ctx.profile)
        if isinstance(value, Computed):
            return self.compute(ctx)
        return value

    def compute(self, ctx: CheckContext) -> str:
        raise ValueError(f"{self.name} has no computed value")


# ------------------------------------------------------------------------------------
# text messages


def _ref_or_quoted(clause: str) -> Value | None:
    low = clause.lower()
    if "first name" in low:
        return Ref("first_name")
    if "initials" in low:
        return Ref("initials")
    if "full name" in low:
        return Ref("full_name")
    quoted = _QUOTED.search(clause)
    if quoted:
        text = quoted.group(1).strip().lstrip("-–— ").strip()
        return text or None
    return None


class SmsSignoff(Rule):
    name = "sms_signoff"
    slot = "sms.signoff"
    kind = "sms"
    rule_class = "format"
    instance_template = "My text to {name} didn't end with my usual sign-off."
    vague_template = "{who} cares about how text messages are signed off."
    needs = (_SMS_WORDS, ("sign", "end", "clos", "finish"))
    _verb = pattern(
        r"\b(sign|signs|signed|sign-?off|signoff|end|ends|ending|close|closing|finish|signature)\b",
        re.I,
    )

    def on_topic(self, sentence: str) -> bool:
        return bool(
            SMS_TOPIC.search(sentence) and self._verb.search(sentence)
        ) and not EMAIL_TOPIC.search(sentence)

    def find_value(self, clause: str) -> Value | None:
        if not self._verb.search(clause) and not re.search(r"name|initials|['\"“]", clause):
            return None
        return _ref_or_quoted(clause)

    def statement(self, value: Value) -> str:
        if isinstance(value, Ref):
            what = {
                "first_name": "my first name",
                "initials": "my initials",
                "full_name": "my full name",
            }[value.field]
            return f"Sign off every text message with a last line of a dash and {what}."
        return f"Sign off every text message with a last line '- {value}'."

    def check(self, ctx: CheckContext, args: Mapping[str, Any], value: Value) -> str | None:
        want = f"- {self.resolve(ctx, value)}"
        message = str(args.get("message", "")).rstrip()
        return None if message.endswith(want) else self.instance(ctx)

    def render(self, ctx: CheckContext, args: dict[str, Any], value: str) -> None:
        args["message"] = f"{args['message']}\n- {value}"


_GREETINGS = ("hi", "hey", "hello", "dear", "howdy", "greetings")


def _greeting_word(clause: str) -> str | None:
    quoted = _QUOTED.search(clause)
    if quoted:
        word = quoted.group(1).strip().split()[0].strip(",!") if quoted.group(1).strip() else ""
        return word.capitalize() or None
    for word in re.findall(r"[A-Za-z]+", clause):
        if word.lower() in _GREETINGS and word[0].isupper():
            return str(word).capitalize()
    return None


class _Greeting(Rule):
    """An opening "<word> <their first name>," on the call's `field` (sms or email)."""

    field: ClassVar[str]
    separator: ClassVar[str]
    _verb = pattern(r"\b(start|starts|begin|begins|open|opens|greet|greeting|salutation)\b", re.I)

    def find_value(self, clause: str) -> Value | None:
        return _greeting_word(clause)

    def _opening(self, ctx: CheckContext, value: str) -> str:
        first = ctx.contact.first_name if ctx.contact else ""
        return f"{value} {first},"

    def check(self, ctx: CheckContext, args: Mapping[str, Any], value: Value) -> str | None:
        ok = str(args.get(self.field, "")).startswith(self._opening(ctx, self.resolve(ctx, value)))
        return None if ok else self.instance(ctx)

    def render(self, ctx: CheckContext, args: dict[str, Any], value: str) -> None:
        args[self.field] = f"{self._opening(ctx, value)}{self.separator}{args[self.field]}"


class SmsGreeting(_Greeting):
    name = "sms_greeting"
    slot = "sms.greeting"
    kind = "sms"
    rule_class = "format"
    instance_template = "My text to {name} didn't open the way I greet people."
    vague_template = "{who} cares about how text messages open."
    needs = (_SMS_WORDS, _GREETING_VERBS)
    field = "message"
    separator = " "

    def on_topic(self, sentence: str) -> bool:
        return bool(
            SMS_TOPIC.search(sentence) and self._verb.search(sentence)
        ) and not EMAIL_TOPIC.search(sentence)

    def statement(self, value: Value) -> str:
        return f"Start every text message with '{value} <their first name>,'."


# ------------------------------------------------------------------------------------
# payments

_VIS_WORDS = (
    (pattern(r"\bprivate(ly)?\b|\bonly me\b|\bjust me\b", re.I), "private"),
    (pattern(r"\bfriends?(-| )?only\b|\bfriends\b|\bonly (my )?friends\b", re.I), "friends"),
    (pattern(r"\bpublic(ly)?\b|\beveryone\b", re.I), "public"),
)


class PaymentVisibility(Rule):
    name = "payment_visibility"
    slot = "payment.visibility"
    kind = "payment"
    rule_class = "format"
    instance_template = (
        "My payment to {name} was {actual}, visible to {direction} people than I wanted."
    )
    vague_template = "{who} cares about who can see payments."
    needs = (_PAYMENT_WORDS, ("private", "only me", "just me", "friend", "public", "everyone"))

    def on_topic(self, sentence: str) -> bool:
        return bool(PAYMENT_TOPIC.search(sentence)) and any(
            p.search(sentence) for p, _ in _VIS_WORDS
        )

    def find_value(self, clause: str) -> Value | None:
        hits = [(m.start(), v) for p, v in _VIS_WORDS for m in [p.search(clause)] if m]
        return min(hits)[1] if hits else None

    def statement(self, value: Value) -> str:
        return {
            "private": "Keep all my Venmo payments private.",
            "friends": "Set my Venmo payments to friends-only visibility.",
            "public": "Make my Venmo payments public.",
        }[str(value)]

    def check(self, ctx: CheckContext, args: Mapping[str, Any], value: Value) -> str | None:
        actual = str(args.get("visibility", "public"))
        want = str(value)
        if actual == want:
            return None
        order = VISIBILITIES.index
        more = order(actual) > order(want) if actual in VISIBILITIES else True
        return self.instance(ctx, actual=actual, direction="more" if more else "fewer")

    def instance_value(self, match: re.Match[str]) -> Value | None:
        """One step from the visibility the complaint shows, in the direction it names
        (order private < friends < public)."""
        actual = match.group("actual")
        if actual not in VISIBILITIES:
            return None
        step = -1 if match.group("direction") == "more" else 1
        i = VISIBILITIES.index(actual)
        return VISIBILITIES[max(0, min(len(VISIBILITIES) - 1, i + step))]

    def render(self, ctx: CheckContext, args: dict[str, Any], value: str) -> None:
        args["visibility"] = value

    def render_negated(self, ctx: CheckContext, args: dict[str, Any], value: Value) -> None:
        args["visibility"] = "friends" if value == "private" else "private"


class HabitualCard(Rule):
    name = "habitual_card"
    slot = "payment.card"
    kind = "payment"
    rule_class = "choice"
    instance_template = "I paid {name} with a card I don't normally use."
    implied_value = Computed("habitual_card")
    vague_template = "{who} cares about which card pays."
    needs = (("card",),)

    def instance_value(self, match: re.Match[str]) -> Value | None:
        """The complaint names the habit ("a card I don't normally use"): the habitual card."""
        return Computed("habitual_card")

    _topic = pattern(r"\bcards?\b", re.I)
    _habit = pattern(
        r"\b(usual|usually|most|often|habitual|normally|typically|regular|favou?rite)\b", re.I
    )
    _last4 = pattern(
        r"(?:end(?:s|ing)?(?: in| with)?|last four|x{2,4}|\*{2,4}|card)\s*(\d{4})\b", re.I
    )

    def on_topic(self, sentence: str) -> bool:
        return bool(
            self._topic.search(sentence)
            and (PAYMENT_TOPIC.search(sentence) or "card" in sentence.lower())
        )

    def find_value(self, clause: str) -> Value | None:
        digits = self._last4.search(clause)
        if digits:
            return digits.group(1)
        if self._habit.search(clause):
            return Computed("habitual_card")
        return None

    def statement(self, value: Value) -> str:
        if isinstance(value, Computed):
            return "Pay with the card I use most often."
        return f"Pay with my card ending in {value}."

    def check(self, ctx: CheckContext, args: Mapping[str, Any], value: Value) -> str | None:
        used = args.get("payment_card_id")
        if used is None and ctx.cards:
            used = ctx.cards[0].payment_card_id
        want = self._card_id(ctx, value)
        return None if used == want else self.instance(ctx)

    def _card_id(self, ctx: CheckContext, value: Value) -> int | None:
        if isinstance(value, Computed):
            return most_used_card(ctx.history)
        for card in ctx.cards:
            if card.last4 == value:
                return card.payment_card_id
        return None

    def compute(self, ctx: CheckContext) -> str:
        card = most_used_card(ctx.history)
        return str(card) if card is not None else ""

    def resolve(self, ctx: CheckContext, value: Value) -> str:
        card = self._card_id(ctx, value)
        return "" if card is None else str(card)

    def render(self, ctx: CheckContext, args: dict[str, Any], value: str) -> None:
        if value.isdigit():
            args["payment_card_id"] = int(value)


_TOTAL_RE = pattern(r"\(total to (?P<who>[A-Za-z]+): \$(?P<amount>\d+(?:\.\d+)?)\)\s*$")


class RunningTotal(Rule):
    name = "running_total"
    slot = "payment.note_total"
    kind = "payment"
    rule_class = "computed"
    instance_template = "The running total in my payment note to {name} was missing or wrong."
    implied_value = Computed("running_total")
    vague_template = "{who} cares about what payment notes say."
    needs = (("total",), ("note", "description", "memo"), _PAYMENT_WORDS)

    def instance_value(self, match: re.Match[str]) -> Value | None:
        """The complaint names the running total; its value is computed from the history."""
        return Computed("running_total")

    _topic = pattern(r"\b(running total|total)\b", re.I)
    _where = pattern(r"\b(note|notes|description|memo)\b", re.I)

    def on_topic(self, sentence: str) -> bool:
        return bool(
            self._topic.search(sentence)
            and self._where.search(sentence)
            and PAYMENT_TOPIC.search(sentence)
        )

    def find_value(self, clause: str) -> Value | None:
        return Computed("running_total") if self._topic.search(clause) else None

    def statement(self, value: Value) -> str:
        return (
            "End each Venmo payment note with the running total I have paid that person, "
            "like '(total to Sam: $40.00)'."
        )

    def expected(self, ctx: CheckContext) -> float:
        key = ctx.contact.key if ctx.contact else ""
        return round(total_paid(ctx.history, key) + float(ctx.params.get("amount", 0.0)), 2)

    def check(self, ctx: CheckContext, args: Mapping[str, Any], value: Value) -> str | None:
        match = _TOTAL_RE.search(str(args.get("note", "")))
        first = ctx.contact.first_name if ctx.contact else ""
        if (
            match
            and match.group("who") == first
            and abs(float(match.group("amount")) - self.expected(ctx)) < 0.005
        ):
            return None
        return self.instance(ctx)

    def compute(self, ctx: CheckContext) -> str:
        return f"{self.expected(ctx):.2f}"

    def render(self, ctx: CheckContext, args: dict[str, Any], value: str) -> None:
        first = ctx.contact.first_name if ctx.contact else ""
        args["note"] = f"{args['note']} (total to {first}: ${value})"


# ------------------------------------------------------------------------------------
# notes

_FORMATS = (
    (pattern(r"\bnumbered\b|\bnumber (them|each|the items)\b|\b1\. ", re.I), "numbered"),
    (pattern(r"\b(checklist|check-?box(es)?|\[ \])", re.I), "checkbox"),
    (pattern(r"\b(bullet(ed|s)?|dash(es)?)\b|'- '", re.I), "bullets"),
)


def format_items(items: Sequence[str], style: str) -> list[str]:
    if style == "numbered":
        return [f"{i}. {item}" for i, item in enumerate(items, 1)]
    if style == "checkbox":
        return [f"[ ] {item}" for item in items]
    if style == "bullets":
        return [f"- {item}" for item in items]
    return list(items)


def _is_note_only(sentence: str) -> bool:
    return (
        bool(NOTE_TOPIC.search(sentence))
        and not PAYMENT_TOPIC.search(sentence)
        and not EMAIL_TOPIC.search(sentence)
    )


class PrivateNoteFormat(Rule):
    name = "private_note_format"
    slot = "note.body_format"
    kind = "note"
    rule_class = "format"
    instance_template = "My note '{title}' wasn't laid out the way I keep my notes."
    vague_template = "{who} cares about how the items of notes are laid out."
    needs = (
        ("note",),
        ("list", "item", "bullet", "numbered", "check", "layout", "format", "content"),
    )
    _topic = pattern(
        r"\b(list|lists|items?|bullet(ed|s)?|numbered|checklist|check-?box(es)?|layout|format|content)\b",
        re.I,
    )

    def on_topic(self, sentence: str) -> bool:
        low = sentence.lower()
        return (
            _is_note_only(sentence)
            and bool(self._topic.search(sentence))
            and "title" not in low
            and "checksum" not in low
        )

    def find_value(self, clause: str) -> Value | None:
        hits = [(m.start(), v) for p, v in _FORMATS for m in [p.search(clause)] if m]
        return min(hits)[1] if hits else None

    def statement(self, value: Value) -> str:
        return {
            "bullets": "Write the items of my notes as a bulleted list, one '- ' item per line.",
            "numbered": "Write the items of my notes as a numbered list (1., 2., 3.).",
            "checkbox": "Write the items of my notes as a checklist, one '[ ] ' item per line.",
        }[str(value)]

    def check(self, ctx: CheckContext, args: Mapping[str, Any], value: Value) -> str | None:
        items = list(ctx.params.get("items", []))
        lines = [ln for ln in str(args.get("content", "")).splitlines() if ln.strip()]
        lines = [ln for ln in lines if not ln.startswith("Checksum:")]
        return None if lines == format_items(items, str(value)) else self.instance(ctx)

    def render(self, ctx: CheckContext, args: dict[str, Any], value: str) -> None:
        items = list(ctx.params.get("items", []))
        tail = [ln for ln in str(args["content"]).splitlines() if ln.startswith("Checksum:")]
        args["content"] = "\n".join(format_items(items, value) + tail)


class NoteTitleFormat(Rule):
    name = "note_title_format"
    slot = "note.title_format"
    kind = "note"
    rule_class = "format"
    instance_template = "The title of my note '{title}' isn't in my usual style."
    vague_template = "{who} cares about the style of note titles."
    needs = (("note",), ("title",))
    _topic = pattern(r"\btitles?\b", re.I)

    def on_topic(self, sentence: str) -> bool:
        return _is_note_only(sentence) and bool(self._topic.search(sentence))

    def find_value(self, clause: str) -> Value | None:
        low = clause.lower()
        if "date" in low or "yyyy" in low:
            return "date"
        if re.search(r"\b(capital|capitals|caps|upper ?case|all caps)\b", low):
            return "caps"
        return None

    def statement(self, value: Value) -> str:
        return {
            "date": "Start every note title with the date in YYYY-MM-DD form.",
            "caps": "Write note titles in capital letters.",
        }[str(value)]

    def _titled(self, ctx: CheckContext, title: str, value: str) -> str:
        if value == "date":
            return f"{ctx.params.get('date', '')} {title}"
        if value == "caps":
            return title.upper()
        return title

    def check(self, ctx: CheckContext, args: Mapping[str, Any], value: Value) -> str | None:
        want = self._titled(ctx, str(ctx.params.get("title", "")), str(value))
        return None if str(args.get("title", "")) == want else self.instance(ctx)

    def render(self, ctx: CheckContext, args: dict[str, Any], value: str) -> None:
        args["title"] = self._titled(ctx, str(args["title"]), value)


_CHECKSUM_RE = pattern(r"^Checksum: (\d+)$")


class NoteChecksum(Rule):
    name = "note_checksum"
    slot = "note.checksum"
    kind = "note"
    rule_class = "computed"
    instance_template = "The checksum line at the end of my note '{title}' was missing or wrong."
    implied_value = Computed("checksum")
    vague_template = "{who} cares about how notes end."
    needs = (("checksum",),)

    def instance_value(self, match: re.Match[str]) -> Value | None:
        """The complaint names the checksum line; its value is computed from the items."""
        return Computed("checksum")

    def on_topic(self, sentence: str) -> bool:
        return "checksum" in sentence.lower()

    def find_value(self, clause: str) -> Value | None:
        return Computed("checksum") if "checksum" in clause.lower() else None

    def statement(self, value: Value) -> str:
        return "End every note with a line 'Checksum: N', where N is the total number of characters in its items."

    def check(self, ctx: CheckContext, args: Mapping[str, Any], value: Value) -> str | None:
        lines = str(args.get("content", "")).rstrip().splitlines()
        match = _CHECKSUM_RE.match(lines[-1]) if lines else None
        ok = match is not None and int(match.group(1)) == int(self.compute(ctx))
        return None if ok else self.instance(ctx)

    def compute(self, ctx: CheckContext) -> str:
        return str(note_checksum(list(ctx.params.get("items", []))))

    def render(self, ctx: CheckContext, args: dict[str, Any], value: str) -> None:
        args["content"] = f"{args['content']}\nChecksum: {value}"


# ------------------------------------------------------------------------------------
# email

_CLOSINGS = ("best", "cheers", "warmly", "thanks", "regards", "sincerely")


class EmailSignoff(Rule):
    name = "email_signoff"
    slot = "email.signoff"
    kind = "email"
    rule_class = "format"
    instance_template = "My email to {name} didn't close the way I sign my emails."
    vague_template = "{who} cares about how emails are closed."
    needs = (("mail",), ("clos", "sign", "end"))
    _verb = pattern(
        r"\b(close|closes|closing|sign|sign-?off|signoff|end|ends|ending|signature)\b", re.I
    )

    def on_topic(self, sentence: str) -> bool:
        return bool(EMAIL_TOPIC.search(sentence) and self._verb.search(sentence))

    def find_value(self, clause: str) -> Value | None:
        quoted = _QUOTED.search(clause)
        if quoted:
            word = re.split(r",|\\n|\n", quoted.group(1).strip())[0].strip()
            return word or None
        for word in re.findall(r"[A-Za-z]+", clause):
            if word.lower() in _CLOSINGS and word[0].isupper():
                return str(word)
        return None

    def statement(self, value: Value) -> str:
        return f"Close every email with '{value},' and my first name on the next line."

    def check(self, ctx: CheckContext, args: Mapping[str, Any], value: Value) -> str | None:
        ok = str(args.get("body", "")).rstrip().endswith(f"{value},\n{ctx.profile.first_name}")
        return None if ok else self.instance(ctx)

    def render(self, ctx: CheckContext, args: dict[str, Any], value: str) -> None:
        args["body"] = f"{args['body']}\n\n{value},\n{ctx.profile.first_name}"


class EmailSubjectPrefix(Rule):
    name = "email_subject_prefix"
    slot = "email.subject_prefix"
    kind = "email"
    rule_class = "format"
    instance_template = "The subject of my email to {name} was missing my usual tag."
    vague_template = "{who} tags email subjects in a particular way."
    needs = (("mail",), ("subject",))
    _tag = pattern(r"(?<![\w\]])\[[^\]]+\]")

    def on_topic(self, sentence: str) -> bool:
        return bool(EMAIL_TOPIC.search(sentence) and re.search(r"\bsubjects?\b", sentence, re.I))

    def find_value(self, clause: str) -> Value | None:
        tag = self._tag.search(clause)
        return tag.group(0) if tag else None

    def statement(self, value: Value) -> str:
        return f"Start every email subject with '{value}'."

    def check(self, ctx: CheckContext, args: Mapping[str, Any], value: Value) -> str | None:
        return None if str(args.get("subject", "")).startswith(f"{value} ") else self.instance(ctx)

    def render(self, ctx: CheckContext, args: dict[str, Any], value: str) -> None:
        args["subject"] = f"{value} {args['subject']}"


class EmailCcSelf(Rule):
    name = "email_cc_self"
    slot = "email.cc"
    kind = "email"
    rule_class = "format"
    instance_template = "I didn't get a copy of my email to {name}."
    vague_template = "{who} cares about who gets copies of emails."
    needs = (("cc", "cop"),)

    def instance_value(self, match: re.Match[str]) -> Value | None:
        """The complaint says who wanted the copy: the user ("I didn't get a copy")."""
        return "self"

    _copy = pattern(r"\b(cc|copy|copies|carbon copy)\b", re.I)
    _self = pattern(r"\b(me|myself|my own|my address|my email)\b", re.I)
    _address = pattern(r"[\w.+-]+@[\w-]+\.[\w.]+")

    def on_topic(self, sentence: str) -> bool:
        return bool(EMAIL_TOPIC.search(sentence) or self._copy.search(sentence)) and bool(
            self._copy.search(sentence)
        )

    def find_value(self, clause: str) -> Value | None:
        address = self._address.search(clause)
        if address:
            return address.group(0)
        return "self" if self._copy.search(clause) and self._self.search(clause) else None

    def statement(self, value: Value) -> str:
        if value != "self":
            return f"CC {value} on every email I send."
        return "CC me on every email I send."

    def check(self, ctx: CheckContext, args: Mapping[str, Any], value: Value) -> str | None:
        cc = args.get("cc") or []
        return None if isinstance(cc, list) and ctx.profile.email in cc else self.instance(ctx)

    def render(self, ctx: CheckContext, args: dict[str, Any], value: str) -> None:
        args["cc"] = [ctx.profile.email if value == "self" else value]


class EmailGreeting(_Greeting):
    name = "email_greeting"
    slot = "email.greeting"
    kind = "email"
    rule_class = "format"
    instance_template = "My email to {name} didn't open with my usual greeting."
    vague_template = "{who} cares about how emails open."
    needs = (("mail",), _GREETING_VERBS)
    field = "body"
    separator = "\n\n"

    def on_topic(self, sentence: str) -> bool:
        return (
            bool(EMAIL_TOPIC.search(sentence) and self._verb.search(sentence))
            and "subject" not in sentence.lower()
        )

    def statement(self, value: Value) -> str:
        return f"Open every email with '{value} <their first name>,' on its own line."


RULES: tuple[Rule, ...] = (
    SmsSignoff(),
    SmsGreeting(),
    PaymentVisibility(),
    HabitualCard(),
    RunningTotal(),
    PrivateNoteFormat(),
    NoteTitleFormat(),
    NoteChecksum(),
    EmailSignoff(),
    EmailSubjectPrefix(),
    EmailCcSelf(),
    EmailGreeting(),
)
RULES_BY_NAME: dict[str, Rule] = {r.name: r for r in RULES}
RULES_BY_SLOT: dict[str, Rule] = {r.slot: r for r in RULES}


_SENTENCE_END = pattern(r"(?<=[.!?])\s+(?=[A-Z\[])")
_LEADING_TAG = pattern(r"^\[[\w.:-]+\]\s*")


def split_sentences(text: str) -> list[str]:
    """Split text into sentences: one per line, and lines at sentence ends."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip().lstrip("-*•").strip()
        if line.startswith("["):
            line = _LEADING_TAG.sub("", line)  # a leading [id] or [key] tag
        if not line:
            continue
        parts = _SENTENCE_END.split(line)
        if len(parts) == 1:
            out.append(line)  # one sentence, stripped already
        else:
            out.extend(s.strip() for s in parts if s.strip())
    return out


# Each rule with its `needs`, for `recognize`.
_GATED = tuple((rule, rule.needs) for rule in RULES)


def recognize(sentence: str) -> list[Directive]:
    """Every directive a sentence expresses, over all rules.

    A rule is asked only when the sentence has the words it `needs`, looked for in the
    sentence's lower case. That finds what the rules' case-blind patterns find wherever the
    sentence has no letter beyond ASCII; a sentence with one (which may match an ASCII letter
    case-blind: "ſ", "K", "İ") is asked of every rule."""
    if not sentence.isascii() and any(c.isalpha() for c in sentence if not c.isascii()):
        return [d for rule in RULES if (d := rule.recognize(sentence)) is not None]
    low = sentence.lower()
    out = []
    for rule, needs in _GATED:
        for group in needs:
            for word in group:
                if word in low:
                    break
            else:
                break  # no word of this group: not on the rule's topic
        else:
            directive = rule.recognize(sentence)
            if directive is not None:
                out.append(directive)
    return out
