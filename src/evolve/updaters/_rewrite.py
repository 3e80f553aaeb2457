"""`rewrite`: the model rewrites the whole memory document, capped at `max_memory_chars`.

The reply *is* the replacement: the one document unit is rewritten in place (op `rewrite`,
same id), so the history of its file is the history of the document and a line the model
leaves out is retired, and named: the commit's notes list every line the rewrite dropped
(`dropped line: ...`), the cut included. A document over the cap is cut at a line break, or
else at a word boundary, never mid-word.
"""

from __future__ import annotations

from collections.abc import Sequence

from evolve._format._render import render_document
from evolve.envs import ApiCall
from evolve.llm import JsonSchema
from evolve.memory import MemoryUnit
from evolve.memory._similarity import normalize
from evolve.ops import Op, Refusal
from evolve.updaters._base import RecipeContext, Update, ask, load_prompt, recipes
from evolve.workspace import EvolveConfig, RecipeCaps

SCHEMA = JsonSchema(
    "memory_rewrite",
    {"type": "object", "properties": {"memory": {"type": "string"}}, "required": ["memory"]},
)
DOCUMENT_ID = "rewrite-document"


@recipes.register("rewrite")
class RewriteRecipe:
    name = "rewrite"

    def default_caps(self, config: EvolveConfig) -> RecipeCaps:
        """One document, as long as its prompt asks the model for (`memory.max_memory_chars`)."""
        return RecipeCaps(units=1, chars=config.memory.max_memory_chars)

    def render(self, units: Sequence[MemoryUnit]) -> str:
        return render_document(units)

    def verify(self, units: Sequence[MemoryUnit], calls: Sequence[ApiCall]) -> list[str]:
        return []

    def observe(self, ctx: RecipeContext) -> Update:
        update = Update()
        current = next(
            (u for u in ctx.mine(self.name) if u.status == "active" and u.kind == "document"), None
        )
        prompt = load_prompt("rewrite").safe_substitute(
            instruction=ctx.episode.instruction,
            actions=ctx.episode.actions,
            complaint=ctx.episode.complaint,
            memory=current.text if current is not None else "(empty)",
            max_chars=str(ctx.max_memory_chars),
        )
        data = ask(ctx, SCHEMA, load_prompt("system").template, prompt, update)
        if data is None:
            return update
        text = data.get("memory")
        if not isinstance(text, str):
            update.refused.append(
                Refusal(op="rewrite", what=str(text)[:80], reason="'memory' must be text")
            )
            return update
        text = text.strip()
        if len(text) > ctx.max_memory_chars:
            text = clip(text, ctx.max_memory_chars)
            update.notes.append(
                f"rewrite truncated to {len(text)} of {ctx.max_memory_chars} characters"
            )
        before = set(current.text.splitlines()) if current is not None else set()
        fresh = "\n".join(ln for ln in text.splitlines() if ln not in before) or text
        if current is None:
            unit = ctx.new_unit(self.name, "document", text).with_(id=DOCUMENT_ID)
            update.ops = [Op(op="add", unit=unit)]
        elif current.text.strip() != text:
            rewritten = ctx.touched(
                current, text=text, status="active", complaint=ctx.source_line(fresh)
            )
            update.ops = [Op(op="rewrite", unit=rewritten)]
            update.notes += [f"dropped line: {line}" for line in dropped_lines(current.text, text)]
        return update


def dropped_lines(before: str, after: str) -> list[str]:
    """The lines of `before` that `after` no longer has (whitespace and case aside), in order:
    what a rewrite takes away, named in its commit."""
    kept = {normalize(line) for line in after.splitlines() if line.strip()}
    out: list[str] = []
    for line in before.splitlines():
        if line.strip() and normalize(line) not in kept and line.strip() not in out:
            out.append(line.strip())
    return out


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters at a line break, else at a word boundary."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    if "\n" in cut:
        return cut[: cut.rfind("\n")].rstrip()
    if text[limit : limit + 1].isspace():
        return cut.rstrip()
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut).rstrip()
