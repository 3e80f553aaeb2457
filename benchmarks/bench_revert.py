"""Revert any update: train each recipe, then revert every episode commit, one at a time.

For each recipe: train `--episodes` episodes (sim models, persona alex, instance feedback,
seed 0), then for every episode commit, in a fresh clone of the trained workspace, run
`evolve revert C`. Where that is refused, a second fresh clone runs `evolve revert C
--cascade`. After each successful revert the rendered memory (`evolve memory`) must not
contain any text the revert tombstoned; the clone then trains `--relearn` more episodes
(default 20) and no tombstoned text may be active again. That is done for every reverted
commit by default (about a minute for all six recipes); `--relearn-sample K` checks K evenly
spaced commits per recipe instead. After every successful revert, single or cascade, every
scope must hold its recipes' caps (`evolve.applier.overflows`): the violations are printed, and
must be 0.

A commit that only moved evidence counters (ACE helpful/harmful, topl alpha/beta) reverts by
taking back exactly its counter deltas, and one that only reordered the rewrite document's
lines by putting the parent's order back; both count as single reverts. Only a commit whose
change later commits already undid entirely, so that a revert would change nothing, is
refused ("there is nothing left to revert"); it is counted apart ("no-op").

    python benchmarks/bench_revert.py [--episodes 50] [--recipes ace tepa ...]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from evolve.applier import overflows
from evolve.errors import EvolveError
from evolve.history import memory_as_of, revert
from evolve.memory import load_units, scope_for
from evolve.memory._similarity import normalize
from evolve.train import train
from evolve.workspace import Workspace, init_workspace

RECIPES = ("ace", "tepa", "trace", "reflexion", "rewrite", "topl")
PERSONA = "alex"


@dataclass
class Row:
    recipe: str
    commits: int = 0
    counter_only: int = 0
    single: int = 0
    cascade: int = 0
    cascade_tried: int = 0
    rendered_ok: int = 0
    reverted: int = 0
    relearn_checked: int = 0
    relearn_ok: int = 0
    failures: list[str] = field(default_factory=list)
    caps_checked: int = 0  # reverts (single and cascade) after which every cap was checked
    cap_violations: list[str] = field(default_factory=list)

    @property
    def content(self) -> int:
        return self.commits - self.counter_only


def _clone(src: Path, dst: Path) -> Workspace:
    subprocess.run(["git", "clone", "-q", str(src), str(dst)], check=True)
    return Workspace(dst)


def _lines(text: str) -> set[str]:
    """A text's lines, normalized; a rendered line loses its `[id] ` or `- ` marker."""
    out = set()
    for line in text.splitlines():
        line = re.sub(r"^(\[[^\]]*\]|-)\s+", "", line.strip())
        if line:
            out.add(normalize(line))
    return out


def _check_after(ws: Workspace, texts: set[str], row: Row, relearn: int, total: int) -> None:
    """`texts`: the lines the revert tombstoned (a statement, or a document's added lines)."""
    rendered = _lines(memory_as_of(ws.store, "HEAD", scope_for(PERSONA))[1])
    if not texts & rendered:
        row.rendered_ok += 1
    else:
        row.failures.append(f"still rendered: {sorted(texts & rendered)[0][:60]}")
    if relearn <= 0:
        return
    train(ws, recipe=row.recipe, episodes=total + relearn, persona=PERSONA, feedback="instance")
    active = [u for u in load_units(ws.root) if u.status == "active"]
    back = [u for u in active if _lines(u.text) & texts]
    row.relearn_checked += 1
    if not back:
        row.relearn_ok += 1
    else:
        row.failures.append(f"relearned in {back[0].id}")


def _check_caps(ws: Workspace, row: Row, sha: str, kind: str) -> None:
    """Every scope within its recipes' caps after the revert (`evolve.applier.overflows`)."""
    row.caps_checked += 1
    for over in overflows(ws, load_units(ws.root)):
        row.cap_violations.append(f"{kind} revert of {sha[:10]}: {over.line()}")


def _sample(n: int, k: int) -> set[int]:
    if k <= 0 or k >= n:
        return set(range(n))
    return {round(i * (n - 1) / (k - 1)) for i in range(k)} if k > 1 else {0}


