"""`evolve search`'s entry point: the research pool, the capability brief and the cycle around
one `Search` (a dry run does it all in a temporary clone)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from evolve.errors import ConfigError, EvolveError
from evolve.gate import temp_copy
from evolve.harness import MODULES
from evolve.harness._config import approved_variants, is_approved, read_variant
from evolve.research import Brief, Card, capability_brief, load_pool, pick
from evolve.search._mutate import CardLike, Mutator
from evolve.search._search import (
    Mode,
    Search,
    SearchResult,
    Strategy,
    Tried,
    file_card,
    next_cycle,
    tried_cards,
)
from evolve.workspace import Workspace


def run_search(
    ws: Workspace,
    *,
    budget: int,
    patience: int = 1,
    cycle: str | None = None,
    strategy: Strategy = "topics",
    mode: Mode = "modules",
    runs: int | None = None,
    seed: int | None = None,
    per_module: int = 4,
    shortlist: int = 4,
    dry_run: bool = False,
    mutator: Mutator | None = None,
    cards: Sequence[Card] | None = None,
    progress: Callable[[str], None] | None = None,
    write: bool | None = None,
) -> SearchResult:
    """One search cycle from the champion (HEAD's harness) over the cards no earlier cycle
    tried (adding cards with `evolve research add` gives the next cycle something new).

    Cards no built-in variant implements go to the model when `write` is on (default: when
    `models.evolver` is a real model): it writes each one's variant file, the sandboxed probe
    accepts or rejects it, and an accepted file is committed to wait in `evolve review`;
    nothing it wrote runs in an episode before a person approves it. Approved files no cycle
    tried are candidates of the next cycle, as cards are.

    Raises:
        EvolveError: a bad budget or cycle name, a cycle name in use, no card left to try,
            or the branch moved while the search ran (one sentence each).
    """
    if budget < 1:
        raise EvolveError("--budget must be at least 1 episode.")
    pool = list(cards) if cards is not None else load_pool(ws.root)
    done = tried_cards(ws)
    fresh = [c for c in pool if c.id not in done]
    files = untried_files(ws, done)
    writes = _writes_variants(ws) if write is None else write
    if not fresh and not files:
        raise EvolveError(
            "every research card was tried by an earlier search cycle; add one with "
            "`evolve research add` to start a new cycle."
        )
    name = cycle or next_cycle(ws)
    if ws.store.ref_names(f"refs/evolve/candidates/{name}/"):
        raise EvolveError(f"the search cycle {name!r} exists already; name another with --cycle.")
    brief = capability_brief(ws)

    to_write = [c for c in fresh if c.variant is None] if writes else []
    playable = [c for c in fresh if c not in to_write]

    def picker(module: str, n: int, how: Strategy, exclude: Sequence[str]) -> list[CardLike]:
        return list(pick(playable, module, n, strategy=how, brief=brief, seed=seed or 0,
                         exclude=exclude))  # fmt: skip

    def cycle_in(target: Workspace) -> SearchResult:
        written = _write_variants(target, to_write, brief, per_module, strategy, seed, progress)
        result = make(target).run()
        result.tried[:0] = written
        return result

    def make(target: Workspace) -> Search:
        from evolve.search._score import Scorer, probe_player

        return Search(
            target,
            picker,
            cycle=name,
            budget=budget,
            patience=patience,
            per_module=per_module,
            shortlist=shortlist,
            strategy=strategy,
            mode=mode,
            mutator=mutator,
            play=probe_player(target),
            brief=brief.text,
            module_order=brief.module_order,
            scorer=Scorer(
                target,
                runs or target.config.run.runs,
                target.config.run.seed if seed is None else seed,
            ),
            progress=progress,
            files=files,
        )

    if not dry_run:
        return cycle_in(ws)
    with temp_copy("dry-run") as tmp:
        clone = tmp / "ws"
        ws.store.shared_clone(clone, "refs/evolve/*")
        inner = Workspace(clone, ws.config)  # its champion commit takes its own writer lock
        result = cycle_in(inner)
    result.dry_run = True
    return result


def untried_files(ws: Workspace, done: Collection[str]) -> list[tuple[str, str]]:
    """The model-written variant files a person approved, as they are now, that no recorded
    cycle tried: (module, name) pairs."""
    out: list[tuple[str, str]] = []
    for key in sorted(approved_variants(ws.root)):
        module, _, name = key.partition("/")
        if module not in MODULES or file_card(module, name) in done:
            continue
        try:
            source = read_variant(ws.root, module, name)
        except ConfigError:
            continue  # gone since: nothing to try
        if is_approved(ws.root, module, name, source):
            out.append((module, name))
    return out


def _writes_variants(ws: Workspace) -> bool:
    """Whether the evolver is a real model (one that can write a variant file)."""
    return ws.config.models.evolver.strip().startswith(("openai/", "anthropic/"))


def _write_variants(
    ws: Workspace,
    cards: Sequence[Card],
    brief: Brief,
    per_module: int,
    strategy: Strategy,
    seed: int | None,
    progress: Callable[[str], None] | None,
) -> list[Tried]:
    """The model writes a variant file for up to `per_module` cards per module (modules in
    the brief's order); each is probed in the sandbox and, if accepted, committed to wait for
    review. Each is recorded as tried (a refused one is never tried again)."""
    if not cards:
        return []
    from evolve.llm import make_role_llm
    from evolve.review._variants import model_variant_cycle

    llm = make_role_llm(ws.config, "evolver")
    say = progress or (lambda _: None)
    tried: list[Tried] = []
    for module in brief.module_order:
        for card in pick(cards, module, per_module, strategy=strategy, brief=brief, seed=seed or 0):
            done = model_variant_cycle(ws, llm, card, brief.text)
            verdict = (
                f"awaits review: {done.reason}" if done.accepted else f"refused: {done.reason}"
            )
            say(f"model-written {module} variant for card {card.id}: {verdict}")
            variants = {module: done.name} if done.name else {}
            tried.append(
                Tried(done.name or card.id, "written", [module], variants, [card.id], None,
                      verdict=verdict)
            )  # fmt: skip
    return tried
