"""The reflector: reads the failed dev runs and proposes prompt changes (it never writes)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from string import Template
from typing import Any

from evolve.llm import LLM, JsonSchema, Message
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
SYSTEM = "You improve an assistant's prompts from evidence. Reply with JSON only."


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
        template = Template(
            resources.files("evolve.reflector")
            .joinpath("prompts", "reflector.md")
            .read_text("utf-8")
        )
        prompt = template.safe_substitute(
            failures=summarize_failures(failures),
            guidance="\n".join(f"- {g}" for g in guidance) or "(empty)",
            parameters=", ".join(f"{k} in [{lo:g}, {hi:g}]" for k, (lo, hi) in parameters.items())
            or "(none)",
            max_chars=str(max_chars),
        )
        completion = self.llm.complete(
            [Message("system", SYSTEM), Message("user", prompt)],
            json_schema=SCHEMA,
            temperature=0.0,
            seed=seed,
        )
        out = PromptProposal()
        try:
            data = parse_json_reply(completion.text)
        except ValueError as exc:
            out.refused.append(Refusal(op="reply", what=completion.text[:80], reason=str(exc)))
            return out
        if not isinstance(data, dict):
            out.refused.append(
                Refusal(
                    op="reply", what=completion.text[:80], reason="the reply is not a JSON object"
                )
            )
            return out
        unknown = set(data) - {"guidance", "edits", "parameters"}
        if unknown:
            out.refused.append(
                Refusal(op="reply", what=str(sorted(unknown)), reason="unknown fields")
            )
        guidance_raw = data.get("guidance")
        if isinstance(guidance_raw, list):
            out.guidance = [str(g) for g in guidance_raw if isinstance(g, str)]
        elif guidance_raw is not None:
            out.refused.append(
                Refusal(
                    op="guidance",
                    what=str(guidance_raw)[:80],
                    reason="'guidance' must be a list of text",
                )
            )
        edits = data.get("edits", [])
        if isinstance(edits, list):
            out.edits = [e for e in edits if isinstance(e, dict)]
        params = data.get("parameters", {})
        if isinstance(params, dict):
            out.parameters = dict(params)
        return out
