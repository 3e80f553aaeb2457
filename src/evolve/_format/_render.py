"""The `<memory>` text, rendered from units without the unit model: the functions
`evolve.memory` renders with (it re-exports them) and each recipe's renderer.

The recipes (`evolve.updaters`) render with the functions here, and so does the reading
commands' fast path, which must not import the update machinery (pydantic included): one
rendering for both (`evolve.quick._render.renderers_for` looks them up by recipe name).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from evolve._format._limits import RENDER_CHARS, RENDER_UNIT_CHARS, render_cut
from evolve._format._units import GLOBAL_SCOPE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Protocol, TypeVar

    class UnitLike(Protocol):
        @property
        def id(self) -> str: ...
        @property
        def recipe(self) -> str: ...
        @property
        def kind(self) -> str: ...
        @property
        def status(self) -> str: ...
        @property
        def scope(self) -> str: ...
        @property
        def valid_from(self) -> str | None: ...
        @property
        def text(self) -> str: ...
        @property
        def key(self) -> str | None: ...
        @property
        def alpha(self) -> float | None: ...
        @property
        def beta(self) -> float | None: ...

    U = TypeVar("U", bound=UnitLike)
    Renderer = Callable[[Sequence[U]], str]

HAND = "hand"
_NEVER = datetime.min.replace(tzinfo=UTC)
_BULLETS = "-*•"


def learned_time(unit: UnitLike) -> datetime:
    """When `unit` became active: its `valid_from` (naive taken as UTC); never set → oldest."""
    if not unit.valid_from:
        return _NEVER
    return _parsed_time(unit.valid_from)


_TIMES: dict[str, datetime] = {}
_TIMES_MAX = 16384  # distinct `valid_from` strings kept before the cache starts over


def _parsed_time(valid_from: str) -> datetime:
    """`valid_from` as an aware time (naive taken as UTC), or the oldest when not a time.

    Cached by the string (a plain dict: the fast path imports no functools): every render
    sorts every unit by it, and the strings repeat from one render (episode) to the next.
    """
    when = _TIMES.get(valid_from)
    if when is not None:
        return when
    try:
        when = datetime.fromisoformat(valid_from.replace("Z", "+00:00"))
    except ValueError:
        when = _NEVER
    else:
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
    if len(_TIMES) >= _TIMES_MAX:
        _TIMES.clear()
    _TIMES[valid_from] = when
    return when


def learned_key(unit: UnitLike) -> tuple[datetime, str]:
    """Sort key: when the unit became active, then its id."""
    return (learned_time(unit), unit.id)


def by_learned(units: Iterable[U]) -> list[U]:
    """`units` oldest-learned first."""
    return sorted(units, key=learned_key)


def _unbullet(line: str) -> str:
    """`line` without its leading whitespace and Markdown bullet (`^\\s*(?:[-*•]\\s+)?`)."""
    line = line.lstrip()
    if line[:1] in _BULLETS and line[1:2].isspace():
        return line[1:].lstrip()
    return line


def tagged(unit_id: str, text: str) -> str:
    """`text` with every non-empty line prefixed by the unit id, `[<id>] line`.

    A leading Markdown bullet of the line is dropped (the id takes its place), so the agent
    and the sim read the same statement with or without the id.
    """
    text = render_cut(text, RENDER_UNIT_CHARS)  # whatever a hand edit holds (`_limits`)
    lines = (_unbullet(line).rstrip() for line in text.splitlines())
    return "\n".join(f"[{unit_id}] {line}" for line in lines if line.strip())


def render_hand(units: Sequence[UnitLike]) -> str:
    """Hand-written notes: their lines as written, each with the note's id."""
    return "\n".join(tagged(u.id, u.text) for u in by_learned(units) if u.status == "active")


def render_memory(units: Iterable[U], scope: str, renderers: Mapping[str, Renderer[U]]) -> str:
    """The text the agent receives for `scope`.

    `renderers` maps each recipe to render to its renderer, in the order the blocks appear;
    units of any other recipe are not rendered. Hand-written notes come first: a person's
    words stand before what a learner wrote. The text is bounded whatever a hand edit holds:
    each unit's text is cut at `_limits.RENDER_UNIT_CHARS`, the whole at
    `_limits.RENDER_CHARS` (each cut marked).

    Raises:
        TypeError: `renderers` is not a mapping (e.g. a call written for the old signature).
    """
    if not isinstance(renderers, Mapping):
        raise TypeError("render_memory needs a mapping of recipe name to renderer")
    visible = [
        u
        for u in units
        if u.status == "active"
        and u.scope in (scope, GLOBAL_SCOPE)
        and u.text.strip()
        and getattr(u, "shelf", None) is None  # skills, hand-written ones too, go in <skills>
    ]
    groups: dict[str, list[U]] = {}
    for unit in by_learned(visible):
        groups.setdefault(unit.recipe, []).append(unit)
    blocks = [render_hand(groups.get(HAND, []))]
    for recipe, renderer in renderers.items():
        if recipe != HAND and recipe in groups:
            blocks.append(renderer(groups[recipe]))
    return render_cut("\n".join(b.strip() for b in blocks if b.strip()), RENDER_CHARS)


def unseen(units: Iterable[UnitLike], scope: str, recipes: Iterable[str]) -> dict[str, int]:
    """Active units of `scope` (and global) that `render_memory` leaves out because their
    recipe is not among `recipes` (the rendered ones): how many per recipe. Hand notes and
    skills are always shown, so they never count."""
    shown = set(recipes) | {HAND}
    counts: dict[str, int] = {}
    for u in units:
        if (
            u.status == "active"
            and u.scope in (scope, GLOBAL_SCOPE)
            and u.text.strip()
            and getattr(u, "shelf", None) is None
            and u.recipe not in shown
        ):
            counts[u.recipe] = counts.get(u.recipe, 0) + 1
    return dict(sorted(counts.items()))


# --- the recipes' renderers (evolve.updaters' recipes call these: one definition) ----------


def active_by_age(units: Iterable[U]) -> list[U]:
    """The active units, oldest-learned first."""
    return by_learned(u for u in units if u.status == "active")


def render_plain(units: Sequence[UnitLike]) -> str:
    """ace, trace, reflexion: every active unit's lines, oldest-learned first."""
    return "\n".join(tagged(u.id, u.text) for u in active_by_age(units))


def render_keyed(units: Sequence[UnitLike]) -> str:
    """tepa: each active precedent under its key."""
    return "\n".join(tagged(u.id, f"[{u.key}] {u.text}") for u in active_by_age(units))


def render_document(units: Sequence[UnitLike]) -> str:
    """rewrite: the active memory document."""
    return "\n".join(
        tagged(u.id, u.text) for u in units if u.status == "active" and u.kind == "document"
    )


TOPL_TOP = 8  # how many assertions topl renders (TopLRecipe.top)


def posterior_mean(u: UnitLike) -> float:
    a, b = u.alpha or 1.0, u.beta or 1.0
    return a / (a + b)


def ranked_by_posterior(units: Iterable[U]) -> list[U]:
    """topl's pool, best first: posterior mean, then alpha, then oldest-learned."""
    active = [u for u in units if u.status == "active"]
    return sorted(active, key=lambda u: (-posterior_mean(u), -(u.alpha or 0), learned_key(u)))


def render_top(units: Sequence[UnitLike], top: int = TOPL_TOP) -> str:
    """topl: the best `top` of the pool, in the order they were learned."""
    return "\n".join(tagged(u.id, u.text) for u in by_learned(ranked_by_posterior(units)[:top]))
