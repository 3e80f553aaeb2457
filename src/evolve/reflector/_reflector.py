"""The reflector: reads the failed dev runs and proposes prompt changes (it never writes)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from string import Template
from typing import Any

from evolve._io import package_text
from evolve._text import fragment
from evolve.llm import LLM, JsonSchema, Message, ReplyMalformed, RequestFailed
from evolve.ops import Refusal
from evolve.updaters import parse_json_reply

SCHEMA = JsonSchema(
    "reflector_edits",
    {
        "type": "object",
        "properties": {
            "guidance": {"type": "array", "items": {"type": "string"}},
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                    "required": ["path", "content"],
                },
            },
            "parameters": {"type": "object"},
        },
    },
)
# In a prompt file, like every instruction evolve sends (the applier's copy check reads them).
SYSTEM = package_text("evolve.reflector", "prompts", "system.md").strip()


@dataclass
class PromptProposal:
    guidance: list[str] | None = None
    edits: list[dict[str, Any]] = field(default_factory=list)
    parameters: dict[str, Any] = field(default_factory=dict)
    refused: list[Refusal] = field(default_factory=list)


def summarize_failures(lines: Sequence[str], limit: int = 30) -> str:
    """Complaint lines of the failed dev episodes, most frequent first, with counts."""
    counts = Counter(line.strip() for line in lines if line.strip())
    return "\n".join(f"{n}x {line}" for line, n in counts.most_common(limit)) or "(none)"


class Reflector:
    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    def propose(
        self,
        failures: Sequence[str],
        guidance: Sequence[str],
        *,
        parameters: dict[str, tuple[float, float]],
        max_chars: int,
        seed: int,
    ) -> PromptProposal:
        template = Template(package_text("evolve.reflector", "prompts", "reflector.md"))
        prompt = template.safe_substitute(
            failures=summarize_failures(failures),
            guidance="\n".join(f"- {g}" for g in guidance) or "(empty)",
            parameters=", ".join(f"{k} in [{lo:g}, {hi:g}]" for k, (lo, hi) in parameters.items())
            or "(none)",
            max_chars=str(max_chars),
        )
        try:
            completion = self.llm.complete(
                [Message("system", SYSTEM), Message("user", prompt)],
                json_schema=SCHEMA,
                temperature=0.0,
                seed=seed,
            )
        except (ReplyMalformed, RequestFailed) as exc:
            # An answer the backend could not use, or a request that failed on every try: a
            # failed step, logged as a refusal; the loop goes on with nothing proposed.
            out = PromptProposal()
            out.refused.append(Refusal(op="reply", what="", reason=fragment(str(exc), 300)))
            return out
        return parse_proposal(completion.text)


FIELDS = ("guidance", "edits", "parameters")


def parse_proposal(text: str) -> PromptProposal:
    """Validate a reflector reply; every part that cannot be used is a logged refusal.

    The reply is refused whole when it is not JSON, nests too deep, holds an unsafe character
    (see :mod:`evolve._text`) or is not an object; otherwise each wrong-shaped part (an unknown
    field, guidance that is not a list of text, an edit without a text path and content,
    parameters that are not an object) is refused with its reason and the rest is
    used. A reply that proposes nothing at all is logged too.
    """
    out = PromptProposal()
    try:
        data = parse_json_reply(text)
    except ValueError as exc:
        out.refused.append(Refusal(op="reply", what=fragment(text), reason=str(exc)))
        return out
    if not isinstance(data, dict):
        out.refused.append(
            Refusal(op="reply", what=fragment(text), reason="the reply is not a JSON object")
        )
        return out
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        out.refused.append(
            Refusal(op="reply", what=fragment(", ".join(unknown)), reason="unknown fields")
        )
    if not any(k in data for k in FIELDS):
        out.refused.append(
            Refusal(
                op="reply",
                what=fragment(text),
                reason="the reply has none of 'guidance', 'edits' or 'parameters'",
            )
        )
    _guidance(data.get("guidance"), out)
    _edits(data.get("edits"), out)
    _parameters(data.get("parameters"), out)
    return out


def _guidance(raw: Any, out: PromptProposal) -> None:
    if raw is None:
        return
    if not isinstance(raw, list):
        out.refused.append(
            Refusal(
                op="guidance", what=fragment(str(raw)), reason="'guidance' must be a list of text"
            )
        )
        return
    out.guidance = []
    for line in raw:
        if isinstance(line, str):
            out.guidance.append(line)
        else:
            out.refused.append(
                Refusal(
                    op="guidance", what=fragment(str(line)), reason="a guidance line must be text"
                )
            )


def _edits(raw: Any, out: PromptProposal) -> None:
    if raw is None:
        return
    if not isinstance(raw, list):
        out.refused.append(
            Refusal(op="edit", what=fragment(str(raw)), reason="'edits' must be a list of objects")
        )
        return
    for edit in raw:
        if (
            isinstance(edit, dict)
            and isinstance(edit.get("path"), str)
            and isinstance(edit.get("content"), str)
        ):
            extra = sorted(set(edit) - {"path", "content"})
            if extra:
                out.refused.append(
                    Refusal(op="edit", what=edit["path"], reason=f"unknown fields {extra}, ignored")
                )
            out.edits.append({"path": edit["path"], "content": edit["content"]})
        else:
            out.refused.append(
                Refusal(
                    op="edit",
                    what=fragment(str(edit)),
                    reason="an edit must be an object with a text 'path' and 'content'",
                )
            )


def _parameters(raw: Any, out: PromptProposal) -> None:
    if raw is None:
        return
    if not isinstance(raw, dict):
        out.refused.append(
            Refusal(
                op="parameter", what=fragment(str(raw)), reason="'parameters' must be an object"
            )
        )
        return
    # Each value is checked against its declared range by the applier, which logs refusals.
    out.parameters = dict(raw)
