"""`evolve log`, `show` and `memory` on the fast path: the same output as the click commands
in `evolve.cli._reading`, byte for byte (tests compare them).

Every function here raises :class:`Unhandled` (before writing) for any case it does not
answer itself; it builds its whole output before writing any of it, except a full
`log --json`/`--jsonl`, which streams (in constant memory) once it knows it can answer.
"""

from __future__ import annotations

import os
import sys

from evolve.quick._git import CONFIG_NAME, Repo, Unhandled
from evolve.quick._message import clip, commit_kind

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any, TextIO

    from evolve.quick._log import Commit
    from evolve.quick._units import Unit

LOG_TEXT = 200  # as evolve.cli._reading
DEFAULT_COUNT = 50
_CODES = {"yellow": "\x1b[33m", "red": "\x1b[31m"}


class Out:
    """Text for one stream, written at the end; styled as click styles it on a terminal,
    plain elsewhere (where click would strip the styles, and any escape sequence with them:
    text holding one is :class:`Unhandled`)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        encoding = (getattr(stream, "encoding", "") or "").lower().replace("-", "").replace("_", "")
        if encoding != "utf8":
            raise Unhandled("not a UTF-8 stream")
        try:
            self.tty = stream.isatty()
        except (AttributeError, ValueError):
            self.tty = False
        self.parts: list[str] = []

    def style(self, text: str, fg: str | None = None, bold: bool = False, dim: bool = False) -> str:
        if not self.tty:
            return text
        codes = (
            (_CODES[fg] if fg else "") + ("\x1b[1m" if bold else "") + ("\x1b[2m" if dim else "")
        )
        return f"{codes}{text}\x1b[0m"

    def say(self, text: str = "", **style: Any) -> None:
        self.parts.append((self.style(text, **style) if style else text) + "\n")

    def text(self) -> str:
        out = "".join(self.parts)
        if not self.tty and "\x1b" in out:
            raise Unhandled("an escape sequence click would strip")
        return out


# What to write, stream by stream, in order: a text, or chunks written as they come (a
# full log streams so: constant memory).
Output = list[tuple["TextIO", "str | Iterable[str]"]]


def write(outs: Output) -> None:
    for stream, text in outs:
        if isinstance(text, str):
            if text:
                stream.write(text)
                stream.flush()
            continue
        held: list[str] = []
        for chunk in text:
            held.append(chunk)
            if len(held) >= 256:
                stream.write("".join(held))
                held.clear()
        stream.write("".join(held))
        stream.flush()


def emit_json(data: Any) -> str:
    """What `evolve.cli._common.emit_json` writes."""
    import json

    return json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"


# --- log -------------------------------------------------------------------------------------


def run_log(
    repo: Repo, max_count: int | None, as_json: bool, as_jsonl: bool, paths: tuple[str, ...] = ()
) -> Output:
    from evolve.quick._log import history, path_history, to_json

    if as_json and as_jsonl:
        raise Unhandled("both --json and --jsonl")
    if paths:
        from evolve.workspace._paths import normalize_relpath

        for path in paths:  # PATHS are workspace-relative; the full command says why not
            normalize_relpath(path.rstrip("/") or path)

    def entries(count: int | None) -> list[Commit]:
        return path_history(repo, paths, count) if paths else history(repo, count)

    if as_jsonl or as_json:
        if as_jsonl or max_count == 0:
            if max_count or paths:
                lines: Iterable[str] = _lines(entries(max_count or None))
            else:  # every entry: streamed, in constant memory
                from evolve.quick._logcache import stream_lines

                lines = stream_lines(repo, _encoder)
            if as_jsonl:
                return [(sys.stdout, (line + "\n" for line in lines))]
            return [(sys.stdout, _json_array(lines))]
        if max_count is None:
            found = entries(DEFAULT_COUNT + 1)
            doc: dict[str, Any] = {
                "entries": [to_json(c) for c in found[:DEFAULT_COUNT]],
                "limit": DEFAULT_COUNT,
                "truncated": len(found) > DEFAULT_COUNT,
            }
            return [(sys.stdout, emit_json(doc))]
        return [(sys.stdout, _json_array(_lines(entries(max_count))))]
    out = Out(sys.stdout)
    count = DEFAULT_COUNT if max_count is None else max_count
    shown = entries(count or None)
    if not shown:
        # with PATHS, an empty list says so of them: the workspace may well be trained
        out.say(
            f"no memory or prompt commit changed {', '.join(paths)}."
            if paths
            else "no memory or prompt commits yet; run `evolve train`."
        )
    for c in shown:
        _say_entry(out, to_json(c))
    return [(sys.stdout, out.text())]


def _encoder() -> Callable[[str], str]:
    """The JSON string encoder `json.dumps(..., ensure_ascii=False)` uses."""
    from json.encoder import encode_basestring

    return encode_basestring


def _lines(entries: list[Commit]) -> list[str]:
    from evolve.quick._log import json_line

    esc = _encoder()
    return [json_line(c, esc) for c in entries]


def _json_array(lines: Iterable[str]) -> Iterator[str]:
    """`[\n` + the lines joined by `,\n` + `\n]\n` (`[\n]\n` for none), as they come."""
    first = True
    for line in lines:
        yield ("[\n" if first else ",\n") + line
        first = False
    yield "[\n]\n" if first else "\n]\n"


def _say_entry(out: Out, e: dict[str, Any]) -> None:
    label = out.style(" (refusal record)", fg="red") if e["kind"] == "refusal" else ""
    out.say(f"{out.style(e['commit'][:10], fg='yellow')} {e['time']}  {e['subject']}{label}")
    meta = []
    if e["episode"] is not None:
        meta.append(f"episode {e['episode']}")
    if e["task"]:
        meta.append(f"task {e['task']}")
    if meta:
        out.say("    " + ", ".join(meta))
    if e["complaint"]:
        out.say(f"    complaint: {clip(e['complaint'], LOG_TEXT)}")
    if e["ops"]:
        out.say("    ops: " + " ".join(f"{op['op']}={op['id']}" for op in e["ops"]))
    for line in e["refused"]:
        out.say(f"    {clip(line, LOG_TEXT)}")


# --- show ------------------------------------------------------------------------------------


def _find_path(repo: Repo, unit_id: str) -> str | None:
    """`evolve.history._show._find_path`."""
    name = f"{unit_id}.md"
    memory = os.path.join(repo.root, "memory")
    folders = [memory]
    if os.path.isdir(memory):
        folders += [e.path for e in os.scandir(memory) if e.is_dir()]
    for folder in folders:
        if os.path.isfile(os.path.join(folder, name)):
            return os.path.relpath(os.path.join(folder, name), repo.root).replace(os.sep, "/")
    # Path.rglob's order: folders depth first, each in the order the system lists it,
    # symlinked folders not entered (os.walk's order too); a name that exists matches.
    for folder, _, _ in os.walk(memory):
        if os.path.exists(os.path.join(folder, name)):
            return os.path.relpath(os.path.join(folder, name), repo.root).replace(os.sep, "/")
    out = repo.git(
        "log", "--format=", "--name-only", "--diff-filter=A", "HEAD", "--",
        f":(glob)memory/**/{unit_id}.md", f"memory/{unit_id}.md",
    ).decode("utf-8", "surrogateescape")  # fmt: skip
    names = [line for line in out.splitlines() if line.strip()]
    return names[0] if names else None


def _start_patches(repo: Repo, path: str) -> Any:
    from evolve.quick._log import LOG_FORMAT, LOG_OPTIONS, Commit

    marker = b"\x00" + os.urandom(16).hex().encode("ascii") + b"\x00"
    mark = marker[1:-1].decode("ascii")
    fmt = f"%x00{mark}%x00{LOG_FORMAT}%x00{mark}%x00"
    run = repo.start(
        "log",
        f"--format={fmt}",
        "-p",
        "--no-color",
        "--no-ext-diff",
        *LOG_OPTIONS,
        "HEAD",
        "--",
        path,
    )

    def collect() -> list[tuple[Commit, str]]:
        chunks = run.wait().split(marker)
        result = []
        for n in range(1, len(chunks) - 1, 2):
            fields = chunks[n].split(b"\x00")
            if len(fields) != 4:
                raise Unhandled("unreadable git log output")
            patch = chunks[n + 1].decode("utf-8", "replace").strip("\n")
            result.append((Commit(*fields), patch))
        return result

    collect.run = run  # type: ignore[attr-defined]
    return collect


def run_show(repo: Repo, unit_id: str, as_json: bool) -> Output:
    if "/" in unit_id or not unit_id or unit_id.startswith("."):
        raise Unhandled("not a unit id")
    if repo.head() is None:
        raise Unhandled("no commits")
    path = _find_path(repo, unit_id)
    if path is None:
        raise Unhandled("no such unit")
    collect = _start_patches(repo, path)
    try:
        unit, problem, model = _read_unit(repo, path)
        commits = collect()
    finally:
        collect.run.kill()
    if as_json:
        dumped = (
            (
                model.model_dump(by_alias=True, exclude_none=True)
                if model is not None
                else unit.dump()
            )
            if unit
            else None
        )
        doc: dict[str, Any] = {
            "id": unit_id,
            "path": path,
            "unit": dumped,
            "problem": problem,
            "commits": [
                {
                    "commit": c.sha,
                    "time": c.time,
                    "subject": c.subject,
                    "kind": commit_kind(c),
                    "trailers": c.trailers,
                    "diff": patch,
                }
                for c, patch in commits
            ],
        }
        return [(sys.stdout, emit_json(doc))]
    out = Out(sys.stdout)
    u = unit
    if problem is not None:
        out.say(
            f"{out.style(unit_id, bold=True)} ({path}) cannot be read as a unit: "
            f"{problem} Its history follows; `evolve revert` the commit that broke it."
        )
    elif u is None:
        out.say(f"{out.style(unit_id, bold=True)} ({path}) no longer exists (evicted or removed).")
    else:
        out.say(
            f"{out.style(u.id, bold=True)} {u.recipe}/{u.kind} [{u.status}] scope {u.scope}  ({path})"
        )
        out.say(f"  {u.text}")
        held = f"held from {u.valid_from or '?'}" + (
            f" to {u.valid_to}"
            if u.valid_to
            else " (retired, undated)"  # retired before retiring recorded `valid_to`
            if u.status == "retired"
            else " (still holds)"
        )
        out.say(
            f"  {held}; created at episode {u.created_episode}, updated at episode {u.updated_episode}"
        )
        if u.status == "tombstoned":
            out.say(
                f"  tombstone: {u.reason or ''} (reverted commit {(u.reverted_commit or '-')[:10]})"
            )
        if u.revoked_by:
            out.say(f"  revoked by {u.revoked_by} at episode {u.revoked_at}")
    for info, patch in commits:
        out.say(
            f"\n{out.style(info.sha[:10], fg='yellow')} {info.time} ({commit_kind(info)}) {info.subject}"
        )
        out.say(patch)
    return [(sys.stdout, out.text())]


def _read_unit(repo: Repo, path: str) -> tuple[Unit | None, str | None, Any]:
    """(the unit now, why it cannot be read, the `MemoryUnit` when the full parser read it)."""
    from evolve.quick._units import Unit, parse

    full = os.path.join(repo.root, *path.split("/"))
    if not os.path.isfile(full):
        return None, None, None
    try:
        with open(full, encoding="utf-8") as f:
            raw = f.read()
    except UnicodeDecodeError as exc:
        raise Unhandled("not UTF-8") from exc
    try:
        return parse(path, raw), None, None
    except Unhandled:
        from evolve.memory import MalformedUnit, parse_unit

        try:
            model = parse_unit(path, raw)
        except MalformedUnit as exc:
            return None, str(exc), None
        return Unit.of(model), None, model


# --- memory ----------------------------------------------------------------------------------


def _status_paths(raw: bytes) -> tuple[list[str], bool]:
    dirty, ignored = [], False
    for entry in raw.decode("utf-8", "surrogateescape").split("\x00"):
        if not entry:
            continue
        if entry.startswith("!!"):
            ignored = True
        else:
            dirty.append(entry[3:])
    return dirty, ignored


def _resolve(repo: Repo, rev: str) -> str:
    """`evolve.history.resolve_as_of`: a revision, or the last commit at or before a date.

    Raises:
        Unhandled: no such commit (the full command says so).
    """
    if rev[:1].isdigit():  # maybe a date; `re` and datetime only then
        from evolve.quick._dates import is_date, parse_when

        if is_date(rev):
            when = parse_when(rev.strip())
            out = repo.git("rev-list", "-1", f"--before={when.isoformat()}", "HEAD").strip()
            if not out:
                raise Unhandled("no commit that early")
            return out.decode("ascii")
    out = repo.git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
    if not out:
        raise Unhandled("no such commit")
    return out.decode("ascii")


def run_memory(
    repo: Repo, as_of: str | None, scope: str | None, persona: str | None, as_json: bool
) -> Output:
    from evolve.quick._read import config_summary, load_at, load_worktree
    from evolve.quick._render import render_memory, renderers_for
    from evolve.quick._units import valid_scope

    if scope is not None and persona is not None:
        raise Unhandled("both --scope and --persona")
    if as_of is not None and not as_of.strip():
        raise Unhandled("an empty revision")
    with open(os.path.join(repo.root, CONFIG_NAME), "rb") as f:
        raw = f.read()
    cfg_persona, inject, recipes = config_summary(repo, raw)
    chosen = scope or f"user:{persona or cfg_persona}"
    if not valid_scope(chosen):
        raise Unhandled("invalid scope")
    renderers = renderers_for(recipes)
    out, err = Out(sys.stdout), Out(sys.stderr)
    if as_of is not None:
        commit = _resolve(repo, as_of)
        config_then = repo.git("cat-file", "--batch", input=f"{commit}:{CONFIG_NAME}\n".encode())
        header, _, rest = config_then.partition(b"\n")
        if header.endswith(b" missing") or len(header.split()) != 3:
            raise Unhandled("no evolve.yaml at that commit")
        size = int(header.split()[2])
        _, _, recipes_then = config_summary(repo, rest[:size])
        text = render_memory(load_at(repo, commit), chosen, renderers_for(recipes_then))
        if as_json:
            then = {"commit": commit, "scope": chosen, "memory": text, "source": "commit"}
            return [(sys.stdout, emit_json(then))]
        out.say(f"# memory for {chosen} at {commit[:10]}", dim=True)
        out.say(text if text else "(empty)")
        return [(sys.stdout, out.text())]
    status = repo.start(
        "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching",
        "--no-renames", "--", "memory",
    )  # fmt: skip
    try:
        text = render_memory(load_worktree(repo.root, repo.git_dir), chosen, renderers)
        head = repo.head()
        dirty, ignored = _status_paths(status.wait())
    finally:
        status.kill()
    if head is None:
        head_text = ""
    elif dirty or ignored:
        head_text = render_memory(load_at(repo, head), chosen, renderers)
    else:
        head_text = text
    differs = text != head_text
    if inject != "recipe":
        err.say(
            f"note: memory.inject is {inject!r} in evolve.yaml, so `evolve run` gives the agent "
            "that instead of this memory; `evolve train` always gives it this memory."
        )
    if differs:
        shown = ", ".join(dirty[:5]) + (" ..." if len(dirty) > 5 else "")
        err.say(
            f"note: this is the working tree's memory, which differs from HEAD"
            f"{f' (uncommitted: {shown})' if shown else ''}; "
            "`evolve run` and `evolve train` use it; commit it, or see HEAD with --as-of HEAD."
        )
    if as_json:
        doc: dict[str, Any] = {
            "commit": head,
            "scope": chosen,
            "memory": text,
            "source": "working tree",
            "differs_from_head": differs,
            "uncommitted": dirty,
        }
        return [(sys.stderr, err.text()), (sys.stdout, emit_json(doc))]
    at = f" at {head[:10]}" if head else ""
    changed = ", with uncommitted changes" if differs else ""
    out.say(f"# memory for {chosen}{at} (working tree{changed})", dim=True)
    out.say(text if text else "(empty)")
    return [(sys.stderr, err.text()), (sys.stdout, out.text())]
