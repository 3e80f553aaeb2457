"""From a research card to a candidate harness: the mutation role and the health probe.

A card names the module it targets and the mechanism; with the sim (offline) the mutation
role chooses the built-in variant that implements it, with its parameters (`BuiltinMutator`).
A model-written variant file plugs in through the same seam (`Mutator`): a card, the
champion's harness and the capability brief in, a `Candidate` out. Every candidate passes the
health probe before it is scored.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from evolve.errors import EvolveError
from evolve.harness import BUILTINS, MODULES, build_harness, choose
from evolve.harness._config import Choice
from evolve.harness._model_variant import CardLike as VariantCard

# What each module must implement (the contracts of docs/harness.md).
CONTRACT: Mapping[str, tuple[str, ...]] = {
    "tools": ("describe", "hooks"),
    "context": ("assemble",),
    "skills": ("inject",),
    "memory": ("retrieve",),
    "workflow": ("run",),
}


class CardLike(VariantCard, Protocol):
    """What the search reads of a research card (`evolve.research.Card`): what the model
    mutator reads (`harness._model_variant.CardLike`), and the built-in it names."""

    @property
    def variant(self) -> str | None: ...
    @property
    def params(self) -> Mapping[str, int]: ...


@dataclass(frozen=True)
class Blueprint:
    """What the mutation role decided: the module, the variant and its parameters, and why."""

    module: str
    variant: str
    params: Mapping[str, int] = field(default_factory=dict)
    why: str = ""


@dataclass(frozen=True)
class Candidate:
    """A complete harness: the champion's with the blueprints' modules changed."""

    name: str
    blueprints: tuple[Blueprint, ...]
    choice: Choice
    cards: tuple[str, ...] = ()

    @property
    def modules(self) -> tuple[str, ...]:
        return tuple(b.module for b in self.blueprints)


class Mutator(Protocol):
    """The mutation role: a card, the champion's harness and the brief's text to a candidate
    that changes the card's module only (EvolveError: it cannot, with one sentence)."""

    def __call__(self, card: CardLike, champion: Choice, brief: str) -> Candidate: ...


_SAFE = re.compile(r"[^a-z0-9_-]+")


def candidate_name(blueprints: Sequence[Blueprint]) -> str:
    """A ref-safe name: `module-variant` joined by `--`, e.g. `skills-checklist--workflow-verify_first`."""
    parts = [
        f"{b.module}-{b.variant}" + "".join(f"-{k}{v}" for k, v in sorted(b.params.items()))
        for b in sorted(blueprints, key=lambda b: b.module)
    ]
    return "--".join(_SAFE.sub("_", p.lower()) for p in parts)[:200]


def with_blueprints(
    champion: Choice, blueprints: Sequence[Blueprint], root: Path | None = None
) -> Choice:
    """`champion` with each blueprint's module set (checked as a harness file is; with
    `root`, a blueprint may name a workspace variant file there)."""
    choice = champion
    for b in blueprints:
        value: Any = {"variant": b.variant, **b.params} if b.params else b.variant
        choice = choose(choice, b.module, value, root)
    return choice


class BuiltinMutator:
    """The sim's (offline) mutation role: the built-in variant the card names, with the
    card's parameters; a card with no built-in variant is refused."""

    def __call__(self, card: CardLike, champion: Choice, brief: str) -> Candidate:
        if card.module not in MODULES:
            raise EvolveError(f"card {card.id} targets no harness module ({card.module!r}).")
        if not card.variant or card.variant not in BUILTINS[card.module]:
            raise EvolveError(
                f"card {card.id} ({card.mechanism}) has no built-in variant of {card.module}; "
                "it needs a model to write one."
            )
        blueprint = Blueprint(
            card.module,
            card.variant,
            dict(card.params),
            f"{card.mechanism}: {card.title} ({card.id})",
        )
        choice = with_blueprints(champion, [blueprint])
        return Candidate(candidate_name([blueprint]), (blueprint,), choice, (card.id,))


# A probe plays one task with the candidate's harness and says what went wrong (None: a
# valid action); the search passes one that plays it in the workspace's world.
Play = Callable[[Choice], str | None]


def probe(candidate: Candidate, play: Play | None = None, root: Path | None = None) -> str | None:
    """Why `candidate` must not be scored (None: it is healthy): each changed module's
    variant resolves, implements its contract, the harness builds, and (with `play`) it
    produces a valid action on a probe task."""
    try:
        harness = build_harness(candidate.choice, root)
    except Exception as exc:  # a built variant's own failure, whatever it is
        return f"the harness does not build: {type(exc).__name__}: {str(exc)[:200]}"
    for module in candidate.modules:
        made = getattr(harness, module, None)
        missing = [m for m in CONTRACT[module] if not callable(getattr(made, m, None))]
        if missing:
            return f"{module} does not implement {', '.join(missing)}"
    if play is not None:
        try:
            return play(candidate.choice)
        except Exception as exc:  # hostile: a candidate's failure is its rejection
            return f"the probe task failed: {type(exc).__name__}: {str(exc)[:200]}"
    return None
