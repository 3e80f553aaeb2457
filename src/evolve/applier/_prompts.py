"""The applier for prompt proposals: guidance, prompt-file edits and tuned parameters.

Only `prompts/` may change. Each prompt file is capped in size; the reflector's guidance lives
in one marked block of `prompts/system.md` that each proposal *replaces* (never appends to),
so the prompt cannot grow by accretion. Parameters are checked against the ranges declared in
the protected `evolve.yaml`. A refused part is logged with its reason and never written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evolve._format import _limits as limits
from evolve._text import describe_char, hidden_char, printable, unsafe_char
from evolve.applier._copied import copied
from evolve.applier._harness import plan_harness
from evolve.errors import ConfigError, PathRefused
from evolve.harness import HARNESS_FILE
from evolve.ops import Refusal
from evolve.workspace import PARAMETERS_FILE, Workspace, check_parameter, load_parameters

SYSTEM = "prompts/system.md"
START = "<!-- evolve:guidance:start -->"
END = "<!-- evolve:guidance:end -->"


@dataclass
class PromptChanges:
    files: dict[str, bytes] = field(default_factory=dict)
    refused: list[Refusal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def guidance_of(text: str) -> list[str]:
    """The guidance lines inside the marked block of a system prompt."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        return []
    body = text[start + len(START) : end]
    return [line.strip()[2:].strip() if line.strip().startswith("- ") else line.strip()
            for line in body.splitlines() if line.strip()]  # fmt: skip


def with_guidance(text: str, lines: Sequence[str]) -> str:
    """`text` with its guidance block replaced by `lines` (added at the end if absent)."""
    block = START + "\n" + "".join(f"- {line}\n" for line in lines) + END
    start, end = text.find(START), text.find(END)
    if start >= 0 and end > start:
        return text[:start] + block + text[end + len(END) :]
    return text.rstrip("\n") + "\n\n" + block + "\n"


def _strip_blocks(text: str) -> str:
    """`text` without any guidance block (or stray marker)."""
    while START in text and END in text[text.find(START) :]:
        start = text.find(START)
        end = text.find(END, start) + len(END)
        text = text[:start].rstrip("\n") + "\n" + text[end:].lstrip("\n")
    return text.replace(START, "").replace(END, "")


def _lines_now(ws: Workspace, path: str) -> list[str]:
    """The lines of the prompt file `path` as it stands ([] when it does not exist)."""
    try:
        return limits.read_text(ws.root, path).splitlines()
    except (OSError, ValueError, PathRefused):
        return []


def plan_prompt_changes(
    ws: Workspace,
    *,
    guidance: Sequence[str] | None,
    edits: Sequence[Mapping[str, Any]],
    parameters: Mapping[str, Any],
    max_chars: int,
    harness: Mapping[str, Any] | None = None,
) -> PromptChanges:
    """Validate a reflector's proposal; return the file contents to write and what was refused.

    `harness` switches modules of `prompts/harness.yaml` (module -> variant; see
    `evolve.applier._harness`)."""
    out = PromptChanges()
    if harness:
        text, refused = plan_harness(ws, harness)
        out.refused.extend(refused)
        if text is not None:
            out.files[HARNESS_FILE] = text
    for edit in edits:
        path, content = edit.get("path"), edit.get("content")
        if not isinstance(path, str) or not isinstance(content, str):
            out.refused.append(
                Refusal(
                    op="edit", what=str(path)[:80], reason="an edit needs a path and text content"
                )
            )
            continue
        try:
            ws.check_writable(path, allowed=("prompts/",))
        except PathRefused as exc:
            out.refused.append(Refusal(op="edit", what=path, reason=str(exc)))
            continue
        bad = unsafe_char(content) or hidden_char(content)
        if bad is not None:
            reason = f"the edit contains the character {describe_char(bad)}"
            out.refused.append(Refusal(op="edit", what=path, reason=reason))
            continue
        if not path.endswith(".md") or path == PARAMETERS_FILE:
            out.refused.append(
                Refusal(op="edit", what=path, reason="only Markdown prompt files may be edited")
            )
            continue
        if START in content or END in content:
            if path != SYSTEM:
                out.refused.append(
                    Refusal(
                        op="edit",
                        what=path,
                        reason="the guidance block belongs in prompts/system.md only",
                    )
                )
                continue
            # An edit keeps the guidance block as it stands; only a guidance proposal changes it.
            current_lines = guidance_of(limits.read_text(ws.root, SYSTEM))
            content = with_guidance(_strip_blocks(content), current_lines)
        if len(content) > max_chars:
            out.refused.append(
                Refusal(
                    op="edit",
                    what=path,
                    reason=f"{len(content)} characters, over the cap of {max_chars}",
                )
            )
            continue
        why = copied(content, file=True, kept=_lines_now(ws, path))
        if why is not None:
            out.refused.append(Refusal(op="edit", what=path, reason=why))
            continue
        out.files[path] = content.encode("utf-8")
    if guidance is not None:
        # On top of an edit of system.md in the same proposal, if there is one.
        edited = out.files.get(SYSTEM)
        current = (
            edited.decode("utf-8") if edited is not None else limits.read_text(ws.root, SYSTEM)
        )
        clean = []
        for line in (" ".join(str(g).split()) for g in guidance if str(g).strip()):
            bad = unsafe_char(line) or hidden_char(line)
            if bad is not None:
                out.refused.append(
                    Refusal(
                        op="guidance",
                        what=printable(line, 80),
                        reason=f"contains the character {describe_char(bad)}",
                    )
                )
            elif "<!--" in line or "-->" in line:
                out.refused.append(
                    Refusal(
                        op="guidance",
                        what=line[:80],
                        reason="guidance may not contain HTML comment markers",
                    )
                )
            elif (why := copied(line)) is not None:
                out.refused.append(Refusal(op="guidance", what=line[:80], reason=why))
            else:
                clean.append(line)
        new = with_guidance(current, clean)
        if len(new) > max_chars:
            out.refused.append(
                Refusal(
                    op="guidance",
                    what=SYSTEM,
                    reason=f"{SYSTEM} would be {len(new)} characters, over the cap of {max_chars}",
                )
            )
        elif new != current:
            out.files[SYSTEM] = new.encode("utf-8")
    if parameters:
        values: dict[str, Any] = dict(load_parameters(ws.root, ws.config))
        changed = False
        for name, value in parameters.items():
            try:
                checked = check_parameter(ws.config, str(name), value)
            except ConfigError as exc:
                out.refused.append(Refusal(op="parameter", what=str(name), reason=str(exc)))
                continue
            if values.get(str(name)) != checked:
                values[str(name)] = checked
                changed = True
        if changed:
            import yaml  # only where parameters are written

            out.files[PARAMETERS_FILE] = yaml.safe_dump(values, sort_keys=True).encode("utf-8")
    return out
