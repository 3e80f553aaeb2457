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

`--parts sizes`: for every episode commit of the trained workspace, `evolve revert C
--dry-run` against `evolve revert C --cascade --dry-run`: how many commits and tombstones each
takes, and how often the cascade takes more. `--parts units`: `evolve revert UNIT_ID` of every
unit the episodes learned, and `evolve revert C --unit ID` of every unit each episode commit
changed, each from the trained state: how many succeed, and whether the active set changed
only in the units the revert names. All three parts run by default.

    python benchmarks/bench_revert.py [--episodes 50] [--recipes ace tepa ...]
        [--parts revert sizes units]
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
from evolve.history._changes import content_changes
from evolve.history._countback import counter_deltas
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


@dataclass
class Sizes:
    """`--cascade` against a single revert of the same commit, both as `--dry-run` says."""

    recipe: str
    both: int = 0  # commits that both revert (a single revert that works)
    bigger: int = 0  # ... of which the cascade reverts more commits than the single one
    single_commits: int = 0
    cascade_commits: int = 0
    single_stones: int = 0
    cascade_stones: int = 0
    max_extra: int = 0
    cascade_only: int = 0  # commits only a cascade reverts (the single one is refused)
    neither: int = 0  # commits neither reverts (nothing left to revert: undone since)


def bench_sizes(recipe: str, trained: Workspace) -> Sizes:
    row = Sizes(recipe)
    for sha in _episode_commits(trained):
        try:
            single = revert(trained, sha, dry_run=True)
        except EvolveError:
            single = None
        try:
            cascade = revert(trained, sha, cascade=True, dry_run=True)
        except EvolveError:
            row.neither += single is None
            continue
        if single is None:
            row.cascade_only += 1
            continue
        row.both += 1
        row.single_commits += len(single.commits)
        row.cascade_commits += len(cascade.commits)
        row.single_stones += len(single.tombstones)
        row.cascade_stones += len(cascade.tombstones)
        extra = len(cascade.commits) - len(single.commits)
        row.bigger += extra > 0
        row.max_extra = max(row.max_extra, extra)
    return row


def _episode_commits(ws: Workspace) -> list[str]:
    out = ws.store.git("log", "--reverse", "--format=%H", "--grep=Evolve-Kind: train", "HEAD")
    return out.split()


@dataclass
class Units:
    """`evolve revert UNIT_ID` of every unit the episodes learned, each from the trained state."""

    recipe: str
    units: int = 0
    reverted: int = 0
    nothing_left: int = 0  # its change is already undone (e.g. evicted, then taught again)
    clean: int = 0  # the active set changed only in the units the revert named
    failures: list[str] = field(default_factory=list)
    # `evolve revert C --unit ID` of every unit every episode commit changed
    pairs: int = 0
    pairs_reverted: int = 0
    pairs_nothing_left: int = 0
    pairs_clean: int = 0


def _active(ws: Workspace) -> dict[str, tuple[str, str]]:
    return {u.id: (u.status, u.text) for u in load_units(ws.root) if u.status == "active"}


