"""`section` and `without_sections` find a section by string search exactly where the regular
expression they used before finds it (`(?ms)^<tag>[ \\t]*\\n(.*?)^</tag>[ \\t]*$`)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.agent._prompt import _span, section, without_sections

TAGS = ("memory", "stats", "skills", "api_docs", "task")
PIECES = (
    "<memory>", "</memory>", "<stats>", "</stats>", "<skills>", "</skills>", "<task>",
    "</task>", "<api_docs>", "</api_docs>", "<memory >", "</memory", "memory>", "\n", "\n",
    "\n\n", " ", "\t", "\r", "x", "- a fact.", "<", ">", "/", "\u2028", "é",
)  # fmt: skip


def _old_span(prompt: str, tag: str) -> tuple[int, int, int, int] | None:
    match = re.search(rf"(?ms)^<{tag}>[ \t]*\n(.*?)^</{tag}>[ \t]*$", prompt)
    if match is None:
        return None
    return match.start(), match.start(1), match.end(1), match.end()


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.sampled_from(TAGS))
def test_a_section_is_where_the_regular_expression_finds_it(pieces: list[str], tag: str) -> None:
    prompt = "".join(pieces)
    assert _span(prompt, tag) == _old_span(prompt, tag)


def test_sections_of_a_prompt() -> None:
    prompt = (
        "Intro mentions <stats> inline.\n<memory>  \n- one\n- two\n</memory>\t\n"
        "<stats>\n</stats>\n<skills>\nno end\n"
    )
    assert section(prompt, "memory") == "- one\n- two"
    assert section(prompt, "stats") == ""
    assert section(prompt, "skills") is None
    assert without_sections(prompt, ("memory", "stats")) == without_sections(
        without_sections(prompt, ("memory",)), ("stats",)
    )
    for tag in ("memory", "stats", "skills"):
        assert _span(prompt, tag) == _old_span(prompt, tag)
