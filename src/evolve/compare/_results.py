"""An experiment's results, from its cell files: one JSON document and its Markdown.

For each evaluation split and feedback tier, one row per arm pooled over personas and stream
orders: success, task done and violation rates with bootstrap intervals over tasks (each task
with all of its evaluation seeds), the gap closed between none and oracle on the failure
rate, its spread across stream orders, the per-rule violation rates, tokens and cost. A
second table gives the gap closed per persona. See `evolve.compare._stats` for the intervals.

The headline cannot be won by doing nothing. Every episode is checked for its task (done or
not) and for each preference that applied to it; the failure rate is failed checks over
checks, pooled: (undone tasks + violations) / (episodes + applicable preference checks). An
episode that does nothing fails its one check (1/1), and one that does its task with v of k
applicable preferences violated fails v/(1 + k) < 1, so no agent scores worse than one that
does nothing, and doing nothing never closes any of the gap. A violation rate alone (where
no rule applies to an undone task) is shown beside the task-done rate, never alone; success
(task done and no preference violated: the gate's score and `evolve run`'s "success") is
shown too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from evolve.compare._spec import Experiment
from evolve.compare._stats import gap_interval
from evolve.stats import Interval, draws, rate_interval, ratio, spread

RESULTS_SCHEMA = 2  # 2: the gap closed is on the failure rate (was the violation rate)
METRIC = "failure_rate"


def _counts(
    episodes: Iterable[dict[str, Any]], what: str, rule: str | None = None
) -> dict[str, tuple[float, float]]:
    """task -> (numerator, denominator) for `what` (failure_rate, success, task_done,
    violation_rate, rule)."""
    out: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for e in episodes:
        entry = out[e["task"]]
        if what == "success":
            entry[0] += 1.0 if e["accepted"] else 0.0
            entry[1] += 1.0
        elif what == "failure_rate":  # the task's check and each applicable preference's
            entry[0] += (0.0 if e["task_success"] else 1.0) + len(e["violations"])
            entry[1] += 1.0 + len(e["applicable"])
        elif what == "task_done":
            entry[0] += 1.0 if e["task_success"] else 0.0
            entry[1] += 1.0
        elif what == "violation_rate":
            entry[0] += len(e["violations"])
            entry[1] += len(e["applicable"])
        else:
            assert rule is not None
            if rule in e["applicable"]:
                entry[1] += 1.0
                entry[0] += 1.0 if rule in e["violations"] else 0.0
    return {t: (v[0], v[1]) for t, v in out.items()}


class _Cells:
    """The arm results of the cell files, indexed for pooling."""

    def __init__(self, cells: Sequence[dict[str, Any]]) -> None:
        # (arm, persona, tier or None, order or None) -> arm result
        self.results: dict[tuple[str, str, str | None, int | None], dict[str, Any]] = {}
        self.refs: dict[tuple[str, str, str, int], str] = {}
        for cell in cells:
            tier, order = cell.get("tier"), cell.get("order")
            for result in cell["results"]:
                key = (result["arm"], result["persona"], tier, order)
                self.results[key] = {**result, "ref": cell.get("ref"), "sha": cell.get("sha")}

    def episodes(
        self,
        arm: str,
        split: str,
        tier: str,
        personas: Sequence[str],
        orders: Sequence[int] | None,
    ) -> list[dict[str, Any]]:
        """Episodes of `arm` pooled over `personas` and `orders` (for baselines: one set per
        persona, whatever the tier and order)."""
        out: list[dict[str, Any]] = []
        for (a, p, t, o), result in self.results.items():
            if a != arm or p not in personas:
                continue
            if t is not None and (t != tier or (orders is not None and o not in orders)):
                continue
            out += result["splits"].get(split, [])
        return out

    def cells_of(self, arm: str, tier: str) -> list[dict[str, Any]]:
        return [r for (a, _p, t, _o), r in self.results.items() if a == arm and t in (tier, None)]


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def build_results(
    exp: Experiment, cells: Sequence[dict[str, Any]], *, base: str, duration_s: float | None
) -> dict[str, Any]:
    """The results document of `exp` from its finished cell files."""
    index = _Cells(cells)
    samples, confidence = exp.bootstrap_samples, exp.confidence
    arms = list(exp.arms)
    has_baselines = "none" in exp.arms and "oracle" in exp.arms
    rows: list[dict[str, Any]] = []
    per_persona: list[dict[str, Any]] = []
    rules_seen: set[str] = set()
    for split in exp.splits:
        for tier in exp.feedback:
            tasks = sorted(
                {
                    e["task"]
                    for a in arms
                    for e in index.episodes(a, split, tier, exp.personas, None)
                }
            )
            resamples = draws(tasks, samples, 0)

            def fails(
                arm: str,
                personas: Sequence[str],
                orders: Sequence[int] | None,
                split: str = split,
                tier: str = tier,
            ) -> dict[str, tuple[float, float]]:
                return _counts(index.episodes(arm, split, tier, personas, orders), METRIC)

            none_all = fails("none", exp.personas, None) if has_baselines else {}
            oracle_all = fails("oracle", exp.personas, None) if has_baselines else {}
            for arm in arms:
                spec = exp.arms[arm]
                eps = index.episodes(arm, split, tier, exp.personas, None)
                if not eps:
                    continue
                v = _counts(eps, METRIC)
                row: dict[str, Any] = {
                    "split": split,
                    "tier": tier,
                    "arm": arm,
                    "type": spec.type,
                    "recipe": spec.recipe,
                    "episodes": len(eps),
                    "failure_rate": rate_interval(v, resamples, confidence).as_json(),
                    "success": rate_interval(_counts(eps, "success"), resamples, confidence).as_json(),
                    "task_done": rate_interval(_counts(eps, "task_done"), resamples, confidence).as_json(),
                    "violation_rate": rate_interval(_counts(eps, "violation_rate"), resamples, confidence).as_json(),
                }  # fmt: skip
                if has_baselines:
                    row["gap_closed"] = gap_interval(
                        none_all, v, oracle_all, resamples, confidence
                    ).as_json()
                trained = spec.type in ("recipe", "fixed") and spec.chars is None
                if trained:
                    per_order_gap, per_order_fail, per_order_viol = [], [], []
                    for order in exp.orders:
                        vo = fails(arm, exp.personas, [order])
                        per_order_fail.append(ratio(vo))
                        per_order_viol.append(
                            ratio(_counts(index.episodes(arm, split, tier, exp.personas, [order]),
                                          "violation_rate"))
                        )  # fmt: skip
                        if has_baselines:
                            per_order_gap.append(
                                gap_interval(none_all, vo, oracle_all, [], confidence).value
                            )
                    row["spread"] = {
                        "failure_rate": spread(per_order_fail),
                        "violation_rate": spread(per_order_viol),
                    }
                    if has_baselines:
                        row["spread"]["gap_closed"] = spread(per_order_gap)
                rules = sorted({r for e in eps for r in e["applicable"]})
                rules_seen.update(rules)
                row["rules"] = {
                    rule: rate_interval(_counts(eps, "rule", rule), resamples, confidence).as_json()
                    for rule in rules
                }  # fmt: skip
                arm_cells = index.cells_of(arm, tier)
                train_tokens = [c["train"]["tokens"] for c in arm_cells if "train" in c]
                train_cost = sum(c["train"]["cost"] for c in arm_cells if "train" in c)
                row["tokens_per_episode"] = _mean([float(e["tokens"]) for e in eps])
                row["train_tokens_per_stream"] = _mean([float(t) for t in train_tokens])
                row["memory_chars"] = _mean([float(c["memory_chars"]) for c in arm_cells])
                row["cost"] = round(sum(e["cost"] for e in eps) + train_cost, 6)
                row["refs"] = sorted({c["ref"] for c in arm_cells if c.get("ref")})
                rows.append(row)
                if has_baselines:
                    for persona in exp.personas:
                        vp = fails(arm, [persona], None)
                        if not vp:
                            continue
                        gap = gap_interval(
                            fails("none", [persona], None),
                            vp,
                            fails("oracle", [persona], None),
                            resamples,
                            confidence,
                        )
                        per_persona.append(
                            {"split": split, "tier": tier, "arm": arm, "persona": persona,
                             "failure_rate": round(ratio(vp) or 0.0, 4),
                             "gap_closed": gap.as_json()}
                        )  # fmt: skip
    return {
        "schema": RESULTS_SCHEMA,
        "experiment": exp.name,
        "description": exp.description,
        "base": base,
        "digest": exp.digest(),
        "metric": METRIC,
        "gap_closed": "(none - arm) / (none - oracle) on the failure rate",
        "failure_rate": "(undone tasks + violations) / (episodes + applicable preference "
        "checks): an episode that does nothing fails its one check",
        "success": "an episode succeeds when its task is done and no preference that applied "
        "to it was violated",
        "bootstrap": {"samples": samples, "confidence": confidence, "unit": "task"},
        "plan": exp.document(),
        "cells": len(cells),
        "duration_s": None if duration_s is None else round(duration_s, 1),
        "rows": rows,
        "personas": per_persona,
        "rules": sorted(rules_seen),
    }


def _pct(iv: dict[str, Any] | None, *, scale: float = 100.0) -> str:
    if iv is None:
        return "-"
    if iv.get("value") is None:
        return "undefined"
    value = f"{iv['value'] * scale:.0f}"
    if iv.get("low") is None or iv.get("high") is None:
        return value
    return f"{value} [{iv['low'] * scale:.0f}, {iv['high'] * scale:.0f}]"


def _spread(row: dict[str, Any], key: str) -> str:
    s = row.get("spread", {}).get(key)
    if not s or s.get("min") is None:
        return "-"
    return f"{s['min'] * 100:.0f}–{s['max'] * 100:.0f}"


def results_markdown(doc: dict[str, Any]) -> str:
    plan = doc["plan"]
    lines = [
        f"# Experiment {doc['experiment']}",
        "",
        doc.get("description") or "",
        "",
        f"- base commit {doc['base'][:10]}; personas {', '.join(plan['personas'])}; "
        f"{plan['episodes']} training episodes per stream; stream orders "
        f"{', '.join(map(str, plan['orders']))}; evaluation seeds "
        f"{', '.join(map(str, plan['eval_seeds']))}",
        f"- gap closed = {doc['gap_closed']}, in %; intervals: {doc['bootstrap']['confidence']:.0%} "
        f"percentile bootstrap over tasks ({doc['bootstrap']['samples']} draws), each task with "
        "all of its evaluation seeds, personas and stream orders",
        "- spread: the lowest and highest value over stream orders",
    ]
    if doc.get("failure_rate"):
        lines.insert(-1, f"- failure rate = {doc['failure_rate']}; success: {doc['success']}")
    if doc.get("duration_s") is not None:
        lines.append(f"- {doc['cells']} jobs in {doc['duration_s']:.0f} s")
    for split in plan["splits"]:
        for tier in plan["feedback"]:
            rows = [r for r in doc["rows"] if r["split"] == split and r["tier"] == tier]
            if not rows:
                continue
            lines += [
                "",
                f"## {split}, {tier} feedback",
                "",
                "| arm | gap closed % | spread | success % | task done % | violations % | tokens/episode | memory chars | cost $ |",
                "|---|---|---|---|---|---|---|---|---|",
            ]
            for r in rows:
                lines.append(
                    f"| {r['arm']} | {_pct(r.get('gap_closed'))} | {_spread(r, 'gap_closed')} | "
                    f"{_pct(r['success'])} | {_pct(r.get('task_done'))} | "
                    f"{_pct(r['violation_rate'])} | "
                    f"{r['tokens_per_episode'] or 0:.0f} | {r['memory_chars'] or 0:.0f} | "
                    f"{r['cost']:.4f} |"
                )
            persona_rows = [p for p in doc["personas"] if p["split"] == split and p["tier"] == tier]
            arms = [r["arm"] for r in rows if r["type"] in ("recipe", "fixed")]
            if persona_rows and arms:
                lines += [
                    "",
                    "Gap closed % per persona:",
                    "",
                    "| persona | " + " | ".join(arms) + " |",
                    "|---|" + "---|" * len(arms),
                ]
                for persona in plan["personas"]:
                    cells = {p["arm"]: p for p in persona_rows if p["persona"] == persona}
                    lines.append(
                        f"| {persona} | "
                        + " | ".join(
                            _pct(cells[a]["gap_closed"]) if a in cells else "-" for a in arms
                        )
                        + " |"
                    )
            rules = doc["rules"]
            if rules:
                lines += [
                    "",
                    "Violation rate % per rule:",
                    "",
                    "| rule | " + " | ".join(r["arm"] for r in rows) + " |",
                    "|---|" + "---|" * len(rows),
                ]
                for rule in rules:
                    lines.append(
                        f"| {rule} | "
                        + " | ".join(
                            f"{r['rules'][rule]['value'] * 100:.0f}"
                            if rule in r["rules"] and r["rules"][rule]["value"] is not None
                            else "-"
                            for r in rows
                        )
                        + " |"
                    )
    lines += ["", _diff_hint(doc)]
    return "\n".join(lines) + "\n"


def _diff_hint(doc: dict[str, Any]) -> str:
    """How to read the arms' memory, with this experiment's own refs where it has two."""
    refs: list[str] = []
    for row in doc.get("rows", []):
        if row.get("type") == "recipe":
            refs += [r for r in row.get("refs", []) if r not in refs]
    first = refs[0] if refs else None
    tail = first.split("/", 5)[-1] if first else ""
    other = next((r for r in refs[1:] if r.split("/", 5)[-1] == tail), None)
    if first is not None and other is not None:
        return f"Arms' memory: `git diff {first} {other} -- memory/`."
    if first is not None:
        return f"An arm's memory: `evolve memory --as-of {first} --persona {tail.split('/')[0]}`."
    return "No recipe arm: no arm refs to read."


def headline(doc: dict[str, Any]) -> list[tuple[str, str, str, Interval | None]]:
    """(tier, arm, split, gap) of the first split: for a short summary."""
    out: list[tuple[str, str, str, Interval | None]] = []
    split = doc["plan"]["splits"][0]
    for r in doc["rows"]:
        if r["split"] == split and "gap_closed" in r:
            g = r["gap_closed"]
            out.append(
                (r["tier"], r["arm"], split,
                 Interval(g["value"], g["low"], g["high"], g["tasks"], g.get("undefined", "")))
            )  # fmt: skip
    return out
