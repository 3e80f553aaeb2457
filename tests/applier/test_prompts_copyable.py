"""Issue 22: every prompt evolve ships shows a reply's shape without a copyable value.

A small model copies what a prompt shows: `"..."`, `<the lesson>`, `"ADD|MERGE|REVISE|SKIP"`,
`{...}`. The applier refuses such text (`evolve.applier._copied`) but every copy wastes the
model's call, so no prompt may show one. This scans every prompt evolve sends a model: the
template files of each package's `prompts/` folder, the default harness's `prompts/` as the
agent gets them (with `persona_world`'s API documentation), and the prompts written inline (the
agent's correction and its reply schema's description, the skill selector's request), for the
shapes the copy check refuses, wherever a model could take them as a value:

- a `<...>` token that is not a section the same prompt opens and closes (`<kept id>`,
  `<the lesson>`, `<an API name ...>`);
- a quoted value that is a placeholder (`"..."`, `"TODO"`, `"<id>"`), only the capitalized
  names the prompts give a reply's fields, alternatives (`"general|topic"`), an ellipsis or a
  template token or variable (`"<the app, e.g. $topic>"`);
- an ellipsis anywhere but as "more of the same" at the end of a list (`[ LINE, ... ]`, not
  valid JSON if copied): `{...}`, `- ...`, `c1, c2, ...)`;
- an API name no environment has (`app__api`): a copied one wastes the agent's turn.

A real worked example is allowed: echoed, the copy check recognises it as prompt text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from importlib import resources
from importlib.resources.abc import Traversable

import pytest

from evolve._text import is_placeholder
from evolve.agent._agent import ACTION_SCHEMA, BadReply, correction
from evolve.agent._prompt import build_system_prompt, read_prompt_files
from evolve.applier import _copied
from evolve.envs.persona_world._world import api_docs, tool_names
from evolve.skills._select import selection_prompt
from evolve.skills._skill import Skill
from evolve.workspace._init import harness_root

_QUOTED = re.compile(r'"([^"\n]*)"(\s*:)?')  # a quoted text, and the colon of a key
_LIST_END = re.compile(r",\s*(?:\.{3}|…)\s*[\]}]")  # `[ LINE, ... ]`: more of the same
_ELLIPSIS = re.compile(r"\.{3}|…")
_BRACKETED = re.compile(r":[ \t]*([\[{<]\s*[A-Za-z ]+\s*[\]}>])")  # `"skills": [ids]`
_API = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)*__[a-z0-9_]+\b")  # app__api
TOOLS = tool_names()  # persona_world's APIs (AppWorld's names have the same shape)
_ALTERNATIVES = re.compile(r"^\s*[A-Za-z_-]+(?:\s*\|\s*[A-Za-z_-]+)+\s*$")


def _files(folder: Traversable, name: str) -> Iterator[tuple[str, str]]:
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            yield from _files(entry, f"{name}/{entry.name}")
        elif entry.name.endswith(".md") and "/prompts/" in f"{name}/":
            yield f"{name}/{entry.name}", entry.read_text("utf-8")


def shipped_prompts() -> list[tuple[str, str]]:
    """(where, text) of every prompt evolve sends a model."""
    found = list(_files(resources.files("evolve"), "evolve"))
    # The default harness's prompt files, as the agent gets them (its sections added).
    files = read_prompt_files(harness_root() / "prompts")
    sent = build_system_prompt(files, api_docs=api_docs(), memory="", stats=["n"], skills="s")
    found.append(("harness prompts (" + ", ".join(f.path for f in files) + ")", sent))
    found.append(("agent correction", correction(BadReply("the reply is not JSON"), TOOLS)))
    found.append(("agent correction, no tools", correction(BadReply("no JSON"), [])))
    for key, value in ACTION_SCHEMA.schema["properties"].items():
        if "description" in value:  # the schema is shown to the model (or in its prompt)
            found.append((f"agent schema: {key}", json.dumps(value["description"])))
    skill = Skill(id="skill-1a2b3c4d5e", trigger="a venmo payment", text="Look up the payee.")
    for m in selection_prompt("Pay Bob $5 on venmo.", [skill], 3):
        found.append((f"skill selector ({m.role})", m.content))
    return found


def copyable(text: str) -> list[str]:
    """What in `text` a model could copy as a value, each with why."""
    found: list[str] = []
    for name in _API.findall(text):
        if name not in TOOLS:  # `app__api`: the shape of a name, not an API anyone has
            found.append(f"API name {name} that no environment has")
    fields = _copied.corpus().fields
    tags = {t.lower()[2:-1] for t in _copied._ANGLE.findall(text) if t.startswith("</")}
    for token in _copied._ANGLE.findall(text):
        if token.lower().strip("</>") not in tags:
            found.append(f"template token {token}")
    for value, key in _QUOTED.findall(text):
        if key:
            continue  # an object's key is the field's name, not a value
        names = re.findall(r"[A-Za-z]+", value)
        if (
            is_placeholder(value)
            or _copied._TODO.match(value)
            or (names and all(n in fields for n in names))
            or _ALTERNATIVES.match(value)
            or _ELLIPSIS.search(value)
            or _copied._ANGLE.search(value)
            or _copied._DOLLAR.search(value)
        ):
            found.append(f"placeholder value {value!r}")
    for value in _BRACKETED.findall(text):
        found.append(f"placeholder value {value}")
    for match in _ELLIPSIS.finditer(_LIST_END.sub(" ", re.sub(r'"[^"\n]*"', '""', text))):
        found.append(f"an ellipsis standing for a value (at {match.start()})")
    return found


PROMPTS = shipped_prompts()


def test_every_prompt_folder_and_inline_prompt_is_scanned() -> None:
    names = [name for name, _ in PROMPTS]
    for folder in ("updaters", "reflector", "skills"):
        assert any(n.startswith(f"evolve/{folder}/prompts/") for n in names), folder
    assert any(n.startswith("harness prompts (prompts/system.md") for n in names)
    assert len(names) >= 17, names


@pytest.mark.parametrize(("name", "text"), PROMPTS, ids=[n for n, _ in PROMPTS])
def test_no_prompt_shows_a_copyable_placeholder(name: str, text: str) -> None:
    assert copyable(text) == [], name


@pytest.mark.parametrize(
    "shape",
    ['{"lesson": "<the lesson>"}', '{"lesson": "..."}', '"verdict": "ADD|MERGE|REVISE|SKIP"',
     '{"tool": "x", "arguments": {...}}', "- ...", '"ids": ["<kept id>", ...]',
     '"topic": "<the app, e.g. $topic>"', '{"lesson": LESSON, "why": "TODO"}',
     '{"skills": [ids]}', '"tool": "app__api"', '"app__api name of the API to call"'],
)  # fmt: skip
def test_the_scan_finds_each_shape_main_showed(shape: str) -> None:
    assert copyable(shape), shape


def test_a_schema_with_named_fields_and_a_list_continuation_passes() -> None:
    shape = '{"operations": [ OPERATION, ... ], "tag": "helpful"}\n<task>$instruction</task>'
    assert copyable(shape) == []
