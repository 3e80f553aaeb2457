"""What the reading commands and `evolve run` print: `evolve log`, `show` and `memory` as
text and as JSON, and a split's report as text.

The click commands (`evolve.cli._reading`, `evolve.cli._run`) and the fast paths
(`evolve.quick._commands`, `evolve.evaluate._fast`) build their output with these functions,
so the two print the same bytes by construction. Text is returned as lines; `style` is
`click.style` or the fast path's equivalent (the same escape codes on a terminal, none
elsewhere).

A workspace's files and history may come from someone else: every text taken from them
(unit fields, memory, commit subjects, diffs) is printed through
:func:`evolve._format._message.clean_text`, so a bidi override, a byte-order mark, a
zero-width space or a terminal escape shows as ``\\u202e``, ``\\ufeff``, ``\\x1b``, never as
what it would do to the screen. The JSON forms carry the text as it is, for programs.
"""

from __future__ import annotations

from evolve._format._message import clean_text, clip, commit_kind

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any, Protocol

    from evolve._format._message import CommitLike

    # `click.style`, or the fast path's: called as style(text, fg=...), (text, bold=True) or
    # (text, dim=True), never with a style set to False (click writes a code for that).
    Style = Callable[..., str]

    class RuleRate(Protocol):
        @property
        def violations(self) -> int: ...
        @property
        def applicable(self) -> int: ...
        @property
        def rate(self) -> float: ...

    class Report(Protocol):
        split: str
        persona: str
        model: str
        runs: int

        def summary(self) -> dict[str, Any]: ...
        def rule_rates(self) -> Mapping[str, RuleRate]: ...

    class ShownCommit(CommitLike, Protocol):
        @property
        def sha(self) -> str: ...
        @property
        def time(self) -> str: ...
        @property
        def subject(self) -> str: ...


LOG_TEXT = 200  # characters of a complaint or refusal line in `evolve log` (cut between words)
DEFAULT_COUNT = 50  # entries `evolve log` shows when -n is not given


# --- log -------------------------------------------------------------------------------------


def log_empty(paths: Sequence[str]) -> str:
    """The line for an empty history (with PATHS it says so of them: the workspace may well
    be trained)."""
    if paths:
        return f"no memory or prompt commit changed {', '.join(paths)}."
    return "no memory or prompt commits yet; run `evolve train`."


def log_entry(e: Mapping[str, Any], style: Style) -> list[str]:
    """The lines of one `evolve log` entry, from its JSON form (`LogEntry.to_json`)."""
    label = style(" (refusal record)", fg="red") if e["kind"] == "refusal" else ""
    subject = clean_text(e["subject"])
    lines = [f"{style(e['commit'][:10], fg='yellow')} {e['time']}  {subject}{label}"]
    meta = []
    if e["episode"] is not None:
        meta.append(f"episode {e['episode']}")
    if e["task"]:
        meta.append(f"task {clean_text(e['task'])}")
    if meta:
        lines.append("    " + ", ".join(meta))
    if e["complaint"]:
        lines.append(f"    complaint: {clean_text(clip(e['complaint'], LOG_TEXT))}")
    if e["ops"]:
        ops = " ".join(f"{op['op']}={op['id']}" for op in e["ops"])
        lines.append("    ops: " + clean_text(ops))
    lines += [f"    {clean_text(clip(line, LOG_TEXT))}" for line in e["refused"]]
    return lines


# --- show ------------------------------------------------------------------------------------


# `git log` options for the unit's sidecar: each patch holds the whole file, so the unit's
# entry can be read before and after every commit from the patch alone.
SIDECAR_PATCH = ("--unified=1000000",)
COUNTERS_NAME = "_counters.yaml"  # as evolve._format._units.COUNTERS_NAME


def sidecar_path(path: str) -> str:
    """The counters sidecar beside a unit file (its scope's, or its shelf's)."""
    return path.rsplit("/", 1)[0] + "/" + COUNTERS_NAME


