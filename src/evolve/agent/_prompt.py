"""The prompt builder: prompt files, then `<api_docs>`, `<memory>`, `<skills>` and `<stats>`.

Memory (sentences written by a learner) and stats (counts the harness computed) are kept in
separate sections on purpose: they are different kinds of claims, and the prompt says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evolve import _confine as confined
from evolve._format import _limits as limits

MEMORY_HEADER = "What you remember about this user:"
STATS_HEADER = "Counts the harness computed from the user's records (facts, not preferences):"


@dataclass(frozen=True)
class PromptFile:
    path: str
    text: str


def read_prompt_files(prompts_dir: Path) -> list[PromptFile]:
    """The prompt files of a workspace: `system.md` first, then the other `*.md` by path.

    Nothing is read through a link out of the workspace (`evolve._confine`): `prompts/` as
    such a link, a file or a folder in it that is one, is refused by name (`PathRefused`)
    before any text reaches a prompt; a link that stays inside is followed, a folder link
    not entered (as `Path.rglob`)."""
    root = prompts_dir.parent
    confined.check(root, prompts_dir.name)
    files = []
    for p in prompts_dir.rglob("*"):
        if p.is_symlink():
            confined.check(root, p.relative_to(root).as_posix())  # refused when it leads out
        if p.suffix == ".md" and p.is_file():
            files.append(p)
    files.sort()
    files.sort(key=lambda p: (p.name != "system.md", str(p)))
    return [
        PromptFile(str(p.relative_to(root)), limits.read_text(root, p.relative_to(root).as_posix()))
        for p in files
    ]


def build_system_prompt(
    prompt_files: Sequence[PromptFile],
    *,
    api_docs: str,
    memory: str,
    stats: Sequence[str] = (),
    skills: str = "",
) -> str:
    parts = [f.text.strip() for f in prompt_files if f.text.strip()]
    parts.append(f"<api_docs>\n{api_docs.strip()}\n</api_docs>")
    parts.append(f"<memory>\n{MEMORY_HEADER}\n{memory.strip() or '(nothing yet)'}\n</memory>")
    if skills.strip():
        # Selected skills: procedures, not facts about the user; only when some
        # were selected, so a prompt without skills is byte-identical to before.
        parts.append(f"<skills>\n{skills.strip()}\n</skills>")
    if stats:
        lines = "\n".join(f"- {s}" for s in stats)
        parts.append(f"<stats>\n{STATS_HEADER}\n{lines}\n</stats>")
    return "\n\n".join(parts) + "\n"


def task_message(instruction: str, date: str | None = None) -> str:
    text = f"Task: {instruction}"
    if date:
        text += f"\nToday's date: {date}"
    return text


def _span(prompt: str, tag: str) -> tuple[int, int, int, int] | None:
    """(start of open tag, start of body, end of body, end of close tag) of a section.

    Tags count only on lines of their own, so prose that mentions `<stats>` is not a section.
    The first line `<tag>` (then only spaces or tabs) opens it, and the first line `</tag>`
    (then only spaces or tabs) after it closes it: what the regular expression
    `(?ms)^<tag>[ \t]*\n(.*?)^</tag>[ \t]*$` finds, without compiling one for each tag.
    """
    opening, closing = f"<{tag}>", f"</{tag}>"
    at = 0
    while (start := prompt.find(opening, at)) != -1:
        at = start + 1
        newline = prompt.find("\n", start + len(opening))
        if (start and prompt[start - 1] != "\n") or newline == -1:
            continue
        if prompt[start + len(opening) : newline].strip(" \t"):
            continue
        body = newline + 1
        # The first closing line after this opening one; a later opening line has no closing
        # line that this one lacks, so none closes if this one is not closed.
        after = body
        while (close := prompt.find(closing, after)) != -1:
            after = close + 1
            if prompt[close - 1] != "\n":  # close >= body, and body follows a newline
                continue
            end = close + len(closing)
            while end < len(prompt) and prompt[end] in " \t":
                end += 1
            if end == len(prompt) or prompt[end] == "\n":
                return start, body, close, end
        return None
    return None


def section(prompt: str, tag: str) -> str | None:
    """The body of a `<tag>` ... `</tag>` section (tags on their own lines), or None."""
    span = _span(prompt, tag)
    return None if span is None else prompt[span[1] : span[2]].strip("\n")


def without_sections(prompt: str, tags: Sequence[str]) -> str:
    """The prompt with the named sections cut out."""
    out = prompt
    for tag in tags:
        span = _span(out, tag)
        if span is not None:
            out = out[: span[0]] + out[span[3] :]
    return out
