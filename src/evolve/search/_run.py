"""`evolve search`'s entry point: the research pool, the capability brief and the cycle around
one `Search` (a dry run does it all in a temporary clone)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evolve.errors import EvolveError
from evolve.gate import temp_copy
from evolve.research import Card, capability_brief, load_pool, pick
from evolve.search._mutate import CardLike, Mutator
from evolve.search._search import Mode, Search, SearchResult, Strategy, next_cycle, tried_cards
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
) -> SearchResult:
    """One search cycle from the champion (HEAD's harness) over the cards no earlier cycle
    tried (adding cards with `evolve research add` gives the next cycle something new).

    Raises:
        EvolveError: a bad budget or cycle name, a cycle name in use, no card left to try,
            or the branch moved while the search ran (one sentence each).
    """
    if budget < 1:
        raise EvolveError("--budget must be at least 1 episode.")
    pool = list(cards) if cards is not None else load_pool(ws.root)
    done = tried_cards(ws)
    fresh = [c for c in pool if c.id not in done]
    if not fresh:
        raise EvolveError(
            "every research card was tried by an earlier search cycle; add one with "
            "`evolve research add` to start a new cycle."
        )
    name = cycle or next_cycle(ws)
    if ws.store.ref_names(f"refs/evolve/candidates/{name}/"):
        raise EvolveError(f"the search cycle {name!r} exists already; name another with --cycle.")
    brief = capability_brief(ws)

    def picker(module: str, n: int, how: Strategy, exclude: Sequence[str]) -> list[CardLike]:
        return list(pick(fresh, module, n, strategy=how, brief=brief, seed=seed or 0,
                         exclude=exclude))  # fmt: skip

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
        )

    if not dry_run:
        return make(ws).run()
    with temp_copy("dry-run") as tmp:
        clone = tmp / "ws"
        ws.store.shared_clone(clone, "refs/evolve/*")
        inner = Workspace(clone, ws.config)  # its champion commit takes its own writer lock
        result = make(inner).run()
    result.dry_run = True
    return result
