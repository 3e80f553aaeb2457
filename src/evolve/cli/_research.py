"""`evolve research`: the research pool's cards, their topics, a pick, the capability brief,
and adding a card (a commit)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from evolve.cli._common import emit_json, json_option, open_workspace, stdout, workspace_option

if TYPE_CHECKING:
    from evolve.research import Card
    from evolve.workspace import Workspace

_MODULES = ("tools", "context", "skills", "memory", "workflow")  # evolve.research.MODULES


def _module_option(func: Any) -> Any:
    return click.option(
        "--module",
        "-m",
        type=click.Choice(_MODULES),
        help="Only this harness module (default: all five).",
    )(func)


def _starter_option(func: Any) -> Any:
    return click.option(
        "--no-starter",
        is_flag=True,
        help="Leave out the starter pool shipped with evolve: the workspace's own cards only.",
    )(func)


@click.group("research")
def research_group() -> None:
    """The research pool: published mechanisms, one card each, that a module search turns
    into harness variants (docs/research.md).

    The pool is the starter pool shipped with evolve plus the workspace's own
    research/<id>.yaml (a workspace card replaces a starter card of the same id). Cards are
    grouped per module into topics, picked round-robin across topics, and the capability
    brief (from training failures) says which module to search first.
    """


def _known() -> dict[str, dict[str, dict[str, tuple[int, int]]]]:
    """The harness's built-in variants and their parameters' ranges, for checking cards."""
    from evolve.harness import BUILTINS

    return {
        module: {
            name: {p: (spec.low, spec.high) for p, spec in variant.params.items()}
            for name, variant in variants.items()
        }
        for module, variants in BUILTINS.items()
    }


def _pool(ws: Workspace, no_starter: bool) -> list[Card]:
    from evolve.research import check_variants, load_pool

    cards = load_pool(ws.root, starter=not no_starter)
    check_variants(cards, _known())
    return cards


def _source(card: Card, own: set[str]) -> str:
    return "workspace" if card.id in own else "starter"


def _card_json(card: Card, source: str) -> dict[str, Any]:
    from evolve.research._card import card_fields

    return {"id": card.id, **card_fields(card), "source": source}


@research_group.command("list")
@_module_option
@_starter_option
@json_option
@workspace_option
def research_list(
    module: str | None, no_starter: bool, as_json: bool, workspace: Path | None
) -> None:
    """The cards of the pool: id, module, mechanism, the built-in variant that implements it
    offline (- when only a model can), year and where the card comes from."""
    from rich.markup import escape

    from evolve.research import read_cards

    ws = open_workspace(workspace)
    cards = [c for c in _pool(ws, no_starter) if module is None or c.module == module]
    own = {c.id for c in read_cards(ws.root)}
    if as_json:
        emit_json({"cards": [_card_json(c, _source(c, own)) for c in cards]})
        return
    for m in _MODULES:
        mine = [c for c in cards if c.module == m]
        if not mine:
            continue
        stdout.print(f"[bold]{m}[/bold] ({len(mine)})")
        for c in mine:
            variant = c.variant or "-"
            if c.params:
                variant += " " + " ".join(f"{k}={v}" for k, v in c.params.items())
            stdout.print(
                f"  {escape(c.id)}: {escape(c.mechanism)}; variant {escape(variant)}; "
                f"{c.year} {escape(c.identifier)} ({_source(c, own)})"
            )
    if not cards:
        stdout.print("No cards.")


def _labeller(ws: Workspace, model: str | None) -> Any:
    """The model that proposes topic labels: `model`, else models.reflector; None for the
    offline models (term labels)."""
    from evolve.llm import make_role_llm, with_models

    config = with_models(ws.config, reflector=model) if model else ws.config
    name = config.models.reflector.strip()
    if name in ("sim", "mock") or name.startswith(("sim:", "mock:")):
        return None
    return make_role_llm(config, "reflector")


@research_group.command("topics")
@_module_option
@click.option("--seed", type=int, default=0, show_default=True, help="The clustering's seed.")
@click.option(
    "--model",
    metavar="MODEL",
    help="The model that proposes labels (default: models.reflector in evolve.yaml; sim "
    "keeps the term labels). Each label is checked: a phrase of its cards' own text.",
)
@_starter_option
@json_option
@workspace_option
def research_topics(
    module: str | None,
    seed: int,
    model: str | None,
    no_starter: bool,
    as_json: bool,
    workspace: Path | None,
) -> None:
    """Each module's cards grouped into topics (TF-IDF and k-means, seeded), with labels
    from the topics' most distinctive terms, or proposed by a model and checked."""
    from rich.markup import escape

    from evolve.research import topics

    ws = open_workspace(workspace)
    cards = _pool(ws, no_starter)
    llm = _labeller(ws, model)
    found = {m: topics(cards, m, seed=seed, llm=llm) for m in _MODULES if module in (None, m)}
    if as_json:
        emit_json(
            {
                m: [
                    {
                        "label": t.label,
                        "labelled_by": t.labelled_by,
                        "terms": list(t.terms),
                        "cards": [c.id for c in t.cards],
                    }
                    for t in ts
                ]
                for m, ts in found.items()
            }
        )
        return
    for m, ts in found.items():
        stdout.print(f"[bold]{m}[/bold]: {len(ts)} topics")
        for t in ts:
            by = " (model)" if t.labelled_by == "model" else ""
            stdout.print(f"  {escape(t.label)}{by}: {escape(', '.join(c.id for c in t.cards))}")


