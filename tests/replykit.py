"""Hypothesis strategies for model replies, and checks of what a workspace holds afterwards.

Every strategy draws `(reply, bad)`: `bad` is True when the reply was *built* to be unusable
(not JSON, nested too deep, a control character or lone surrogate in a string, a non-finite
or huge number, the wrong top-level shape, a missing required field). A bad reply must show up
in the logs as a failed turn or a refusal; the others may be used or refused.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from evolve._text import unsafe_char
from evolve.llm import JsonSchema, Message, MockLLM
from evolve.memory import dump_unit, parse_unit

Reply = tuple[str, bool]

# Characters that may never reach a unit, a file name or a commit.
NASTY = ["\x1f", "\x1e", "\x00", "\x1b", "\r", "\x7f", "\x85", "\u2028", "\ud800", "\udfff"]
PLACEHOLDERS = ["...", "", "   ", "…", "<bullet>", "TODO", "-", "[text]"]
SAFE = st.text(
    st.characters(categories=("L", "N", "P", "Zs"), exclude_characters="\u2028\u2029"),
    max_size=60,
)


@st.composite
def nasty_text(draw: st.DrawFn) -> str:
    """Ordinary text with one unsafe character somewhere in it."""
    base = draw(SAFE)
    at = draw(st.integers(0, len(base)))
    return base[:at] + draw(st.sampled_from(NASTY)) + base[at:]


def texts() -> st.SearchStrategy[tuple[str, bool]]:
    """A string for a field, and whether it makes the reply bad (an unsafe character)."""
    return st.one_of(
        SAFE.map(lambda s: (s, False)),
        st.sampled_from(PLACEHOLDERS).map(lambda s: (s, False)),
        st.sampled_from(
            [
                "Sign text messages with -A.",
                "Always send Venmo payments as private.",
                "Use the card ending 4242 for payments.",
                "x" * 400,
                "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t",
            ]
        ).map(lambda s: (s, False)),
        nasty_text().map(lambda s: (s, True)),
    )


JSON_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.floats(allow_nan=False), SAFE
)
ANY_JSON = st.recursive(
    JSON_LEAVES,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(SAFE, c, max_size=3),
    max_leaves=8,
)


def _dumps(draw: st.DrawFn, value: Any) -> str:
    text = json.dumps(value, ensure_ascii=draw(st.booleans()))
    wrap = draw(st.sampled_from(["plain", "plain", "fence", "prose"]))
    if wrap == "fence":
        return f"```json\n{text}\n```"
    if wrap == "prose":
        return f"Here is my answer:\n{text}\nThanks."
    return text


def _deep(inner: Any, depth: int) -> Any:
    for _ in range(depth):
        inner = [inner]
    return inner


@st.composite
def garbage(draw: st.DrawFn, wrap: Callable[[Any], Any]) -> str:
    """A reply built to be unusable; `wrap` puts a payload where a field belongs."""
    kind = draw(
        st.sampled_from(
            ["text", "truncated", "deep", "deep_field", "bigint", "nan", "scalar", "list"]
        )
    )
    if kind == "text":
        return draw(st.text(st.characters(exclude_categories=()), max_size=80).filter(_not_json))
    if kind == "truncated":
        whole = json.dumps(wrap("Sign texts with -A."))
        return whole[: draw(st.integers(1, len(whole) - 1))]
    if kind == "deep":
        depth = draw(st.sampled_from([17, 40, 1200, 5000, 100_000]))
        return "[" * depth + "]" * depth
    if kind == "deep_field":
        return json.dumps(wrap(_deep("x", draw(st.sampled_from([20, 300])))))
    if kind == "bigint":
        return json.dumps(wrap("n")).replace('"n"', "9" * 5000)
    if kind == "nan":
        return json.dumps(wrap("n")).replace(
            '"n"', draw(st.sampled_from(["NaN", "Infinity", "1e999"]))
        )
    if kind == "scalar":
        return json.dumps(draw(JSON_LEAVES))
    return json.dumps(draw(st.lists(ANY_JSON, max_size=3)))


def _not_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return "{" not in text and "[" not in text
    return False


# --- the agent ------------------------------------------------------------------------------

ARG_VALUES = st.one_of(
    texts().map(lambda t: t),
    st.sampled_from([5, -1, 0, 2.5, True, None, {}, [], ["a@b.c"], {"a": 1}]).map(
        lambda v: (v, False)
    ),
)


@st.composite
def agent_replies(draw: st.DrawFn, tools: Sequence[str]) -> Reply:
    """One agent reply: a call (well-formed or with wrong-typed or unsafe arguments) or garbage."""
    if draw(st.integers(0, 3)) == 0:
        return draw(garbage(lambda v: {"tool": tools[0], "arguments": {"query": v}})), True
    tool = draw(st.sampled_from([*tools, "app__api", "nope__nope", ""]))
    names = draw(
        st.lists(
            st.sampled_from(
                ["query", "phone_number", "message", "amount", "note", "title", "content",
                 "cc", "to", "access_token", "payment_card_id", "answer", "self", ""]
            ),
            max_size=4,
            unique=True,
        )
    )  # fmt: skip
    args: Any = {}
    bad = tool not in tools
    for name in names:
        value, nasty = draw(ARG_VALUES)
        args[name] = value
        bad = bad or nasty
    if draw(st.integers(0, 9)) == 0:
        args = draw(st.sampled_from([[], "x", 5]))
        bad = True
    return _dumps(draw, {"tool": tool, "arguments": args}), bad


# --- updaters -------------------------------------------------------------------------------


@st.composite
def from_schema(draw: st.DrawFn, schema: dict[str, Any]) -> tuple[Any, bool]:
    """A value shaped by `schema` (mostly valid), and whether an unsafe string went into it."""
    kind = schema.get("type")
    if "enum" in schema:
        return draw(st.sampled_from([*schema["enum"], "other"])), False
    if kind == "object":
        out: dict[str, Any] = {}
        bad = False
        for key, sub in schema.get("properties", {}).items():
            if key in schema.get("required", []) or draw(st.booleans()):
                out[key], nasty = draw(from_schema(sub))
                bad = bad or nasty
        return out, bad
    if kind == "array":
        items = draw(st.lists(from_schema(schema.get("items", {})), max_size=3))
        return [v for v, _ in items], any(b for _, b in items)
    if kind == "string" or not kind:
        return draw(texts())
    return draw(st.sampled_from([1, 2.5, "x", None])), False


@st.composite
def updater_replies(draw: st.DrawFn, schema: JsonSchema) -> Reply:
    """One updater reply for a recipe's schema: well-shaped, mutated, or garbage."""
    required = schema.schema.get("required", [])

    def wrap(v: Any) -> Any:
        return {required[0]: [v]} if required else {"x": v}

    roll = draw(st.integers(0, 9))
    if roll <= 2:
        return draw(garbage(wrap)), True
    value, bad = draw(from_schema(schema.schema))
    if roll == 3 and required:
        value.pop(required[0], None)  # a missing required field
        value["ops"] = []
        bad = True
    elif roll == 4 and required:
        value[required[0]] = draw(st.sampled_from([5, {"a": 1}, None, True]))
        bad = True
    return _dumps(draw, value), bad