def bench_units(recipe: str, trained: Workspace, tmp: Path) -> Units:
    row = Units(recipe)
    ws = _clone(trained.root, tmp / f"{recipe}-units")
    head = ws.store.git("rev-parse", "HEAD").strip()
    names = ws.store.git(
        "log", "--format=", "--name-only", "--diff-filter=A", "HEAD", "--", "memory"
    )
    ids = sorted({n.rsplit("/", 1)[-1][:-3] for n in names.split() if n.endswith(".md")})
    before = _active(ws)

    def one(rev: str, unit: str | None) -> str:
        """'ok', 'nothing' or 'failed' (the failure noted), from the trained state."""
        try:
            result = revert(ws, rev, reason="bench", unit=unit)
        except EvolveError as exc:
            if "nothing left to revert" in str(exc) or "no commit's change" in str(exc):
                return "nothing"
            row.failures.append(f"{unit or rev}: {exc}")
            return "failed"
        after = _active(ws)
        named = set(result.units)
        changed = {i for i in before.keys() | after.keys() if before.get(i) != after.get(i)}
        subprocess.run(["git", "reset", "-q", "--hard", head], cwd=ws.root, check=True)
        if changed <= named:
            return "clean"
        row.failures.append(f"{unit or rev}: also changed {sorted(changed - named)[:3]}")
        return "ok"

    for ident in ids:
        row.units += 1
        got = one(ident, None)
        row.nothing_left += got == "nothing"
        row.reverted += got in ("ok", "clean")
        row.clean += got == "clean"
    for sha in _episode_commits(ws):
        info = ws.store.commit_info(sha)
        changed = {c.path.rsplit("/", 1)[-1][:-3] for c in content_changes(ws.store, info)}
        changed |= {ident for _, ident in counter_deltas(ws.store, info)}
        for ident in sorted(changed):
            row.pairs += 1
            got = one(sha, ident)
            row.pairs_nothing_left += got == "nothing"
            row.pairs_reverted += got in ("ok", "clean")
            row.pairs_clean += got == "clean"
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
    parser.add_argument(
        "--parts",
        nargs="+",
        default=["revert", "sizes", "units"],
        choices=["revert", "sizes", "units"],
        help="revert: every commit, single then cascade, with the relearn check; sizes: "
        "--cascade against single (dry runs); units: per-unit revert of every unit",
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
    rows, sizes, units = [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-revert-") as tmp:
        for recipe in args.recipes:
            if "revert" in args.parts:
                rows.append(
                    bench_recipe(
                        recipe, args.episodes, args.relearn, args.relearn_sample, Path(tmp)
                    )
                )
            if "sizes" in args.parts or "units" in args.parts:
                trained = init_workspace(Path(tmp) / f"{recipe}-parts")
                train(
                    trained, recipe=recipe, episodes=args.episodes, persona=PERSONA,
                    feedback="instance",
                )  # fmt: skip
                if "sizes" in args.parts:
                    sizes.append(bench_sizes(recipe, trained))
                if "units" in args.parts:
                    units.append(bench_units(recipe, trained, Path(tmp)))
    if rows:
        _print_reverts(args, rows)
    if sizes:
        _print_sizes(args, sizes)
    if units:
        _print_units(args, units)
    print(f"took {time.perf_counter() - started:.1f}s")
    return 0


def _print_sizes(args: argparse.Namespace, sizes: list[Sizes]) -> None:
    print(
        f"\n--cascade against a single revert (dry runs on the trained workspace, "
        f"{args.episodes} episodes): over the commits both revert"
    )
    print(
        f"{'recipe':<10}{'both':>6}{'cascade>single':>16}{'commits s/c':>14}"
        f"{'tombstones s/c':>17}{'max extra':>11}{'cascade only':>14}{'neither':>9}"
    )
    for z in sizes:
        print(
            f"{z.recipe:<10}{z.both:>6}{z.bigger:>16}"
            f"{f'{z.single_commits}/{z.cascade_commits}':>14}"
            f"{f'{z.single_stones}/{z.cascade_stones}':>17}{z.max_extra:>11}{z.cascade_only:>14}"
            f"{z.neither:>9}"
        )


def _print_units(args: argparse.Namespace, units: list[Units]) -> None:
    print(
        f"\nper-unit revert (`evolve revert UNIT_ID`) of every unit {args.episodes} episodes "
        "learned, each from the trained state; clean: the active set changed only in the "
        "units the revert named"
    )
    print(
        f"{'recipe':<10}{'units':>7}{'reverted':>10}{'nothing left':>14}{'succeeded':>11}"
        f"{'clean':>8}   {'C --unit ID':>12}{'reverted':>10}{'nothing left':>14}"
        f"{'succeeded':>11}{'clean':>8}"
    )
    for u in units:
        tried = u.units - u.nothing_left
        pairs = u.pairs - u.pairs_nothing_left
        print(
            f"{u.recipe:<10}{u.units:>7}{u.reverted:>10}{u.nothing_left:>14}"
            f"{_pct(u.reverted, tried):>11}{_pct(u.clean, u.reverted):>8}   "
            f"{u.pairs:>12}{u.pairs_reverted:>10}{u.pairs_nothing_left:>14}"
            f"{_pct(u.pairs_reverted, pairs):>11}{_pct(u.pairs_clean, u.pairs_reverted):>8}"
        )
        for failure in u.failures[:5]:
            print(f"    {failure}")
    print(
        "units: `evolve revert UNIT_ID` (its newest change) of every unit; C --unit ID: "
        "`evolve revert C --unit ID` of every unit every episode commit changed (text, "
        "status or counters); nothing left: its change was undone since (refused, counted "
        "apart); succeeded: % of the rest; clean: % of those whose active set changed only in "
        "the units the revert named."
    )


def _print_reverts(args: argparse.Namespace, rows: list[Row]) -> None:
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


if __name__ == "__main__":
    sys.exit(main())
