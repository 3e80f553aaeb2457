"""The model mutator: a research card, the champion and a brief in; a variant file out.

:class:`ModelMutator` asks a model to write one harness module as a variant file
(`harness/<module>/<name>.py`, the format in docs/harness.md) implementing the card's
mechanism. Its reply is hostile input, parsed strictly by :func:`parse_variant_reply`: one
Python code block (or a reply that is code), within the size a variant file may have, that
compiles and defines the module's contract function at its top level. Nothing of it runs
here: compiling and reading its syntax tree execute no code. What passes is a
:class:`VariantDraft`; the health probe then runs it in the sandbox
(`evolve.harness._probe`), and a person reviews it before it first runs in an episode.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from evolve.errors import ModelError
from evolve.harness._config import VARIANT_MAX_BYTES, variant_path
from evolve.harness._contracts import MODULES
from evolve.harness._harness import BUILTINS
from evolve.llm import LLM, Message

# The function a variant file defines per module, with the signature shown to the model.
SIGNATURES: Mapping[str, str] = {
    "tools": "def describe(api_docs: str, tools: tuple[str, ...]) -> str",
    "context": "def assemble(parts, task) -> str",
    "skills": "def inject(picked: str, task) -> str",
    "memory": "def retrieve(memory: str, task) -> str",
    "workflow": "def review(tool: str, arguments: dict, reviewed: int) -> str | None",
}
CONTRACTS: Mapping[str, str] = {
    "tools": "Return the text describing the tools; every tool name must appear in it.",
    "context": (
        "Return the whole system prompt from parts.prompt_files (tuple of str), parts.api_docs, "
        "parts.memory, parts.skills and parts.stats (tuple of str). Keep the sections "
        "<api_docs>...</api_docs> and <memory>...</memory>."
    ),
    "skills": "Return the procedures to show (one per line) from the picked lines.",
    "memory": (
        "Return the memory lines to show, a subset of the given lines (one unit per line), "
        "in any order; never edit a line."
    ),
    "workflow": (
        "Before an action runs: return a note asking the model to check it, or None to run it."
    ),
}
_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)
_SLUG = re.compile(r"[^a-z0-9]+")


class CardLike(Protocol):
    """What the mutator reads of a research card (`evolve.research.Card` has these)."""

    @property
    def id(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def summary(self) -> str: ...

    @property
    def module(self) -> str: ...

    @property
    def mechanism(self) -> str: ...


@dataclass(frozen=True)
class VariantDraft:
    """A parsed, compiled (never run) variant file for `module`, named `name`."""

    module: str
    name: str
    source: bytes

    @property
    def path(self) -> str:
        return variant_path(self.module, self.name)


class ReplyRefused(ValueError):
    """The model's reply is not one acceptable variant file (one sentence why)."""


def variant_name(card: CardLike) -> str:
    """The variant file's name for a card: `m_` and its mechanism as a slug (never a
    built-in's name: those have no `m_` prefix)."""
    slug = _SLUG.sub("_", str(card.mechanism).lower()).strip("_")[:40] or "variant"
    return f"m_{slug}"


def parse_variant_reply(text: str, module: str) -> bytes:
    """The variant file's bytes from a model's reply, checked strictly.

    Raises:
        ReplyRefused: no single code block, too large, not valid Python, or no top-level
            contract function with the right number of arguments.
    """
    if module not in MODULES:
        raise ReplyRefused(f"there is no harness module {module[:40]!r}")
    blocks = _FENCE.findall(text)
    if len(blocks) > 1:
        raise ReplyRefused("the reply holds more than one code block")
    code = blocks[0] if blocks else text
    code = code.strip("\n") + "\n"
    if "```" in code:
        raise ReplyRefused("the reply's code block is not closed")
    data = code.encode("utf-8", "replace")
    if len(data) > VARIANT_MAX_BYTES:
        raise ReplyRefused(f"the code is larger than {VARIANT_MAX_BYTES} bytes")
    if "\x00" in code:
        raise ReplyRefused("the code holds a NUL character")
    try:
        tree = ast.parse(code, filename="variant.py")
        compile(tree, "variant.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        raise ReplyRefused(f"the code is not valid Python ({type(exc).__name__})") from None
    method = SIGNATURES[module].split("(")[0].removeprefix("def ")
    wanted = 3 if module == "workflow" else 2
    names = (method, "run") if module == "workflow" else (method,)
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    if not found:
        raise ReplyRefused(f"the code defines no top-level function {method}()")
    if len(found[-1].args.args) != wanted:
        raise ReplyRefused(f"{method}() must take {wanted} arguments")
    return data


@dataclass(frozen=True)
class ModelMutator:
    """Card + champion + brief -> a variant file the model wrote (parsed, never run here)."""

    llm: LLM
    max_tokens: int = 768
    seed: int | None = 0

    def messages(self, card: CardLike, champion: str, brief: str) -> list[Message]:
        module = card.module
        system = (
            "You write one Python module for an AI agent's harness. Reply with exactly one "
            "```python code block and nothing else. Use only the Python standard library; "
            "no files, no network, no subprocesses, no environment variables."
        )
        user = (
            f"Module: {module}. Write a function:\n{SIGNATURES[module]}\n"
            f"Contract: {CONTRACTS[module]}\n"
            f"`task` has .task_id and .instruction (strings).\n"
            f"Mechanism to implement: {card.mechanism} ({card.title}).\n"
            f"What it does: {card.summary.strip()[:1200]}\n"
            f"The current {module} variant is {champion}.\n"
            f"What the agent gets wrong: {brief.strip()[:1200] or 'unknown'}\n"
        )
        return [Message("system", system), Message("user", user)]

    def write(self, card: CardLike, champion: str, brief: str = "") -> VariantDraft:
        """Ask the model for the card's variant file.

        Raises:
            ReplyRefused: the reply is not one acceptable variant file (or the card's module
                is unknown).
            ModelError: the model could not reply.
        """
        module = str(card.module)
        if module not in MODULES:
            raise ReplyRefused(f"the card {str(card.id)[:40]} names no harness module")
        name = variant_name(card)
        if name in BUILTINS[module]:  # pragma: no cover - the prefix keeps them apart
            raise ReplyRefused(f"{name} is a built-in variant's name")
        reply = self.llm.complete(
            self.messages(card, champion, brief),
            temperature=0.0,
            seed=self.seed,
            max_tokens=self.max_tokens,
        )
        return VariantDraft(module, name, parse_variant_reply(reply.text, module))


__all__ = [
    "CardLike",
    "ModelError",
    "ModelMutator",
    "ReplyRefused",
    "VariantDraft",
    "parse_variant_reply",
    "variant_name",
]
