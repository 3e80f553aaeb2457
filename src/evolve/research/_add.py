"""Adding a card: read from a file or built from options, checked, and planned as one commit.

The commit itself is made by the caller, above the transactions layer (`evolve research add`
holds the writer lock, plans, writes and commits): this package sits below the harness and
imports no writer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evolve._format._message import KIND
from evolve.errors import ConfigError, EvolveError
from evolve.research._card import (
    CARD_BYTES,
    RESEARCH_DIR,
    Card,
    check_variants,
    dump_card,
    parse_card,
)
from evolve.research._cycle import CARD, RESEARCH_KIND
from evolve.research._pool import starter_pool

if TYPE_CHECKING:
    from evolve.workspace import Workspace

Known = Mapping[str, Mapping[str, Mapping[str, tuple[int, int]]]]


def default_provenance() -> str:
    """ "added by <user> on <date>": the provenance of a card that does not give one."""
    import datetime
    import getpass

    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "someone"
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    return f"added by {user} on {today}"


def read_card_file(path: Path, card_id: str | None = None) -> Card:
    """The card in the file at `path` (anywhere: a person names it), its id `card_id` or the
    file's name without `.yaml`; provenance filled in when the file gives none.

    Raises:
        ConfigError: the file cannot be read, is too large, or is not a valid card.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigError(f"{path} could not be read ({exc.strerror or exc}).") from None
    with os.fdopen(fd, "rb") as f:
        data = f.read(CARD_BYTES + 1)
    if len(data) > CARD_BYTES:
        raise ConfigError(f"{path} is over the {CARD_BYTES // 1024} KiB a card may take.")
    try:
        text = data.decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text.") from None
    stem = path.name[: -len(".yaml")] if path.name.endswith(".yaml") else path.stem
    card = parse_card(text, card_id or stem, str(path))
    return _with_provenance(card)


def card_from_options(card_id: str, fields: Mapping[str, Any], params: Mapping[str, int]) -> Card:
    """The card of `evolve research add`'s options (checked as a file is: one parser)."""
    import yaml

    data = dict(fields)
    if params:
        data["params"] = dict(params)
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    return _with_provenance(parse_card(text, card_id, f"the card {card_id!r}"))


def _with_provenance(card: Card) -> Card:
    if card.provenance:
        return card
    from dataclasses import replace

    return replace(card, provenance=default_provenance())


def _key(card: Card) -> tuple[str, str, str]:
    return (card.module, card.identifier.lower(), " ".join(card.mechanism.lower().split()))


def _check_duplicate(ws: Workspace, card: Card) -> None:
    """Refuse a card that repeats another of the pool: the same paper, module and mechanism
    under another id (a pool is deduplicated per module; the same paper may serve two
    modules, or two mechanisms)."""
    from evolve.research._pool import load_pool

    for other in load_pool(ws.root):
        if other.id != card.id and _key(other) == _key(card):
            raise ConfigError(
                f"the pool already has this paper's {card.mechanism!r} for {card.module} as "
                f"{other.id}; replace that card (--id {other.id} --replace) instead."
            )


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


@dataclass(frozen=True)
class AddPlan:
    """What adding a card writes: `path` with `text` (None: the file already holds it)."""

    card: Card
    path: str
    text: str | None
    subject: str
    trailers: tuple[tuple[str, str], ...]
    replaced_starter: bool


def plan_add(
    ws: Workspace, card: Card, known: Known, *, replace: bool = False, source: Path | None = None
) -> AddPlan:
    """Check `card` against the harness's built-ins (`known`) and the workspace's cards, and
    say what adding it writes. `source` is the file the card was read from: when it is the
    card's own place in the workspace (a card written there by hand), it is committed in
    canonical form without `replace`.

    Raises:
        ConfigError: the variant or a parameter is unknown, or the workspace has another
            card of that id and `replace` is not given (one sentence).
    """
    from evolve import _confine as confined
    from evolve._format import _limits as limits

    check_variants([card], known)
    _check_duplicate(ws, card)
    rel = f"{RESEARCH_DIR}/{card.id}.yaml"
    text = dump_card(card)
    parse_card(text, card.id, rel)  # what is written reads back
    confined.check(ws.root, RESEARCH_DIR)
    existing: str | None = None
    if (ws.root / rel).exists() or (ws.root / rel).is_symlink():
        try:
            existing = limits.read_text(ws.root, rel)
        except (OSError, UnicodeDecodeError, EvolveError):
            existing = ""  # unreadable: only --replace may overwrite it
    own = source is not None and existing is not None and _same_file(source, ws.root / rel)
    committed = existing is not None and not ws.store.dirty_paths([rel])
    starter = any(c.id == card.id for c in starter_pool())
    if existing == text and committed:
        return AddPlan(card, rel, None, "", (), starter)
    if existing is not None and existing != text and not (replace or own):
        raise ConfigError(
            f"{rel} exists with another card; give --replace to replace it, or another --id."
        )
    verb = "replace" if committed else "add"
    subject = f"research: {verb} card {card.id} ({card.module}: {card.mechanism})"
    trailers = ((KIND, RESEARCH_KIND), (CARD, card.id))
    return AddPlan(card, rel, text, subject, trailers, starter)
