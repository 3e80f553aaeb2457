"""`evolve log`, `show` and `memory` on the fast path: the same output as the click commands
in `evolve.cli._reading`, byte for byte (tests compare them).

Every function here raises :class:`Unhandled` (before writing) for any case it does not
answer itself; it builds its whole output before writing any of it, except a full
`log --json`/`--jsonl`, which streams (in constant memory) once it knows it can answer.
"""

from __future__ import annotations

import os
import sys

from evolve._format._views import (
    DEFAULT_COUNT,
    SIDECAR_PATCH,
    counter_entries,
    log_empty,
    log_entry,
    memory_json,
    memory_notes,
    memory_text,
    secret_notes,
    show_entries,
    show_json,
    show_text,
    sidecar_path,
    unit_counters,
    unseen_note,
)
from evolve.quick._git import CONFIG_NAME, Repo, Unhandled

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any, TextIO

    from evolve._format._units import Unit
    from evolve.quick._log import Commit

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
        out.say(log_empty(paths))
    for c in shown:
        for line in log_entry(to_json(c), out.style):
            out.say(line)
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


# --- show ------------------------------------------------------------------------------------


def _find_path(repo: Repo, unit_id: str) -> str | None:
    """`evolve.history._show.find_path`."""
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


def _start_patches(repo: Repo, *paths: str, options: tuple[str, ...] = ()) -> Any:
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
        *options,
        "HEAD",
        "--",
        *paths,
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
    """`evolve show`, configured secrets shown as ``<redacted>`` (`evolve.quick._secrets`)."""
    from evolve.quick._secrets import hidden, workspace_secrets

    return hidden(_show(repo, unit_id, as_json), workspace_secrets(repo))


def _show(repo: Repo, unit_id: str, as_json: bool) -> Output:
    if "/" in unit_id or not unit_id or unit_id.startswith("."):
        raise Unhandled("not a unit id")
    if repo.head() is None:
        raise Unhandled("no commits")
    path = _find_path(repo, unit_id)
    if path is None:
        raise Unhandled("no such unit")
    collect = _start_patches(repo, path)
    sidecar = sidecar_path(path)
    collect_all = _start_patches(repo, path, sidecar, options=SIDECAR_PATCH)
    try:
        unit, problem, model = _read_unit(repo, path)
        entry = _sidecar_entry(repo, sidecar, unit_id)
        commits = collect()
        entries = show_entries(unit_id, commits, collect_all())
    finally:
        collect.run.kill()
        collect_all.run.kill()
    dumped = (
        (model.model_dump(by_alias=True, exclude_none=True) if model is not None else unit.dump())
        if unit
        else None
    )
    counters = unit_counters(dumped, entry)
    if as_json:
        shown = show_json(unit_id, path, dumped, problem, entries, counters)
        return [(sys.stdout, emit_json(shown))]
    out = Out(sys.stdout)
    for line in show_text(unit_id, path, unit, problem, entries, out.style, counters):
        out.say(line)
    return [(sys.stdout, out.text())]


def _sidecar_entry(repo: Repo, sidecar: str, unit_id: str) -> dict[str, Any] | None:
    """The unit's entry in its sidecar in the working tree (`_views.counter_entries`)."""
    from evolve import _confine as confined

    if not os.path.isfile(os.path.join(repo.root, *sidecar.split("/"))):
        return None
    try:
        raw = confined.read_text(repo.root, sidecar)  # no link followed out (evolve._confine)
    except UnicodeDecodeError as exc:
        raise Unhandled("not UTF-8") from exc
    return counter_entries(raw).get(unit_id)


def _read_unit(repo: Repo, path: str) -> tuple[Unit | None, str | None, Any]:
    """(the unit now, why it cannot be read, the `MemoryUnit` when the full parser read it)."""
    from evolve._format import _limits as limits
    from evolve._format._units import Unit, parse

    full = os.path.join(repo.root, *path.split("/"))
    if not os.path.isfile(full):
        return None, None, None
    try:
        raw = limits.read_text(repo.root, path)  # no link followed out, its size checked
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
    from evolve._format._git import status_paths_ignored

    return status_paths_ignored(raw.decode("utf-8", "surrogateescape"))


def _resolve(repo: Repo, rev: str) -> str:
    """`evolve.history.resolve_as_of`: a revision, or the last commit at or before a date.

    Raises:
        Unhandled: no such commit (the full command says so).
    """
    if rev[:1].isdigit():  # maybe a date; `re` and datetime only then
        from evolve._format._dates import is_date, parse_when

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
    from evolve._format._render import render_memory, unseen
    from evolve._format._units import valid_scope
    from evolve.quick._read import config_summary, load_at, load_worktree
    from evolve.quick._render import renderers_for
    from evolve.quick._secrets import secret_files
    from evolve.redact import hide_values, secret_values

    if scope is not None and persona is not None:
        raise Unhandled("both --scope and --persona")
    if as_of is not None and not as_of.strip():
        raise Unhandled("an empty revision")
    from evolve._format._limits import read_path

    raw = read_path(os.path.join(repo.root, CONFIG_NAME), CONFIG_NAME)  # its size checked
    cfg_persona, inject, recipes, listed, named = config_summary(repo, raw)
    secrets = secret_values(listed, named)  # shown as the agent receives it: redacted
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
        _, _, recipes_then, listed_then, _ = config_summary(repo, rest[:size])
        text = render_memory(load_at(repo, commit), chosen, renderers_for(recipes_then))
        if not text.strip() and chosen not in ("global", f"user:{cfg_persona}"):
            raise Unhandled("an empty scope: the full command checks the name")
        text = hide_values(text, secret_values((*listed, *listed_then), named))
        if as_json:
            return [(sys.stdout, emit_json(memory_json(commit, chosen, text)))]
        for line in memory_text(commit, chosen, text, out.style):
            out.say(line)
        return [(sys.stdout, out.text())]
    status = repo.start(
        "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching",
        "--no-renames", "--", "memory",
    )  # fmt: skip
    try:
        units = load_worktree(repo.root, repo.git_dir)
        text = render_memory(units, chosen, renderers)
        if not text.strip() and chosen not in ("global", f"user:{cfg_persona}"):
            raise Unhandled("an empty scope: the full command checks the name")
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
    text = hide_values(text, secrets)
    flagged = secret_files(repo.root, secrets)
    hidden = unseen_note(unseen(units, chosen, recipes), recipes)
    for note in (
        memory_notes(inject, differs, dirty) + ([hidden] if hidden else []) + secret_notes(flagged)
    ):
        err.say(note)
    if as_json:
        doc = memory_json(head, chosen, text, differs, dirty, flagged)
        return [(sys.stderr, err.text()), (sys.stdout, emit_json(doc))]
    for line in memory_text(head, chosen, text, out.style, differs):
        out.say(line)
    return [(sys.stderr, err.text()), (sys.stdout, out.text())]
