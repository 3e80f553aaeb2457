"""The tools module: how tools are described and called, and what follows an error."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import msgspec

from evolve._lazy import pattern
from evolve.agent import DEFAULT_HOOKS, AgentRequest, LoopHooks
from evolve.harness._variant import Variant

# The tool the documentation-on-demand variant answers itself (never the world).
DOC_TOOL = "harness__api_doc"

# One API's entry in the docs: `- app__api(arguments): what it does`.
_ENTRY = pattern(r"^- (\w+)\((.*?)\): (.*)$")


def _purpose(description: str) -> str:
    head, dot, _ = description.partition(". ")
    return head + ("." if dot or not head.endswith(".") else "")


def compact(api_docs: str) -> str:
    """Each API entry cut to its name and the first sentence of what it does (arguments
    left out); lines that are not entries of that shape stay as they are."""
    out = []
    for line in api_docs.strip().splitlines():
        entry = _ENTRY.match(line)
        out.append(f"- {entry.group(1)}: {_purpose(entry.group(3))}" if entry else line)
    return "\n".join(out)


def entry_of(api_docs: str, api: str) -> str | None:
    """The full entry of `api` in the docs, or None."""
    for line in api_docs.splitlines():
        entry = _ENTRY.match(line)
        if entry and entry.group(1) == api:
            return line
    return None


class PlainTools(msgspec.Struct, frozen=True):
    """Default: the environment's docs as they are; the loop's own result and correction
    messages."""

    def describe(self, api_docs: str, tools: Sequence[str]) -> str:
        return api_docs

    def hooks(self, request: AgentRequest) -> LoopHooks:
        return DEFAULT_HOOKS


class CompactDocs(msgspec.Struct, frozen=True):
    """Concise tool descriptions (EasyTool): each API by name and purpose, no arguments."""

    def describe(self, api_docs: str, tools: Sequence[str]) -> str:
        return compact(api_docs)

    def hooks(self, request: AgentRequest) -> LoopHooks:
        return DEFAULT_HOOKS


DOC_NOTE = (
    f'Arguments are not listed here: call {DOC_TOOL} with {{"api": "<name>"}} to read an '
    "API's full entry before you call it."
)


class DocsOnDemand(msgspec.Struct, frozen=True):
    """Documentation on demand: compact docs, and a tool the harness answers with an API's
    full entry (the docs cost tokens only for the APIs the model looks up)."""

    def describe(self, api_docs: str, tools: Sequence[str]) -> str:
        if not any(_ENTRY.match(line) for line in api_docs.splitlines()):
            return api_docs  # docs of another shape: nothing to cut, nothing to look up
        entry = f"- {DOC_TOOL}(api: str): Show the full entry of one API: its arguments."
        return f"{DOC_NOTE}\n{compact(api_docs)}\n{entry}"

    def hooks(self, request: AgentRequest) -> LoopHooks:
        docs = request.sections.get("api_docs", "")
        if not any(_ENTRY.match(line) for line in docs.splitlines()):
            return DEFAULT_HOOKS

        def lookup(arguments: Mapping[str, Any]) -> str:
            api = arguments.get("api")
            found = entry_of(docs, api) if isinstance(api, str) else None
            return found if found is not None else f"There is no API named {str(api)[:80]!r}."

        return replace(DEFAULT_HOOKS, local={DOC_TOOL: lookup})


VARIANTS = (
    Variant("tools", "plain", "the environment's API docs in the prompt, as they are", PlainTools),
    Variant(
        "tools",
        "compact_docs",
        "concise tool instructions (EasyTool, Yuan et al. 2024, arXiv:2401.06201)",
        CompactDocs,
    ),
    Variant(
        "tools",
        "docs_on_demand",
        "documentation on demand (Hsieh et al. 2023, arXiv:2308.00675)",
        DocsOnDemand,
    ),
)