def bench_recipe(recipe: str, episodes: int, relearn: int, sample: int, tmp: Path) -> Row:
    row = Row(recipe)
    trained = init_workspace(tmp / f"{recipe}-trained")
    report = train(trained, recipe=recipe, episodes=episodes, persona=PERSONA, feedback="instance")
    commits = report.commits
    row.commits = len(commits)
    checked = _sample(len(commits), sample)
    for i, sha in enumerate(commits):
        ws = _clone(trained.root, tmp / f"{recipe}-{i}-single")
        texts: set[str] | None = None
        try:
            result = revert(ws, sha, reason="bench")
            row.single += 1
            _check_caps(ws, row, sha, "single")
            texts = {line for t in result.tombstones for line in _lines(t.text)}
        except EvolveError as exc:
            if "nothing to revert" in str(exc) or "nothing left to revert" in str(exc):
                row.counter_only += 1
                continue
            row.cascade_tried += 1
            ws = _clone(trained.root, tmp / f"{recipe}-{i}-cascade")
            try:
                result = revert(ws, sha, reason="bench", cascade=True)
                texts = {line for t in result.tombstones for line in _lines(t.text)}
                _check_caps(ws, row, sha, "cascade")
            except EvolveError as again:
                row.failures.append(f"{sha[:10]}: {again}")
                continue
        row.cascade += 1
        row.reverted += 1
        _check_after(ws, texts, row, relearn if i in checked else 0, episodes)
    return row


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:5.1f}%" if d else "   - "


def _print_caps(rows: list[Row]) -> None:
    print("caps after every single and cascade revert (must be 0 violations):")
    for r in rows:
        print(
            f"  {r.recipe:<10} {r.caps_checked:>4} reverts checked, {len(r.cap_violations)} violations"
        )
        for violation in r.cap_violations[:5]:
            print(f"    {violation}")
    total = sum(len(r.cap_violations) for r in rows)
    print(f"cap violations: {total} in {sum(r.caps_checked for r in rows)} reverts")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--recipes", nargs="+", default=list(RECIPES), choices=RECIPES)
    parser.add_argument("--relearn", type=int, default=20, help="episodes trained after a revert")
    parser.add_argument(
        "--relearn-sample",
        type=int,
        default=0,
        help="commits per recipe checked for relearning (evenly spaced; 0: all)",
    )
    args = parser.parse_args(argv)
    for key, value in (
        ("GIT_AUTHOR_NAME", "bench"),
        ("GIT_AUTHOR_EMAIL", "bench@localhost"),
        ("GIT_COMMITTER_NAME", "bench"),
        ("GIT_COMMITTER_EMAIL", "bench@localhost"),
    ):
        os.environ.setdefault(key, value)
    started = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-revert-") as tmp:
        for recipe in args.recipes:
            rows.append(
                bench_recipe(recipe, args.episodes, args.relearn, args.relearn_sample, Path(tmp))
            )
    print(
        f"revert every episode commit: {args.episodes} episodes, persona {PERSONA}, instance "
        f"feedback; relearn check: {args.relearn} episodes on {args.relearn_sample or 'all'} "
        "commits per recipe"
    )
    print(
        f"{'recipe':<10}{'commits':>8}{'no-op':>8}{'single':>9}{'single/taught':>15}"
        f"{'cascade':>9}{'not rendered':>14}{'not relearned':>15}"
    )
    for r in rows:
        print(
            f"{r.recipe:<10}{r.commits:>8}{r.counter_only:>8}{_pct(r.single, r.commits):>9}"
            f"{_pct(r.single, r.content):>15}{_pct(r.cascade, r.content):>9}"
            f"{_pct(r.rendered_ok, r.reverted):>14}"
            f"{f'{r.relearn_ok}/{r.relearn_checked}':>15}"
        )
        for failure in r.failures[:5]:
            print(f"    {failure}")
    print(
        "single: % of all episode commits reverted alone (counter-only commits take back "
        "their counter deltas); single/taught and cascade: % of the commits not counted as "
        "no-op (no-op: a commit whose change later commits already undid entirely, so a "
        "revert would change nothing, is refused: there is nothing left to revert)."
    )
    _print_caps(rows)
    print(f"took {time.perf_counter() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