def _number(value: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            continue
    return value


def counter_entries(text: str) -> dict[str, dict[str, int | float | str]]:
    """A sidecar's entries as they read (`id:` lines, then `  counter: value` lines), for
    showing only: the writers' strict reader is `evolve.memory.parse_counters`."""
    out: dict[str, dict[str, int | float | str]] = {}
    entry: dict[str, int | float | str] | None = None
    for line in text.splitlines():
        if line.startswith("  ") and entry is not None:
            name, _, value = line.strip().partition(":")
            entry[name.strip()] = _number(value.strip())
        elif line.rstrip().endswith(":") and not line.startswith((" ", "#")):
            entry = out.setdefault(line.rstrip()[:-1].strip().strip("'\""), {})
        else:
            entry = None
    return out


def _sides(patch: str) -> tuple[str, str]:
    """The file before and after a whole-file patch (`SIDECAR_PATCH`)."""
    old: list[str] = []
    new: list[str] = []
    hunk = False
    for line in patch.splitlines():
        if line.startswith("@@"):
            hunk = True
        elif not hunk or line.startswith("\\"):
            continue
        elif line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
        else:
            old.append(line[1:])
            new.append(line[1:])
    return "\n".join(old), "\n".join(new)


def counter_change(patch: str, unit_id: str) -> Any:
    """(the unit's counters before, after) a commit, from its whole-file sidecar patch; None
    when the commit left the unit's entry as it was."""
    old, new = (counter_entries(side).get(unit_id) for side in _sides(patch))
    return None if old == new else (old, new)


def describe_change(change: Any) -> str:
    """`counters: helpful 0 -> 1, harmful 2 -> 2` (an entry added or dropped says so)."""
    old, new = change
    if old is None:
        return "counters (new entry): " + ", ".join(f"{k} {v}" for k, v in new.items())
    if new is None:
        return "counters (entry dropped): " + ", ".join(f"{k} {v}" for k, v in old.items())
    names = list(old) + [k for k in new if k not in old]
    return "counters: " + ", ".join(f"{k} {old.get(k, '-')} -> {new.get(k, '-')}" for k in names)


def show_entries(
    unit_id: str,
    file_commits: Iterable[tuple[ShownCommit, str]],
    all_commits: Iterable[tuple[ShownCommit, str]],
) -> list[tuple[ShownCommit, list[str], str, Any]]:
    """Every commit that touched the unit, newest first: (commit, what it touched: "file"
    and/or "counters", the file's diff, the counters' change). `file_commits`: `git log -p`
    of the unit file; `all_commits`: `git log -p SIDECAR_PATCH` of the unit file and its
    sidecar (the order, and the sidecar's whole-file patches)."""
    patches = {c.sha: (c, patch) for c, patch in file_commits}
    out: list[tuple[ShownCommit, list[str], str, Any]] = []
    seen = set()
    for c, patch in all_commits:
        sidecar = next(
            (
                part
                for part in ("\n" + patch).split("\ndiff --git ")
                if part.split("\n", 1)[0].endswith(f"/{COUNTERS_NAME}")
            ),
            None,
        )
        change = counter_change(sidecar, unit_id) if sidecar is not None else None
        touched = (["file"] if c.sha in patches else []) + (["counters"] if change else [])
        if touched:
            seen.add(c.sha)
            out.append((c, touched, patches[c.sha][1] if c.sha in patches else "", change))
    out += [(c, ["file"], p, None) for c, p in patches.values() if c.sha not in seen]
    return out


def unit_counters(
    unit: Mapping[str, Any] | None, entry: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The unit's evidence counters now: those an old-format file still carries, with its
    sidecar entry laid over them."""
    names = ("helpful", "harmful", "alpha", "beta", "injected", "injected_pass", "held_out",
             "held_out_pass")  # fmt: skip
    out = {k: unit[k] for k in names if unit is not None and unit.get(k) is not None}
    out.update(entry or {})
    return out


def hand_provenance(entries: Sequence[tuple[ShownCommit, list[str], str, Any]]) -> str:
    """Where a hand-written note comes from: the commits that added and last changed its
    file (`entries`, newest first), or that it is not committed yet."""
    if not entries:
        return "written by hand; not committed yet (only in the working tree)"
    first, last = entries[-1][0], entries[0][0]
    text = f"written by hand; added {first.time} in {first.sha[:10]}"
    if last.sha != first.sha:
        text += f", last changed {last.time} in {last.sha[:10]}"
    return text


def show_json(
    unit_id: str,
    path: str,
    unit: Mapping[str, Any] | None,
    problem: str | None,
    entries: Iterable[tuple[ShownCommit, list[str], str, Any]],
    counters: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """`evolve show --json`: the unit as its fields (by their names in the file), why it
    cannot be read if it cannot, its counters now, and every commit that touched its file or
    its sidecar entry (`touched`), with the file's diff and the entry's change. A
    hand-written note adds `provenance`: the commits that added and last changed it."""
    entries = list(entries)
    hand = unit is not None and unit.get("recipe") == "hand" and unit.get("kind") == "note"
    return {
        "id": unit_id,
        "path": path,
        "unit": unit,
        **({"provenance": _hand_json(entries)} if hand else {}),
        "problem": problem,
        "counters": dict(counters or {}),
        "commits": [
            {
                "commit": c.sha,
                "time": c.time,
                "subject": c.subject,
                "kind": commit_kind(c),
                "touched": touched,
                "trailers": c.trailers,
                "diff": patch,
                "counters": (
                    {"before": change[0], "after": change[1]} if change is not None else None
                ),
            }
            for c, touched, patch, change in entries
        ],
    }


def _hand_json(entries: Sequence[tuple[ShownCommit, list[str], str, Any]]) -> dict[str, Any]:
    if not entries:
        return {"written_by": "hand", "added": None, "last_changed": None}
    first, last = entries[-1][0], entries[0][0]
    return {
        "written_by": "hand",
        "added": {"commit": first.sha, "time": first.time},
        "last_changed": {"commit": last.sha, "time": last.time},
    }


def show_text(
    unit_id: str,
    path: str,
    unit: Any,
    problem: str | None,
    entries: Iterable[tuple[ShownCommit, list[str], str, Any]],
    style: Style,
    counters: Mapping[str, Any] | None = None,
) -> list[str]:
    """`evolve show`: the unit (or why it cannot be read, or that it is gone), its counters
    and where it came from, then each commit that touched its file or its sidecar entry."""
    u = unit
    entries = list(entries)
    unit_id, path = clean_text(unit_id), clean_text(path)
    if problem is not None:
        lines = [
            f"{style(unit_id, bold=True)} ({path}) cannot be read as a unit: "
            f"{clean_text(problem)} Its history follows; `evolve revert` the commit that broke it."
        ]
    elif u is None:
        lines = [f"{style(unit_id, bold=True)} ({path}) no longer exists (evicted or removed)."]
    else:
        head = f"{u.recipe}/{u.kind} [{u.status}] scope {u.scope}"
        lines = [
            f"{style(clean_text(u.id), bold=True)} {clean_text(head)}  ({path})",
            f"  {clean_text(u.text)}",
        ]
        if u.recipe == "hand" and u.kind == "note":  # a person's note: no validity, episodes
            lines.append(f"  {clean_text(hand_provenance(entries))}")
        else:
            held = f"held from {u.valid_from or '?'}" + (
                f" to {u.valid_to}"
                if u.valid_to
                else " (retired, undated)"  # retired before retiring recorded `valid_to`
                if u.status == "retired"
                else " (still holds)"
            )
            lines.append(
                f"  {clean_text(held)}; created at episode {u.created_episode}, "
                f"updated at episode {u.updated_episode}"
            )
        if u.status == "tombstoned":
            reverted = clean_text((u.reverted_commit or "-")[:10])
            lines.append(f"  tombstone: {clean_text(u.reason or '')} (reverted commit {reverted})")
        if u.revoked_by:
            lines.append(f"  revoked by {clean_text(u.revoked_by)} at episode {u.revoked_at}")
        if counters:
            shown = ", ".join(f"{k} {v}" for k, v in counters.items())
            lines.append(f"  counters: {clean_text(shown)}")
        if u.complaint or u.source_task:
            task = f" task {clean_text(u.source_task)}" if u.source_task else ""
            lines.append(f"  learned from{task}: {clean_text(u.complaint or '-')}")
    for info, _, patch, change in entries:  # what it touched: its counters line, its diff
        lines.append(
            f"\n{style(info.sha[:10], fg='yellow')} {info.time} ({commit_kind(info)}) "
            f"{clean_text(info.subject)}"
        )
        if change is not None:
            lines.append(f"  {clean_text(describe_change(change))}")
        if patch:
            lines.append(clean_text(patch))
    return lines


# --- memory ----------------------------------------------------------------------------------


def memory_notes(inject: str, differs: bool, uncommitted: Sequence[str]) -> list[str]:
    """The notes `evolve memory` writes on stderr about the working tree's memory (`differs`:
    it differs from HEAD and no writer is at work, which would explain it)."""
    notes = []
    if inject != "recipe":
        notes.append(
            f"note: memory.inject is {inject!r} in evolve.yaml, so `evolve run` gives the agent "
            "that instead of this memory; `evolve train` always gives it this memory."
        )
    if differs:
        shown = ", ".join(uncommitted[:5]) + (" ..." if len(uncommitted) > 5 else "")
        notes.append(
            f"note: this is the working tree's memory, which differs from HEAD"
            f"{f' (uncommitted: {shown})' if shown else ''}; "
            "`evolve run` and `evolve train` use it; commit it, or see HEAD with --as-of HEAD."
        )
    return notes


def unseen_note(counts: Mapping[str, int], rendered: Sequence[str]) -> str | None:
    """The note `evolve memory` and `evolve run` write on stderr when memory holds active
    units of recipes the agent is not shown (`_render.unseen`), with the line that fixes it."""
    if not counts:
        return None
    held = ", ".join(f"{n} of {recipe}" for recipe, n in counts.items())
    names = ", ".join([*rendered, *counts])
    return (
        f"note: memory holds active units the agent does not see ({held}): this workspace "
        f"renders {', '.join(rendered)} only; to show them, set `render: {{recipes: [{names}]}}` "
        "in evolve.yaml."
    )


def secret_notes(paths: Sequence[str]) -> list[str]:
    """The notes `evolve memory` writes on stderr about files that hold a configured secret
    (never the secret itself)."""
    return [
        f"note: {path} holds a secret listed in redact: of evolve.yaml (a listed value, the "
        "value of a variable it names, or a model API key); every model is sent it as "
        "<redacted>, and evolve refuses to write such a file; remove it from the file."
        for path in paths
    ]


def memory_json(
    commit: str | None,
    scope: str,
    text: str,
    differs: bool | None = None,
    uncommitted: Sequence[str] = (),
    secrets_in: Sequence[str] = (),
) -> dict[str, Any]:
    """`evolve memory --json`: at a commit (`differs` None), or of the working tree;
    `secrets_in` (the files holding a configured secret) only when there are some."""
    if differs is None:
        doc: dict[str, Any] = {"commit": commit, "scope": scope, "memory": text, "source": "commit"}
    else:
        doc = {
            "commit": commit,
            "scope": scope,
            "memory": text,
            "source": "working tree",
            "differs_from_head": differs,
            "uncommitted": list(uncommitted),
        }
    if secrets_in:
        doc["secrets_in"] = list(secrets_in)
    return doc


def memory_text(
    commit: str | None, scope: str, text: str, style: Style, differs: bool | None = None
) -> list[str]:
    """`evolve memory`: a dim header, then the memory (at a commit when `differs` is None)."""
    if differs is None:
        header = f"# memory for {scope} at {(commit or '')[:10]}"
    else:
        at = f" at {commit[:10]}" if commit else ""
        changed = ", with uncommitted changes" if differs else ""
        header = f"# memory for {scope}{at} (working tree{changed})"
    return [style(clean_text(header), dim=True), clean_text(text) if text else "(empty)"]


# --- run -------------------------------------------------------------------------------------


def report_lines(
    report: Report, title: str | None = None, bold: Callable[[str], str] = str
) -> tuple[str, str]:
    """The two lines above a split report's table: what was scored (its title in `bold`, on
    a terminal), and the scores."""
    s = report.summary()
    head = (
        f"{bold(title or 'split ' + report.split)}  persona={report.persona}  "
        f"model={report.model}  "
        f"runs={report.runs}  seed={s['seed']}  episodes={s['episodes']}"
    )
    scores = (
        f"success {s['score']:.3f}  task done {s['task_success_rate']:.3f}  "
        f"violations {s['violation_rate']:.3f}  tokens/episode {s['tokens_per_episode']:.0f}  "
        f"cost ${s['cost']:.4f}  time {s['duration_s']:.2f}s"
    )
    return head, scores


REPORT_HEADER = ("rule", "violations", "applicable", "rate")


def report_rows(report: Report) -> list[tuple[str, str, str, str]]:
    """The table's rows: each rule's violations, how often it applied, and the rate."""
    return [
        (rule, str(r.violations), str(r.applicable), f"{r.rate:.2f}")
        for rule, r in report.rule_rates().items()
    ]


def _plain(*texts: str) -> bool:
    """Whether rich would print these as they are (no markup, emoji code or control
    character)."""
    return all(t.isprintable() and "[" not in t and ":" not in t for t in texts)


def report_text(report: Report, title: str | None = None, width: int = 80) -> str | None:
    """A split's report on a stream that is not a terminal (`width` columns), but its last
    line (the log folder): its two lines and the table of rules in a heavy-head box; None for
    what rich lays out instead (no rows, a table wider than `width`, text rich would read as
    markup), which `evolve.cli._run.print_report` leaves to it."""
    head, scores = report_lines(report, title)
    rows = report_rows(report)
    if not rows or not all(c.isascii() and c.isprintable() for row in rows for c in row):
        return None
    if not _plain(report.model, report.persona, title or ""):
        return None
    widths = [max(len(row[i]) for row in (REPORT_HEADER, *rows)) for i in range(4)]
    if sum(widths) + 3 * len(widths) + 1 > width:
        return None

    def line(cells: tuple[str, ...], bar: str) -> str:
        padded = [
            f" {c.ljust(w) if i == 0 else c.rjust(w)} "
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return bar + bar.join(padded) + bar

    def rule(left: str, mid: str, right: str, fill: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + right

    table = [
        rule("\u250f", "\u2533", "\u2513", "\u2501"),
        line(REPORT_HEADER, "\u2503"),
        rule("\u2521", "\u2547", "\u2529", "\u2501"),
        *(line(row, "\u2502") for row in rows),
        rule("\u2514", "\u2534", "\u2518", "\u2500"),
    ]
    return "\n".join([head, scores, *table]) + "\n"