@research_group.command("pick")
@click.argument("module", type=click.Choice(_MODULES))
@click.option("-n", "count", type=click.IntRange(0, 1000), default=4, show_default=True)
@click.option(
    "--strategy",
    type=click.Choice(["topics", "relevance"]),
    default="topics",
    show_default=True,
    help="topics: round-robin across the module's topics; relevance: ranked by similarity "
    "to the capability brief (the ablation's baseline).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="The clustering's seed.")
@click.option("--exclude", multiple=True, metavar="ID", help="A card already tried.")
@_starter_option
@json_option
@workspace_option
def research_pick(
    module: str,
    count: int,
    strategy: str,
    seed: int,
    exclude: tuple[str, ...],
    no_starter: bool,
    as_json: bool,
    workspace: Path | None,
) -> None:
    """The cards a module search would try next for MODULE, in order, steered by the
    capability brief."""
    from rich.markup import escape

    from evolve.research import capability_brief, pick

    ws = open_workspace(workspace)
    cards = _pool(ws, no_starter)
    brief = capability_brief(ws)
    chosen = pick(
        cards,
        module,
        count,
        strategy="topics" if strategy == "topics" else "relevance",
        brief=brief,
        seed=seed,
        exclude=exclude,
    )
    if as_json:
        emit_json({"module": module, "strategy": strategy, "cards": [c.id for c in chosen]})
        return
    for c in chosen:
        stdout.print(f"{escape(c.id)}: {escape(c.mechanism)}; variant {escape(c.variant or '-')}")
    if not chosen:
        stdout.print(f"No {module} cards left to pick.")


@research_group.command("brief")
@json_option
@workspace_option
def research_brief(as_json: bool, workspace: Path | None) -> None:
    """Which module to search first, from the training records (generations/runs/train-*):
    recurring preference violations point at memory (and context), failed calls at tools,
    unfinished tasks at workflow, task families that keep failing at skills."""
    from rich.markup import escape

    from evolve.research import capability_brief

    brief = capability_brief(open_workspace(workspace))
    if as_json:
        emit_json(brief.to_json())
        return
    if not brief.episodes:
        stdout.print("No training records yet (run evolve train): the modules in their own order.")
    else:
        stdout.print(f"From {brief.episodes} training episodes:")
    for rank, m in enumerate(brief.module_order, 1):
        stdout.print(f"{rank}. [bold]{m}[/bold] {brief.scores.get(m, 0.0):.3f} per episode")
        for reason in brief.reasons.get(m, ()):
            stdout.print(f"   {escape(reason)}")
    if brief.skipped:
        stdout.print(f"({brief.skipped} record lines could not be read and were skipped.)")


@research_group.command("add")
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--id", "card_id", help="The card's id (default: FILE's name without .yaml).")
@click.option("--title", help="The paper's title.")
@click.option("--author", "authors", multiple=True, help="An author (repeat for each).")
@click.option("--year", type=int, help="The year it was published.")
@click.option("--identifier", help='e.g. "arXiv:2303.17651" or "doi:10.1000/xyz".')
@click.option("--module", type=click.Choice(_MODULES), help="The harness module it targets.")
@click.option("--mechanism", help='A short name for the mechanism, e.g. "self-refine".')
@click.option("--summary", help="What the mechanism does, in your own words.")
@click.option("--variant", help="The built-in variant that implements it (evolve harness show).")
@click.option("--param", "params", multiple=True, metavar="NAME=N", help="A variant parameter.")
@click.option("--provenance", help="Who wrote the card and from what (default: you, today).")
@click.option("--replace", is_flag=True, help="Replace the workspace's card of the same id.")
@json_option
@workspace_option
def research_add(
    file: Path | None,
    card_id: str | None,
    title: str | None,
    authors: tuple[str, ...],
    year: int | None,
    identifier: str | None,
    module: str | None,
    mechanism: str | None,
    summary: str | None,
    variant: str | None,
    params: tuple[str, ...],
    provenance: str | None,
    replace: bool,
    as_json: bool,
    workspace: Path | None,
) -> None:
    """Add a card, from FILE (a card's YAML) or from the options, and commit it as
    research/<id>.yaml (Evolve-Kind: research). The card is checked first (every key, type
    and length; its variant against the harness's built-ins); a bad one is refused and
    nothing is written. Each card added raises the pool's version: a module search starts a
    new cycle from the champion."""
    from evolve.errors import EvolveError
    from evolve.research import card_from_options, read_card_file

    ws = open_workspace(workspace)
    fields = {
        "title": title,
        "authors": list(authors) or None,
        "year": year,
        "identifier": identifier,
        "module": module,
        "mechanism": mechanism,
        "summary": summary,
        "variant": variant,
        "provenance": provenance,
    }
    given = {k: v for k, v in fields.items() if v is not None}
    if file is not None:
        if given or params:
            raise EvolveError("Give a card FILE or the card's options (--title ...), not both.")
        card = read_card_file(file, card_id)
    else:
        if card_id is None:
            raise EvolveError("Give the card's --id (or a card FILE).")
        card = card_from_options(card_id, given, _params(params))
    done = _commit_card(ws, card, replace, file)
    if as_json:
        emit_json(
            {
                "commit": done.commit,
                "card": card.id,
                "path": done.path,
                "pool_version": done.pool_version,
                "replaced_starter": done.replaced_starter,
            }
        )
        return
    if done.commit is None:
        stdout.print(f"{done.path} already holds this card; nothing to commit.")
        return
    note = " (it replaces the starter card of that id)" if done.replaced_starter else ""
    stdout.print(
        f"added {done.path} in {done.commit[:10]}{note}; pool version {done.pool_version}: "
        f"the next module search starts a new cycle."
    )


@dataclass(frozen=True)
class _Added:
    commit: str | None
    path: str
    pool_version: int
    replaced_starter: bool


def _commit_card(ws: Workspace, card: Card, replace: bool, source: Path | None) -> _Added:
    """Plan the card's file under the writer lock, write it and commit it (or nothing)."""
    from evolve.research import plan_add, pool_version
    from evolve.txn import writer

    with writer(ws, "research add") as tx:
        plan = plan_add(ws, card, _known(), replace=replace, source=source)
        sha = None
        if plan.text is not None:
            paths = tx.write({plan.path: plan.text.encode("utf-8")}, allowed=("research/",))
            sha = tx.commit(paths, plan.subject, trailers=plan.trailers)
        else:
            tx.end()
    return _Added(sha, plan.path, pool_version(ws), plan.replaced_starter)


def _params(items: tuple[str, ...]) -> dict[str, int]:
    from evolve.errors import EvolveError

    out: dict[str, int] = {}
    for item in items:
        name, eq, number = item.partition("=")
        if not eq or not number.strip().lstrip("-").isdigit():
            raise EvolveError(f"--param {item!r} must be NAME=N (a whole number).")
        out[name.strip()] = int(number)
    return out
