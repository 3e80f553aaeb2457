"""`evolve report`: one self-contained HTML page (inline SVG, no scripts, no network).

It shows the violation rate per rule over training episodes (from the training logs), dev
and holdout score per generation (from the generation records), the tokens and cost of each
generation's scoring and of each run and training log, the number of memory unit files over
time (from git), and the recent memory and prompt commits with their diffs.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from datetime import UTC, datetime
from html import escape
from pathlib import Path, PurePosixPath
from typing import Any

from evolve import _confine as confined
from evolve._format import _limits as limits
from evolve._io import atomic_write
from evolve.errors import PathRefused
from evolve.generations import candidate_ref
from evolve.history import history
from evolve.redact import REDACTED, Redactor
from evolve.report._skills import skills_table
from evolve.report._svg import GenerationPoint, generation_chart, line_chart
from evolve.workspace import CONFIG_NAME, GENERATIONS, Workspace, is_under

WINDOW = 8


def _read(ws: Workspace, path: Path) -> str:
    """A record under `generations/`, its size checked and no link followed out."""
    return limits.read_text(ws.root, path.relative_to(ws.root).as_posix())


def _training_panels(ws: Workspace, rejected: set[int]) -> list[str]:
    """One chart per training stream (each log under generations/runs/): the violation rate
    per rule over its episodes (a moving window). Episodes a rejected generation ran are left
    out (its memory was reset) and counted under the chart."""
    logs = sorted(ws.runs_dir.glob("train-*.jsonl")) if ws.runs_dir.is_dir() else []
    html: list[str] = []
    for log in logs:
        per_rule: dict[str, list[tuple[int, bool]]] = defaultdict(list)
        left_out: dict[int, int] = defaultdict(int)
        for line in _read(ws, log).splitlines():
            try:
                record = json.loads(line)
                episode = record.get("episode")
                generation = record.get("generation")
                if episode is None:
                    continue
                if isinstance(generation, int) and generation in rejected:
                    left_out[generation] += 1
                    continue
                for rule in record.get("applicable_rules", []):
                    per_rule[str(rule)].append((int(episode), rule in record.get("violations", {})))
            except (ValueError, TypeError, AttributeError):
                continue
        series = []
        for rule, events in sorted(per_rule.items()):
            events.sort()
            pts = []
            for i in range(len(events)):
                window = events[max(0, i - WINDOW + 1) : i + 1]
                pts.append((float(events[i][0]), sum(v for _, v in window) / len(window)))
            series.append((rule, pts))
        stream = log.stem.removeprefix("train-")
        html.append(
            line_chart(f"stream {stream}: moving average over {WINDOW} applicable episodes",
                       series, y_label="violation rate", x_label="training episode", y_max=1.0,
                       integer_x=True)
        )  # fmt: skip
        if left_out:
            shown = ", ".join(f"{n} ({k} episodes)" for n, k in sorted(left_out.items()))
            html.append(
                f'<p class="note">Not plotted: episodes of rejected generations {escape(shown)};'
                " the gate reset what they learned.</p>"
            )
    if not logs:
        html.append('<p class="empty">Violation rate per rule: no data yet.</p>')
    return html


def _generation_points(
    ws: Workspace,
) -> tuple[list[GenerationPoint], list[GenerationPoint], list[dict[str, Any]]]:
    """(dev, holdout) points of every generation (base and candidate, the verdict, the dev
    gain's interval) and the table's rows."""
    from evolve.generations import load_records

    records = load_records(ws)
    dev, holdout = [], []
    for r in records:
        gain = (r.dev_gain.low, r.dev_gain.high) if r.dev_gain is not None else None
        dev.append(
            GenerationPoint(
                r.number,
                r.dev_base.score if r.dev_base else None,
                r.dev.score if r.dev else None,
                r.verdict,
                gain,
            )
        )
        holdout.append(
            GenerationPoint(
                r.number,
                r.holdout_base.score if r.holdout_base else None,
                r.holdout.score if r.holdout else None,
                r.verdict,
            )
        )
    rows = [
        {"number": r.number, "verdict": r.verdict, "reason": r.reason,
         "dev_base": r.dev_base.score if r.dev_base else None,
         "dev": r.dev.score if r.dev else None,
         "gain": (r.dev_gain.mean, r.dev_gain.low, r.dev_gain.high) if r.dev_gain else None,
         "holdout_base": r.holdout_base.score if r.holdout_base else None,
         "holdout": r.holdout.score if r.holdout else None}
        for r in records
    ]  # fmt: skip
    return dev, holdout, rows


RECENT_RUNS = 30


def _money(dollars: float) -> str:
    return f"${dollars:.4f}" if dollars >= 0.01 or dollars == 0 else f"${dollars:.6f}"


def _usage_rows(ws: Workspace) -> tuple[list[list[str]], list[list[str]]]:
    """(per generation, per run) rows of episodes, tokens and cost: the generations' four
    scorings from their records; `evolve run` logs from their summaries; training logs summed
    over their episodes. Unreadable files are skipped (the report never fails on a log)."""
    from evolve.generations import load_records

    generations = []
    for r in load_records(ws):
        scored = [s for s in (r.dev_base, r.dev, r.holdout_base, r.holdout) if s is not None]
        episodes = sum(s.episodes for s in scored)
        tokens = sum(round(s.tokens_per_episode * s.episodes) for s in scored)
        dev = f"{_money(r.dev.cost / r.dev.episodes)}" if r.dev and r.dev.episodes else ""
        cost = sum(s.cost for s in scored)
        if r.usage:  # every role's requests in the generation (training, reflection, scoring)
            tokens = sum(u.tokens for u in r.usage.values())
            cost = sum(u.cost for u in r.usage.values())
        roles = _roles({role: u.tokens for role, u in r.usage.items()}) or "agent (scoring only)"
        generations.append(
            [str(r.number), r.verdict, str(episodes), f"{tokens:,}", roles, _money(cost), dev]
        )
    runs: list[list[str]] = []
    folder = ws.runs_dir
    summaries = sorted(folder.glob("*/summary.json")) if folder.is_dir() else []
    for path in summaries[-RECENT_RUNS:]:
        try:
            s = json.loads(_read(ws, path))
            row = [path.parent.name, f"run {s['split']}", str(s["model"]), str(int(s["episodes"])),
                   f"{int(s['tokens']):,}", _roles({"agent": int(s["tokens"])}),
                   _money(float(s.get("cost", 0.0)))]  # fmt: skip
        except (OSError, ValueError, KeyError, TypeError):
            continue
        runs.append(row)
    for log in sorted(folder.glob("train-*.jsonl")) if folder.is_dir() else []:
        episodes, tokens, cost, models = 0, 0, 0.0, set()
        per_role: dict[str, int] = defaultdict(int)
        for line in _read(ws, log).splitlines():
            try:
                e = json.loads(line)
                usage = e.get("usage")
                if isinstance(
                    usage, dict
                ):  # every role's (logs written since usage per role was recorded)
                    for role, n in usage["tokens"].items():
                        per_role[str(role)] += int(n)
                    cost += float(usage["cost"])
                else:  # an older log: the agent's own count only
                    n = int(e.get("input_tokens", 0)) + int(e.get("output_tokens", 0))
                    per_role["agent"] += n
                    cost += float(e.get("cost", 0.0))
                models.add(str(e.get("model", "")))
            except (ValueError, TypeError, AttributeError, KeyError):
                continue
            episodes += 1
        tokens = sum(per_role.values())
        runs.append([log.stem, "training", ", ".join(sorted(models - {""})),
                     str(episodes), f"{tokens:,}", _roles(per_role), _money(cost)])  # fmt: skip
    return generations, runs


def _roles(tokens: dict[str, int]) -> str:
    """`agent 1,234; updater 56`: tokens per role, in the usual order of roles."""
    order = ("agent", "updater", "reflector", "evolver", "selector")
    named = [r for r in order if r in tokens] + sorted(r for r in tokens if r not in order)
    return "; ".join(f"{role} {tokens[role]:,}" for role in named)


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="usage"><tr>{head}</tr>{body}</table>'


def _usage_section(ws: Workspace) -> list[str]:
    generations, runs = _usage_rows(ws)
    html = [
        '<h2 id="cost">Tokens and cost</h2>',
        "<p>US dollars at the prices in evolve.yaml (<code>prices:</code>); a model without a "
        "price, and a reply served from the request cache, cost $0.</p>",
        "<h3>Per generation (the dev and holdout scorings of base and candidate)</h3>",
    ]
    if generations:
        html.append(_table(["generation", "verdict", "episodes", "tokens", "tokens per role",
                            "cost", "cost per dev episode (candidate)"], generations))  # fmt: skip
    else:
        html.append('<p class="empty">No generation records yet.</p>')
    html.append(f"<h3>Per run and training log (the last {RECENT_RUNS} runs)</h3>")
    if runs:
        html.append(
            _table(["log", "kind", "model", "episodes", "tokens", "tokens per role", "cost"], runs)
        )
    else:
        html.append('<p class="empty">No run or training logs yet.</p>')
    return html


INACTIVE = ("revoked", "tombstoned", "retired")


def _memory_size_series(ws: Workspace) -> list[tuple[str, list[tuple[float, float]]]]:
    """Active units after each commit that changed memory/, and apart from them the units
    kept but no longer shown (revoked, tombstoned, retired): each changed unit file is read
    at its commit, so the count is of units by their status, not of files."""
    from evolve.errors import EvolveError
    from evolve.memory import parse_unit

    status: dict[str, str] = {}
    active, inactive = [], []
    for n, (sha, changes) in enumerate(ws.store.log_changes(["memory"]), start=1):
        for kind, path in changes:
            name = path.rsplit("/", 1)[-1]
            if not path.endswith(".md") or name.startswith((".", "_")):
                continue
            if kind.startswith("D"):
                status.pop(path, None)
                continue
            raw = ws.store.read(sha, path)
            try:
                status[path] = parse_unit(path, (raw or b"").decode("utf-8")).status
            except (EvolveError, ValueError):
                status[path] = "unreadable"
        active.append((float(n), float(sum(s == "active" for s in status.values()))))
        inactive.append((float(n), float(sum(s in INACTIVE for s in status.values()))))
    return [("active units", active), ("revoked, tombstoned or retired", inactive)]


def build_report(ws: Workspace, *, commits: int = 10) -> str:
    dev_points, holdout_points, gen_rows = _generation_points(ws)
    rejected = {row["number"] for row in gen_rows if row["verdict"] != "accepted"}
    size = _memory_size_series(ws)
    recent = ws.store.log_patches(["memory", "prompts"], max_count=commits)
    entries = {e.commit: e for e in history(ws.store, max_count=commits)}
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    html = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>evolve report: {escape(ws.root.name)}</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:#222}"
        "h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ddd}"
        "pre{background:#f6f8fa;padding:.8em;overflow-x:auto;font-size:12px}"
        "table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:4px 8px;font-size:13px}"
        ".add{color:#1a7f37}.del{color:#cf222e}.empty{color:#777;font-style:italic}.note{color:#555}</style>",
        "</head><body>",
        f"<h1>evolve report: {escape(ws.root.name)}</h1>",
        f"<p>persona <b>{escape(ws.config.persona)}</b>, environment {escape(ws.config.environment)}, "
        f"agent model {escape(ws.config.models.agent)}; made {now}.</p>",
        '<h2 id="training">Violation rate per rule over training episodes</h2>',
        *_training_panels(ws, rejected),
        '<h2 id="generations">Dev and holdout score per generation</h2>',
        "<p>Each generation: the base it started from (grey square) beside its candidate "
        "(green disc: accepted; red cross: rejected), with the gate's paired interval on the "
        "dev gain drawn on the candidate. Holdout is reported, never used to accept.</p>",
        generation_chart("dev score: base and candidate", dev_points),
        generation_chart("holdout score: base and candidate (reported only)", holdout_points),
    ]  # fmt: skip
    if gen_rows:
        html.append(
            "<table><tr><th>generation</th><th>verdict</th><th>dev base</th><th>dev candidate</th>"
            "<th>dev gain [interval]</th><th>holdout base</th><th>holdout candidate</th>"
            "<th>candidate</th><th>reason</th></tr>"
        )
        for row in gen_rows:
            cells = [_score_cell(row[k]) for k in ("dev_base", "dev")]
            gain = row["gain"]
            cells.append("" if gain is None else f"{gain[0]:+.3f} [{gain[1]:+.3f}, {gain[2]:+.3f}]")
            cells += [_score_cell(row[k]) for k in ("holdout_base", "holdout")]
            ref = candidate_ref(row["number"])
            kept = ws.store.ref_sha(ref) is not None
            html.append(
                f"<tr><td>{row['number']}</td><td>{escape(row['verdict'])}</td>"
                + "".join(f"<td>{c}</td>" for c in cells)
                + f"<td>{'<code>' + escape(ref) + '</code>' if kept else ''}</td>"
                f"<td>{escape(row['reason'])}</td></tr>"
            )
        html.append("</table>")
    html += _usage_section(ws)
    html += skills_table(ws)  # the skills scoreboard
    html += [
        '<h2 id="memory-size">Memory size over time</h2>',
        line_chart(
            "units in memory/ by status",
            size,
            y_label="units",
            x_label="memory commit",
            integer_x=True,
            integer_y=True,
        ),
        '<h2 id="commits">Recent memory and prompt commits</h2>',
    ]
    if not recent:
        html.append('<p class="empty">No memory or prompt commits yet.</p>')
    for info, patch in recent:
        entry = entries.get(info.sha)
        complaint = f"<br>complaint: {escape(entry.complaint)}" if entry and entry.complaint else ""
        html.append(
            f"<h3><code>{info.sha[:10]}</code> {escape(info.subject)}</h3><p>{escape(info.time)}{complaint}</p>"
        )
        lines = []
        for line in patch.splitlines():
            cls = (
                "add"
                if line.startswith("+") and not line.startswith("+++")
                else ("del" if line.startswith("-") and not line.startswith("---") else "")
            )
            lines.append(f'<span class="{cls}">{escape(line)}</span>' if cls else escape(line))
        html.append("<pre>" + "\n".join(lines) + "</pre>")
    from evolve.report._experiment import experiment_sections

    html += experiment_sections(ws)  # `evolve compare` results, from refs/evolve/records
    from evolve.report._search import search_sections

    html += search_sections(ws)  # `evolve search` cycles, from refs/evolve/search
    html.append("</body></html>")
    return "\n".join(html) + "\n"


def _score_cell(score: float | None) -> str:
    return "" if score is None else f"{score:.3f}"


# Always protected from `--out`, whatever `protected:` lists (a hostile `protected: []`).
_NEVER_OUT = ("evalset/", "tests/", CONFIG_NAME)


def write_report(ws: Workspace, out_dir: Path | None = None) -> Path:
    """Write `report.html` to `out_dir` (default: generations/report/, ignored by git).

    A folder inside the workspace (as named, or where its links lead) is confined: a
    protected path (`evalset/`, `tests/`, `evolve.yaml` and what `protected:` lists) or one in
    `.git/` is refused, and so is a link out of the workspace on the way (`evolve._confine`).
    A folder outside the workspace is the user's to name.

    Raises:
        PathRefused: one sentence naming the folder and why.
    """
    rel: str | None
    if out_dir is None:
        rel = f"{GENERATIONS}/report/report.html"
        path = ws.root / rel
    else:
        path = Path(os.path.abspath(out_dir)) / "report.html"
        rel = _report_rel(ws, out_dir, path)
    text = _hidden(build_report(ws), Redactor.from_config(ws.config.redact))
    if rel is None:
        atomic_write(path, text)
    else:
        confined.write_atomic(ws.root, rel, text)
    return path


def _hidden(html: str, hide: Redactor) -> str:
    """`html` with every configured secret hidden, as written and as HTML escapes it (a hand
    note or a commit a person made may hold one; what evolve wrote was redacted already)."""
    for value in hide.values:
        for form in dict.fromkeys((value, escape(value), escape(value, quote=False))):
            html = html.replace(form, escape(REDACTED))
    return html


def _report_rel(ws: Workspace, out_dir: Path, path: Path) -> str | None:
    """The workspace-relative path `path` is written at, checked; None when it (and where its
    links lead) lies outside the workspace."""
    named = _relative(ws.root, path)
    real = _relative(ws.root, Path(os.path.realpath(path)))
    if named is None and real is None:
        return None
    for rel in (named, real):
        if rel is None:
            continue
        if rel.split("/", 1)[0].casefold().rstrip(". ") == ".git":
            raise PathRefused(f"refusing --out {out_dir}: nothing under .git/ may be written.")
        pure = PurePosixPath(rel)
        if any(is_under(pure, p) for p in (*_NEVER_OUT, *ws.config.protected)):
            raise PathRefused(
                f"refusing --out {out_dir}: {rel} is a protected path; write the report to a "
                "folder outside evalset/, tests/ and the other protected paths."
            )
    if named is None:
        return real
    confined.check(ws.root, named)  # a link out on the way: refused by name
    return named


def _relative(root: Path, path: Path) -> str | None:
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        return None
    return rel if rel != "." else None
