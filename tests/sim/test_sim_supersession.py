"""The sim's updater roles name what a proposal replaces, from what the prompt shows only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evolve.envs.persona_world import PersonaWorldEnv
from evolve.llm import JsonSchema, Message
from evolve.sim import SimLLM

REPO = Path(__file__).resolve().parents[2]
ENV = PersonaWorldEnv(REPO / "evalset")
COMPLAINT = "Set my Venmo payments to friends-only visibility."
STALE = "Keep all my Venmo payments private."
SMS = "Sign off every text message with a last line of a dash and my first name."


def _ask(schema: str, prompt: str, seed: int = 0) -> Any:
    llm = SimLLM(ENV, seed=seed)
    messages = [Message("system", "You maintain memory."), Message("user", prompt)]
    return json.loads(llm.complete(messages, json_schema=JsonSchema(schema, {}), seed=seed).text)


def _prompt(section: str, lines: list[str]) -> str:
    body = "\n".join(lines)
    return (
        f"<task>Pay Sam back.</task>\n<complaint>\n{COMPLAINT}\n</complaint>\n"
        f"<{section}>\n{body}\n</{section}>\n"
    )


@pytest.mark.parametrize("seed", range(6))
def test_ace_names_the_stale_bullet_whether_it_adds_or_modifies(seed: int) -> None:
    reply = _ask("ace_deltas", _prompt("bullets", [f"[ace-old] {STALE}", f"[ace-sms] {SMS}"]), seed)
    (op,) = reply["operations"]
    named = [op["id"]] if op["op"] == "modify" else op["replaces"]
    assert named == ["ace-old"] and "ace-sms" not in op.get("replaces", [])


def test_tepa_names_a_precedent_on_the_same_slot_under_any_key() -> None:
    shown = [f"[tepa-old] [other.venmo_privacy] {STALE}", f"[tepa-sms] [sms.signoff] {SMS}"]
    (entry,) = _ask("tepa_precedent", _prompt("precedents", shown))["precedents"]
    assert entry["replaces"] == ["tepa-old"]


def test_trace_names_the_check_on_the_same_argument() -> None:
    shown = [
        "[trace-old] When sending a Venmo payment, the visibility must equal 'private'.",
        "[trace-sms] When sending a text message, the message must end with '- Alex'.",
    ]
    (check,) = _ask("trace_checks", _prompt("checks", shown))["checks"]
    assert check["value"] == "friends" and check["replaces"] == ["trace-old"]


def test_reflexion_and_topl_name_the_stale_entry() -> None:
    reply = _ask("reflection", _prompt("reflections", [f"[r-old] {STALE}", f"[r-sms] {SMS}"]))
    assert reply["replaces"] == ["r-old"]
    pool = [f"[topl-old] {STALE} (alpha 5, beta 1)", f"[topl-sms] {SMS} (alpha 2, beta 1)"]
    (assertion,) = _ask("assertions", _prompt("pool", pool))["assertions"]
    assert assertion == {
        "text": COMPLAINT,
        "replaces": ["topl-old"],
        "subject": "payment visibility",
    }


def test_nothing_is_named_when_the_prompt_shows_nothing_on_the_slot() -> None:
    (assertion,) = _ask("assertions", _prompt("pool", [f"[topl-sms] {SMS}"]))["assertions"]
    assert assertion == {"text": COMPLAINT, "subject": "payment visibility"}  # names no entry