# --- the reflector --------------------------------------------------------------------------

PATHS = st.sampled_from(
    [
        "prompts/system.md",
        "prompts/tools.md",
        "prompts/new-note.md",
        "prompts/x.txt",
        "../escape.md",
        "evalset/splits.md",
        "evolve.yaml",
        ".git/config",
        "/etc/passwd",
        "prompts/a\x1fb.md",
        "prompts/\ud800.md",
        "prompts/sub/deeper.md",
        "memory/alex/u.md",
    ]
)


@st.composite
def reflector_replies(draw: st.DrawFn) -> Reply:
    """One reflector reply: guidance, edits and parameters, mutated, or garbage."""
    roll = draw(st.integers(0, 9))
    if roll <= 2:
        return draw(garbage(lambda v: {"guidance": [v]})), True
    value: dict[str, Any] = {}
    bad = False
    if draw(st.booleans()):
        lines = draw(st.lists(texts(), max_size=3))
        value["guidance"] = [t for t, _ in lines]
        bad = bad or any(b for _, b in lines)
    if draw(st.booleans()):
        edits = []
        for _ in range(draw(st.integers(0, 2))):
            content, nasty = draw(texts())
            edits.append({"path": draw(PATHS), "content": f"# Prompt\n{content}\n"})
            bad = bad or nasty
        value["edits"] = edits
    if draw(st.booleans()):
        value["parameters"] = {
            "agent.max_turns": draw(st.sampled_from([4, 12, 30, 31, 2.5, "9", None]))
        }
    if roll == 3:
        value = {"guidance": draw(st.sampled_from(["one string", 5, {"a": 1}]))}
        bad = True
    elif roll == 4:
        value = {"edits": draw(st.sampled_from([{"path": "p"}, [5], [{"path": 5}], "x"]))}
        bad = True
    elif roll == 5:
        value = {"thoughts": "nothing to change"}
        bad = True
    return _dumps(draw, value), bad


# --- serving replies and checking the workspace ---------------------------------------------


class Script:
    """Serves drawn replies in order, recording which ones were served; repeats `fallback`."""

    def __init__(self, replies: Sequence[Reply], fallback: str) -> None:
        self.replies = list(replies)
        self.fallback = fallback
        self.served: list[Reply] = []
        self._it: Iterator[Reply] = iter(self.replies)

    def __call__(self, messages: Sequence[Message], schema: JsonSchema | None) -> str:
        reply = next(self._it, (self.fallback, False))
        self.served.append(reply)
        return reply[0]

    def llm(self, name: str = "mock") -> MockLLM:
        return MockLLM(self, name=name)


def _git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, check=True).stdout


def assert_workspace_sound(root: Path) -> None:
    """No malformed unit, no unsafe character in any tracked file or commit, and git's log
    (which evolve frames with \\x1f/\\x1e) is intact."""
    for path in sorted((root / "memory").rglob("*.md")):
        raw = path.read_text("utf-8")
        rel = path.relative_to(root).as_posix()
        unit = parse_unit(rel, raw)  # raises MalformedUnit
        if raw.startswith("---\n"):
            assert dump_unit(unit) == raw, rel
        assert unsafe_char(raw) is None, rel
    for path in sorted((root / "prompts").rglob("*")):
        assert unsafe_char(path.name) is None
        if path.is_file():
            assert unsafe_char(path.read_bytes().decode("utf-8")) is None, path
    log = _git(root, "log", "--all", "--format=%H%n%B").decode("utf-8")
    assert unsafe_char(log) is None
    names = _git(root, "log", "--all", "--name-only", "--format=").decode("utf-8")
    assert unsafe_char(names) is None


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


SECRETISH = re.compile(r"sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t")
