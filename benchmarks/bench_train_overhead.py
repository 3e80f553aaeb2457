"""Harness overhead of one training episode at 10, 100 and 1,000 memory units.

Times the harness's own steps — read the units from memory/, render them, run the recipe's
update (TEPA, with a scripted `mock` model), apply its operations, commit — and, in the same
run on the same repository, a plain `git add` + `git commit` of an equivalent change. Prints
both medians and their ratio per size. Run: `python benchmarks/bench_train_overhead.py`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from evolve.applier import MemoryApplier
from evolve.llm import MockLLM
from evolve.memory import MemoryUnit, UnitReader, dump_unit, in_scope
from evolve.updaters import EpisodeView, RecipeContext, get_recipe, render_for
from evolve.workspace import init_workspace

SCOPE = "user:alex"


def seed_units(root: Path, count: int) -> None:
    folder = root / "memory" / "alex"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        unit = MemoryUnit(
            id=f"tepa-seed{i:05d}", recipe="tepa", kind="precedent", scope=SCOPE,
            created_episode=0, updated_episode=0, key=f"other.detail_{i:05d}",
            text=f"Preference number {i} about detail {i}.",
        )  # fmt: skip
        (folder / f"{unit.id}.md").write_text(dump_unit(unit), encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", f"seed {count} units"], cwd=root, check=True)


def run(count: int, episodes: int) -> tuple[float, float, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        ws = init_workspace(Path(tmp) / "ws")
        for key, value in (("user.name", "bench"), ("user.email", "bench@localhost")):
            subprocess.run(["git", "config", key, value], cwd=ws.root, check=True)
        seed_units(ws.root, count)
        recipe = get_recipe("tepa")
        reader = UnitReader(ws.root)
        applier = MemoryApplier(ws, SCOPE)
        reader.load()  # the first read parses every file; later episodes re-read changes only
        steps: dict[str, list[float]] = {
            k: [] for k in ("read", "render", "update", "apply", "commit")
        }
        totals, plain = [], []
        for n in range(episodes):
            reply = json.dumps(
                {
                    "precedents": [
                        {"key": "sms.signoff", "sentence": f"Sign texts with variant {n}."}
                    ]
                }
            )
            t0 = time.perf_counter()
            units = reader.load()
            visible = in_scope(units, SCOPE)
            t1 = time.perf_counter()
            render_for(visible, SCOPE, ("tepa",))
            t2 = time.perf_counter()
            ctx = RecipeContext(
                units=visible, scope=SCOPE,
                episode=EpisodeView(n, "task", "instruction", "", "complaint", False),
                llm=MockLLM([reply]), seed=0, now="2026-01-01T00:00:00+00:00",
            )  # fmt: skip
            update = recipe.observe(ctx)
            t3 = time.perf_counter()
            result = applier.apply(update.ops, units)
            t4 = time.perf_counter()
            ws.store.commit(result.paths, f"tepa: episode {n}", trailers={"Evolve-Episode": str(n)})
            applier.done()
            t5 = time.perf_counter()
            for key, (a, b) in zip(
                steps, ((t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5)), strict=True
            ):
                steps[key].append(b - a)
            totals.append(t5 - t0)
            # The same shape of change (one new file, one changed file) through the git CLI.
            new = ws.root / "memory" / "alex" / f"plain-{n}.md"
            new.write_text(f"plain {n}\n", encoding="utf-8")
            changed = ws.root / "memory" / "alex" / f"tepa-seed{n % max(count, 1):05d}.md"
            changed.write_text(
                changed.read_text(encoding="utf-8") + f"\nplain {n}\n", encoding="utf-8"
            )
            t6 = time.perf_counter()
            subprocess.run(["git", "add", "--", str(new), str(changed)], cwd=ws.root, check=True)
            subprocess.run(["git", "commit", "-q", "-m", f"plain {n}"], cwd=ws.root, check=True)
            plain.append(time.perf_counter() - t6)
        medians = {k: statistics.median(v) * 1000 for k, v in steps.items()}
        return statistics.median(totals) * 1000, statistics.median(plain) * 1000, medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--sizes", type=int, nargs="*", default=[10, 100, 1000])
    args = parser.parse_args()
    print(
        f"{'units':>6} {'harness ms':>11} {'git add+commit ms':>18} {'ratio':>6}   steps (median ms)"
    )
    for count in args.sizes:
        total, plain, steps = run(count, args.episodes)
        detail = " ".join(f"{k}={v:.2f}" for k, v in steps.items())
        print(f"{count:>6} {total:>11.2f} {plain:>18.2f} {total / plain:>6.2f}   {detail}")
    print("goal: ratio <= 1.5 at 1,000 units")


if __name__ == "__main__":
    main()
