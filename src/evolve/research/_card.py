"""Research cards: one published mechanism per file, `research/<id>.yaml`, checked strictly.

A card is input written by a person (or shipped in the starter pool), so its text is hostile:
every key is known, every value has its type and a bounded length, the file is read confined
to the workspace (no link followed out of it) and refused over :data:`CARD_BYTES`. A bad card
is one sentence naming the file; nothing is half-read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evolve.errors import ConfigError

RESEARCH_DIR = "research"
# The five harness modules (evolve.harness.MODULES: this package sits below the harness, which
# reads cards, so it names them itself; a test keeps the two equal).
MODULES: tuple[str, ...] = ("tools", "context", "skills", "memory", "workflow")
CARD_BYTES = 64 * 1024
MAX_CARDS = 2_000
CARD_VERSION = 1

_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_VARIANT = re.compile(r"[a-z][a-z0-9_]{0,63}")
_PARAM = re.compile(r"[a-z][a-z0-9_]{0,63}")
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9.+-]{0,30}:[^\s]{1,120}")

# key -> (longest text, what it is): the text fields of a card.
_TEXT = {
    "title": (300, "the paper's title"),
    "identifier": (160, 'an identifier such as "arXiv:2303.17651" or "doi:10.1/x"'),
    "summary": (2_000, "a summary in your own words"),
    "mechanism": (80, 'a short name such as "self-refine"'),
    "provenance": (300, 'who wrote the card and from what, e.g. "starter pool"'),
}
KEYS = (
    "version",
    "title",
    "authors",
    "year",
    "identifier",
    "summary",
    "module",
    "mechanism",
    "variant",
    "params",
    "provenance",
)
REQUIRED = ("title", "authors", "year", "identifier", "summary", "module", "mechanism")


class Params(Mapping[str, int]):
    """A card's parameters: a read-only mapping that hashes, so a card can key a dict."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, int] | None = None) -> None:
        self._items: dict[str, int] = dict(sorted((items or {}).items()))

    def __getitem__(self, key: str) -> int:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(tuple(self._items.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._items) == dict(other)

    def __repr__(self) -> str:
        return repr(self._items)


@dataclass(frozen=True)
class Card:
    """One published mechanism, in our own words, and the harness module it targets.

    `variant` names the built-in harness variant that implements the mechanism offline (the
    sim responds to it), with `params`; None when only a model can implement it.
    """

    id: str
    title: str
    authors: tuple[str, ...]
    year: int
    identifier: str
    summary: str
    module: str
    mechanism: str
    variant: str | None = None
    params: Mapping[str, int] = field(default_factory=Params)
    provenance: str = ""

    def __post_init__(self) -> None:
        # Hashable and read-only whatever mapping was given; authors a tuple likewise.
        if not isinstance(self.params, Params):
            object.__setattr__(self, "params", Params(self.params))
        if not isinstance(self.authors, tuple):
            object.__setattr__(self, "authors", tuple(self.authors))

    @property
    def text(self) -> str:
        """The words topics and relevance read: title, mechanism and summary."""
        return f"{self.title}. {self.mechanism}. {self.summary}"


def _one_line(value: str) -> str:
    return " ".join(value.split())


def parse_card(text: str, card_id: str, source: str | None = None) -> Card:
    """The card in `text`, the file `source` (named in errors) whose stem is `card_id`.

    Raises:
        ConfigError: the file is not a valid card (one sentence naming it and what is wrong).
    """
    where = source or f"{RESEARCH_DIR}/{card_id}.yaml"
    if not _ID.fullmatch(card_id):
        raise ConfigError(
            f"{where}: a card's file name must be lower-case letters, digits, - and _ "
            f"(at most 64, starting with a letter or digit), e.g. {RESEARCH_DIR}/self_refine.yaml."
        )
    if len(text.encode("utf-8", "surrogatepass")) > CARD_BYTES:
        raise ConfigError(f"{where} is over the {CARD_BYTES // 1024} KiB a card may take.")
    data = _load(text, where)
    unknown = [str(k)[:40] for k in data if k not in KEYS]
    if unknown:
        raise ConfigError(
            f"{where} has the unknown key {unknown[0]!r}; a card's keys are {', '.join(KEYS)}."
        )
    missing = [k for k in REQUIRED if k not in data or data[k] is None]
    if missing:
        raise ConfigError(f"{where} lacks {', '.join(missing)}; every card needs {missing[0]}.")
    version = data.get("version", CARD_VERSION)
    if version != CARD_VERSION or isinstance(version, bool):
        raise ConfigError(f"{where} has version {version!r}; this evolve reads {CARD_VERSION}.")
    texts = {key: _text(data, key, where) for key in _TEXT if key in data}
    module = data["module"]
    if module not in MODULES:
        raise ConfigError(
            f"{where}: module is {str(module)[:40]!r}; it must be one of {', '.join(MODULES)}."
        )
    if not _IDENTIFIER.fullmatch(texts["identifier"]):
        raise ConfigError(
            f"{where}: identifier must be a scheme and an id without spaces, "
            f'e.g. "arXiv:2303.17651".'
        )
    variant = data.get("variant")
    if variant is not None and (not isinstance(variant, str) or not _VARIANT.fullmatch(variant)):
        raise ConfigError(
            f"{where}: variant must be a built-in variant's name (lower-case letters, digits "
            f"and _) or null."
        )
    params = _params(data.get("params"), variant, where)
    return Card(
        id=card_id,
        title=texts["title"],
        authors=_authors(data["authors"], where),
        year=_year(data["year"], where),
        identifier=texts["identifier"],
        summary=texts["summary"],
        module=str(module),
        mechanism=texts["mechanism"],
        variant=variant,
        params=params,
        provenance=texts.get("provenance", ""),
    )


def _load(text: str, where: str) -> dict[str, Any]:
    import yaml

    from evolve import _yaml

    try:
        data = _yaml.load(text, where, error=ConfigError)
    except yaml.YAMLError:
        raise ConfigError(f"{where} is not valid YAML; fix it or remove it.") from None
    except RecursionError:
        raise ConfigError(f"{where} nests too deeply to be a card.") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a mapping of a card's keys ({', '.join(REQUIRED)}).")
    return data


def _text(data: Mapping[str, Any], key: str, where: str) -> str:
    value = data[key]
    longest, what = _TEXT[key]
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {key} must be text ({what}).")
    value = _one_line(value)
    if len(value) > longest:
        raise ConfigError(f"{where}: {key} is {len(value)} characters; at most {longest}.")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ConfigError(f"{where}: {key} holds a control character.")
    return value


def _authors(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if (
        not isinstance(value, list)
        or not 1 <= len(value) <= 50
        or not all(isinstance(a, str) and a.strip() and len(a) <= 100 for a in value)
    ):
        raise ConfigError(
            f"{where}: authors must be a list of 1 to 50 names (each at most 100 characters)."
        )
    names = tuple(_one_line(a) for a in value)
    if any(ord(c) < 32 for a in names for c in a):
        raise ConfigError(f"{where}: authors holds a control character.")
    return names


def _year(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1900 <= value <= 2100:
        raise ConfigError(f"{where}: year must be a whole number between 1900 and 2100.")
    return value


def _params(value: Any, variant: str | None, where: str) -> Mapping[str, int]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: params must map parameter names to whole numbers.")
    if value and variant is None:
        raise ConfigError(f"{where}: params need a variant to apply to.")
    if len(value) > 20:
        raise ConfigError(f"{where}: params names {len(value)} parameters; at most 20.")
    out: dict[str, int] = {}
    for name, number in value.items():
        if not isinstance(name, str) or not _PARAM.fullmatch(name):
            raise ConfigError(
                f"{where}: the parameter {str(name)[:40]!r} must be lower-case letters, "
                f"digits and _."
            )
        if isinstance(number, bool) or not isinstance(number, int) or abs(number) > 10**9:
            raise ConfigError(f"{where}: params: {name} must be a whole number.")
        out[name] = number
    return out


def card_fields(card: Card) -> dict[str, Any]:
    """The fields a card file holds, in its canonical order (its id is the file's name)."""
    return {
        "title": card.title,
        "authors": list(card.authors),
        "year": card.year,
        "identifier": card.identifier,
        "module": card.module,
        "mechanism": card.mechanism,
        "variant": card.variant,
        "params": dict(card.params),
        "summary": card.summary,
        "provenance": card.provenance,
    }


def dump_card(card: Card) -> str:
    """The canonical text of `card` (what `evolve research add` writes)."""
    import yaml

    data = card_fields(card)
    if not card.params:
        del data["params"]
    text: str = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=88)
    return text


def check_variants(
    cards: Sequence[Card], known: Mapping[str, Mapping[str, Mapping[str, tuple[int, int]]]]
) -> None:
    """Refuse a card whose variant or parameters `known` (module -> variant -> parameter ->
    (low, high)) does not have: the harness's built-ins, which the caller passes in.

    Raises:
        ConfigError: one sentence naming the card and what is wrong.
    """
    for card in cards:
        if card.variant is None:
            continue
        where = f"{RESEARCH_DIR}/{card.id}.yaml"
        variants = known.get(card.module, {})
        if card.variant not in variants:
            names = ", ".join(variants) or "none"
            raise ConfigError(
                f"{where}: {card.module} has no built-in variant {card.variant!r} "
                f"(the built-ins: {names}); name one, or variant: null."
            )
        ranges = variants[card.variant]
        for name, number in card.params.items():
            if name not in ranges:
                allowed = ", ".join(ranges) or "none"
                raise ConfigError(
                    f"{where}: {card.variant} has no parameter {name!r} (its parameters: "
                    f"{allowed})."
                )
            low, high = ranges[name]
            if not low <= number <= high:
                raise ConfigError(
                    f"{where}: {name} is {number}; it must be between {low} and {high}."
                )


def read_cards(root: Path) -> list[Card]:
    """The cards of the workspace at `root` (`research/*.yaml`, sorted by id); none when it
    has no `research/` folder.

    Raises:
        ConfigError: a bad card, or too many (one sentence).
        PathRefused: `research/` or a card is a link out of the workspace.
    """
    import os

    from evolve import _confine as confined
    from evolve._format import _limits as limits

    folder = root / RESEARCH_DIR
    if not folder.is_dir() and not folder.is_symlink():
        return []
    confined.check_tree(root, RESEARCH_DIR)
    names = sorted(e.name for e in os.scandir(folder) if e.name.endswith(".yaml") and e.is_file())
    if len(names) > MAX_CARDS:
        raise ConfigError(f"{RESEARCH_DIR}/ holds {len(names)} cards; at most {MAX_CARDS}.")
    cards = []
    for name in names:
        rel = f"{RESEARCH_DIR}/{name}"
        try:
            data = limits.read_bytes(root, rel)
        except limits.FileTooLarge:
            raise ConfigError(
                f"{rel} is over the {CARD_BYTES // 1024} KiB a card may take."
            ) from None
        if len(data) > CARD_BYTES:
            raise ConfigError(f"{rel} is over the {CARD_BYTES // 1024} KiB a card may take.")
        try:
            text = data.decode("utf-8").replace("\r\n", "\n")
        except UnicodeDecodeError:
            raise ConfigError(f"{rel} is not UTF-8 text.") from None
        cards.append(parse_card(text, name[: -len(".yaml")], rel))
    return cards
